import { type Agent, request as httpRequest } from "node:http";

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** How long the request took (ms, performance.now): for benches, never judged by a test. */
  ms: number;
}

/**
 * One HTTP request on `agent` (keep-alive sockets, a bounded number of them: requests beyond it queue client-side,
 * not in the server's listen backlog), a JSON body when `body` is given; resolves with the whole answer.
 */
export function httpCall(
  agent: Agent,
  method: string,
  url: string,
  body?: unknown,
  options: { timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  const started = performance.now();
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method,
        agent,
        headers: payload ? { "content-type": "application/json", "content-length": payload.length } : {},
        ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString("utf8"),
            ms: performance.now() - started,
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${url}: no answer in ${options.timeoutMs} ms`)));
    req.on("error", reject);
    req.end(payload);
  });
}
