import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type { Container } from "@azure/cosmos";
import { InvocationContext } from "@azure/functions";
import * as df from "durable-functions";
import {
  createDurableApiHandler,
  durableBuiltinRoutes,
} from "../../packages/devhost/src/durable/client-api.js";
import {
  durableClientInputData,
  ensureWebsiteHostname,
} from "../../packages/devhost/src/durable/client-binding.js";
import { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";

const require = createRequire(import.meta.url);
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (f: unknown) => (trigger: unknown, ctx: InvocationContext) => Promise<unknown>;
};

export interface InProcessTaskHub {
  hub: CosmosTaskHub;
  baseUrl: string;
  /** An InvocationContext whose durable client input points at this hub (what df.getClient reads). */
  context(): InvocationContext;
  stop(): Promise<void>;
}

/**
 * A Cosmos DB task hub and the extension's HTTP API on a real socket, in the test process, running the given
 * orchestrator generators and activity handlers directly (no dev host): for calling a function's handler with a
 * working durable client, as the Functions host would provide one.
 */
export async function startInProcessTaskHub(options: {
  container: Container;
  leaseContainer: Container;
  hubName?: string;
  orchestrators: Record<string, unknown>;
  activities: Record<string, (input: unknown, context: InvocationContext) => unknown>;
}): Promise<InProcessTaskHub> {
  const hubName = options.hubName ?? "TestHub";
  const handlers = new Map(Object.entries(options.orchestrators).map(([n, g]) => [n, createOrchestrator(g)]));
  const hub = new CosmosTaskHub({
    container: options.container,
    leaseContainer: options.leaseContainer,
    hubName,
    feedPollDelayMs: 50,
    timerScanIntervalMs: 200,
    invokeOrchestrator: async (name, input) => {
      const h = handlers.get(name);
      if (!h) return { thrown: new Error(`no orchestrator '${name}'`) };
      try {
        const ctx = new InvocationContext({ functionName: name });
        return { returned: JSON.parse(JSON.stringify(await h(input, ctx))) };
      } catch (e) {
        return { thrown: e };
      }
    },
    invokeActivity: async (item) => {
      const fn = options.activities[item.name];
      try {
        if (!fn) throw new Error(`no activity '${item.name}'`);
        const value = await fn(
          item.input === null ? undefined : JSON.parse(item.input),
          new InvocationContext({ functionName: item.name }),
        );
        return { result: JSON.stringify(value ?? null) };
      } catch (e) {
        return { failure: { ErrorType: "Error", ErrorMessage: (e as Error).message } };
      }
    },
  });
  await hub.start();
  let baseUrl = "";
  const api = durableBuiltinRoutes(
    createDurableApiHandler({
      hub,
      baseUrl: () => baseUrl,
      isOrchestrator: (n) => handlers.has(n),
    }),
  );
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      api
        .handle({
          method: req.method ?? "GET",
          url: new URL(req.url ?? "/", baseUrl),
          headers,
          body: Buffer.concat(chunks),
        })
        .then((out) => {
          res.writeHead(out?.status ?? 404, out?.headers ?? {});
          res.end(out?.body);
        })
        .catch((e: unknown) => {
          res.writeHead(500);
          res.end(String(e));
        });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ensureWebsiteHostname(process.env, baseUrl);
  const clientInput = df.input.durableClient();
  return {
    hub,
    baseUrl,
    context: () => {
      const ctx = new InvocationContext({ options: { extraInputs: [clientInput] } });
      ctx.extraInputs.set(clientInput, durableClientInputData({ baseUrl, hubName }));
      return ctx;
    },
    stop: async () => {
      await hub.stop();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
