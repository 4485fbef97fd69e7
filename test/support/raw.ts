import { masterKeyHeaders, pathSegments, signedResource } from "../../packages/emulator/src/auth.js";

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
  const signed = signedResource(pathSegments(path));
  const resource = { type: options.resourceType ?? signed.type, id: options.resourceId ?? signed.id };
  const res = await fetch(new URL(path.replace(/^\//, ""), endpoint), {
    method,
    headers: {
      ...masterKeyHeaders(key, method, path, resource),
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

/** `rawRequest` to the emulator `emulator()` gives at call time (tests start theirs in a `beforeAll`). */
export function rawTo(
  emulator: () => { endpoint: string; key: string },
): (
  method: string,
  path: string,
  options?: Parameters<typeof rawRequest>[4],
) => ReturnType<typeof rawRequest> {
  return (method, path, options = {}) =>
    rawRequest(emulator().endpoint, emulator().key, method, path, options);
}
