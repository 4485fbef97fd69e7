import { MasterKeyAuth } from "../../src/emulator/auth.js";

/** A signed raw HTTP request to the emulator (for what the SDK does not expose). */
export async function rawRequest(
  endpoint: string,
  key: string,
  method: string,
  path: string,
  options: {
    headers?: Record<string, string>;
    body?: unknown;
    resourceType?: string;
    resourceId?: string;
  } = {},
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const segments = path.split("/").filter(Boolean);
  const n = segments.length;
  const type = options.resourceType ?? (n === 0 ? "" : n % 2 === 0 ? segments[n - 2] : segments[n - 1]);
  const id =
    options.resourceId ??
    (n === 0 ? "" : n % 2 === 0 ? segments.join("/") : segments.slice(0, n - 1).join("/"));
  const date = new Date().toUTCString();
  const sig = new MasterKeyAuth(key).sign(method, type, id, date);
  const res = await fetch(new URL(path.replace(/^\//, ""), endpoint), {
    method,
    headers: {
      authorization: encodeURIComponent(`type=master&ver=1.0&sig=${sig}`),
      "x-ms-date": date,
      "x-ms-version": "2020-07-15",
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
      ...options.headers,
    },
    body:
      options.body === undefined
        ? undefined
        : typeof options.body === "string" || options.body instanceof Uint8Array
          ? options.body
          : JSON.stringify(options.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    // keep text
  }
  return { status: res.status, headers: res.headers, body };
}
