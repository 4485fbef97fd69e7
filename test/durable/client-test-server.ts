import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { InvocationContext } from "@azure/functions";
import * as df from "durable-functions";
import {
  type DurableApiHandler,
  durableBuiltinRoutes,
} from "../../packages/devhost/src/durable/client-api.js";
import type { DurableClientInputData } from "../../packages/devhost/src/durable/client-binding.js";
import { underPrefix } from "../../packages/devhost/src/http/server.js";

export interface SeenRequest {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A real node:http server on a free port serving the durable API handler through `durableBuiltinRoutes` — the
 * entry the dev host mounts on its own server (packages/devhost/src/durable/runtime.ts), fed as packages/devhost/src/http/server.ts
 * feeds it (headers joined, the whole body, a signal aborted when the client goes away). It records every request.
 */
export async function serveDurableApi(
  makeHandler: (baseUrl: string) => DurableApiHandler,
): Promise<{ baseUrl: string; seen: SeenRequest[]; close: () => Promise<void> }> {
  const seen: SeenRequest[] = [];
  let routes: ReturnType<typeof durableBuiltinRoutes> | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
      const body = Buffer.concat(chunks);
      seen.push({
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.search,
        headers: req.headers,
        body: body.toString("utf8"),
      });
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
      }
      const gone = new AbortController();
      res.on("close", () => gone.abort());
      const mine =
        routes !== undefined && underPrefix(url.pathname, routes.prefix) && (routes.enabled?.() ?? true);
      const answer = mine
        ? await routes?.handle({ method: req.method ?? "GET", url, headers, body, signal: gone.signal })
        : undefined;
      res.writeHead(answer?.status ?? 404, answer?.headers ?? {});
      res.end(answer?.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  routes = durableBuiltinRoutes(makeHandler(baseUrl));
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

/** The real durable-functions DurableClient, as df.getClient builds it from the durableClient input's binding data. */
export function clientFor(binding: DurableClientInputData): df.DurableClient {
  const input = df.input.durableClient();
  const context = new InvocationContext({ functionName: "starter", options: { extraInputs: [input] } });
  context.extraInputs.set(input, binding);
  return df.getClient(context);
}
