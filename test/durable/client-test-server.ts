import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { DurableApiHandler } from "../../src/devhost/durable/client-api.js";

export interface SeenRequest {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A real node:http server on a free port serving the durable API handler; it records every request it saw. */
export async function serveDurableApi(
  makeHandler: (baseUrl: string) => DurableApiHandler,
): Promise<{ baseUrl: string; seen: SeenRequest[]; close: () => Promise<void> }> {
  const seen: SeenRequest[] = [];
  let handler: DurableApiHandler | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const url = new URL(req.url ?? "/", "http://placeholder");
      const body = Buffer.concat(chunks);
      seen.push({
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.search,
        headers: req.headers,
        body: body.toString("utf8"),
      });
      const abort = new AbortController();
      res.on("close", () => abort.abort());
      const out = handler?.({
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
        signal: abort.signal,
      });
      const answer = out === undefined ? { status: 404, headers: {}, body: "" } : await out;
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  handler = makeHandler(baseUrl);
  return {
    baseUrl,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
