import type { ServerResponse } from "node:http";

/** An answer without a body (the host's shape for a 404, an unhandled failure's 500 …). */
export function sendEmpty(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-length": "0" });
  res.end();
}

/**
 * A refusal by the front door (Host, cross-site, body size, throttle): JSON `{code, message}` saying what was refused
 * and what to change. Node leaves the body out for HEAD.
 */
export function sendProblem(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ code, message });
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(body);
}
