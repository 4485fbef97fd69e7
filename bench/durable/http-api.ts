/**
 * The extension's HTTP API as the dev host serves it (createDurableApiHandler from client-api.ts) on a bare
 * node:http server in the bench process — beside the hub, as in the dev host — so starts go through the same
 * handler a durable client's `startNew` calls: parse, validate, hub.startNew, the 202 with its links.
 */
import { once } from "node:events";
import { Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TaskHubClient } from "@cosmos-feed/devhost/durable";
import { createDurableApiHandler, DURABLE_WEBHOOK_PATH } from "@cosmos-feed/devhost/durable";
import { httpCall } from "../lib/http-call.js";

export interface ClientApi {
  /** POST orchestrators/{name}/{instanceId} with a JSON input; resolves with the status code and performance.now() of the answer. */
  start(name: string, instanceId: string, input: unknown): Promise<{ status: number; answeredAt: number }>;
  close(): Promise<void>;
}

export async function serveClientApi(hub: TaskHubClient): Promise<ClientApi> {
  let url = "";
  const handler = createDurableApiHandler({ hub, baseUrl: () => url });
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const u = new URL(req.url ?? "/", url);
      const answer = handler({
        method: req.method ?? "GET",
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      if (!answer) {
        res.writeHead(404).end();
        return;
      }
      void answer.then((a) => res.writeHead(a.status, a.headers).end(a.body));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Keep-alive, no socket cap: every start of a burst is on the wire at once.
  const agent = new Agent({ keepAlive: true });
  return {
    async start(name, instanceId, input) {
      const path = `${DURABLE_WEBHOOK_PATH}/orchestrators/${encodeURIComponent(name)}/${encodeURIComponent(instanceId)}`;
      const a = await httpCall(agent, "POST", `${url}${path}`, input);
      return { status: a.status, answeredAt: performance.now() };
    },
    async close() {
      agent.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
