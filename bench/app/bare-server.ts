/**
 * The bench's baseline server: node:http → an exported handler, with the same @azure/functions HttpRequest,
 * InvocationContext and HttpResponse the dev host's invocation model builds, and nothing else (no host, no
 * worker, no logs). Used in the bench process by phase 1 and in a child process of its own by phase 5.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type * as Functions from "@azure/functions";

// @azure/functions is a CommonJS bundle whose named exports ESM cannot see: the same instance the app loads.
const { HttpRequest, HttpResponse, InvocationContext } = createRequire(import.meta.url)(
  "@azure/functions",
) as typeof Functions;

export type Handler = (req: Functions.HttpRequest, ctx: Functions.InvocationContext) => Promise<unknown>;

/** A path pattern (its named groups are the route parameters) and the handler that answers it. */
export interface BareRoute {
  pattern: RegExp;
  handler: Handler;
}

/** Listens on 127.0.0.1 (a free port); a path no route matches is answered 404. */
export async function bareServer(routes: readonly BareRoute[]): Promise<{ url: string; server: Server }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const url = `http://${req.headers.host}${req.url}`;
      const path = new URL(url).pathname;
      let match: RegExpExecArray | null = null;
      const route = routes.find((r) => {
        match = r.pattern.exec(path);
        return match !== null;
      });
      if (!route) {
        res.writeHead(404).end();
        return;
      }
      const m = match as RegExpExecArray | null;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      const request = new HttpRequest({
        method: req.method ?? "GET",
        url,
        headers,
        params: { ...(m?.groups ?? {}) },
        ...(chunks.length ? { body: { bytes: Buffer.concat(chunks) } } : {}),
      });
      const out = new HttpResponse((await route.handler(request, new InvocationContext())) as object);
      const body = Buffer.from(await out.arrayBuffer());
      res.writeHead(out.status, Object.fromEntries(out.headers.entries()));
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
