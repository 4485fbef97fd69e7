/**
 * Child process for bench/changefeed.bench.ts, started with `fork` (so `node --import tsx` plus an IPC
 * channel). Two roles:
 *
 *   node --import tsx bench/changefeed.child.ts emulator
 *     Runs the embedded emulator (in memory, 127.0.0.1, free port, no throttling) so the server has an event
 *     loop of its own. Answers {type:"stats"} with the RU meter, HTTP requests by route and its CPU time.
 *
 *   node --import tsx bench/changefeed.child.ts host '<HostConfig JSON>'
 *     Runs ONE change feed processor host with its own CosmosClient. The handler records, per document,
 *     [id, writtenAt, handledAt] per document and sends them to the parent before returning.
 *     SIGTERM → processor.stop() (graceful, with handoff) → {type:"stopped"} → exit. SIGKILL is a crash.
 *
 * Nothing here measures: the parent does (it owns the clock of the scenario and the lease-container polls).
 */
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";
import { pathToFileURL } from "node:url";
import { CosmosClient } from "@azure/cosmos";
import { startEmulator } from "@cosmos-feed/emulator";

/** BENCH_PROCESSOR_MODULE=/abs/path/processor.ts runs the hosts on another build of the processor (A/B a fix). */
type ProcessorModule = typeof import("@cosmos-feed/changefeed");
const processorModule: ProcessorModule = process.env.BENCH_PROCESSOR_MODULE
  ? ((await import(pathToFileURL(process.env.BENCH_PROCESSOR_MODULE).href)) as ProcessorModule)
  : await import("@cosmos-feed/changefeed");
const { createChangeFeedProcessor } = processorModule;

export interface HostConfig {
  endpoint: string;
  key: string;
  database: string;
  monitored: string;
  leases: string;
  instanceName: string;
  leaseRenewInterval: number;
  leaseAcquireInterval: number;
  leaseExpirationInterval: number;
  leaseWatchInterval: number;
  feedPollDelay: number;
}

/** One handled document: [id, writtenAt (ms epoch), handledAt (ms epoch)]. */
export type HandledRow = [id: string, writtenAt: number, handledAt: number];

export type ToParent =
  | { type: "ready"; endpoint: string; key: string }
  | {
      type: "stats";
      id: number;
      /** The emulator's RU meter: `{ "db/container": { kind: {count, ru, throttled} } }`. */
      meter: Record<string, Record<string, { count: number; ru: number; throttled: number }>>;
      /** HTTP requests received, keyed `METHOD shape` with database and document ids replaced by `x`. */
      requests: Record<string, number>;
      cpuMs: number;
    }
  | { type: "host-ready"; instanceName: string; owned: string[] }
  | { type: "handled"; rows: HandledRow[] }
  | { type: "host-error"; message: string }
  | {
      type: "lease-event";
      event: "acquired" | "released" | "lost";
      token: string;
      reason?: string;
      at: number;
    }
  | { type: "stopped"; stopMs: number };

export type ToChild = { type: "stats"; id: number } | { type: "close" };

function send(msg: ToParent): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(msg, undefined, {}, () => resolve());
  });
}

/** `/dbs/bench/colls/c1/docs/abc?x` → `/dbs/x/colls/c1/docs/x`: the container id is kept, other ids not. */
function routeShape(req: IncomingMessage): string {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  const parts = (q < 0 ? url : url.slice(0, q)).split("/").filter((s) => s.length > 0);
  const shaped = parts.map((p, i) => (i % 2 === 1 && parts[i - 1] !== "colls" ? "x" : p));
  let tag = "";
  if (req.headers["a-im"]) tag = " [changefeed]";
  else if (req.headers["x-ms-cosmos-is-query-plan-request"]) tag = " [queryplan]";
  else if (req.headers["x-ms-documentdb-isquery"] || req.headers["content-type"]?.includes("query+json"))
    tag = " [query]";
  return `${req.method ?? "?"} /${shaped.join("/")}${tag}`;
}

async function runEmulator(): Promise<void> {
  const requests: Record<string, number> = {};
  subscribe("http.server.request.start", (message) => {
    const { request } = message as { request: IncomingMessage };
    const key = routeShape(request);
    requests[key] = (requests[key] ?? 0) + 1;
  });
  // No provisioned throughput on any container and enforcement off: nothing is ever throttled.
  const emu = await startEmulator({ port: 0, host: "127.0.0.1", enforceThroughput: false });
  process.on("message", (msg: ToChild) => {
    if (msg.type === "stats") {
      const cpu = process.cpuUsage();
      void send({
        type: "stats",
        id: msg.id,
        meter: emu.meter.snapshot() as Record<
          string,
          Record<string, { count: number; ru: number; throttled: number }>
        >,
        requests: { ...requests },
        cpuMs: (cpu.user + cpu.system) / 1000,
      });
    } else if (msg.type === "close") {
      void emu.close().then(() => process.exit(0));
    }
  });
  process.on("disconnect", () => process.exit(0));
  await send({ type: "ready", endpoint: emu.endpoint, key: emu.key });
}

interface HostDoc {
  id: string;
  writtenAt?: number;
}

async function runHost(config: HostConfig): Promise<void> {
  const client = new CosmosClient({ endpoint: config.endpoint, key: config.key });
  const db = client.database(config.database);
  const processor = createChangeFeedProcessor<HostDoc>(
    {
      monitoredContainer: db.container(config.monitored),
      leaseContainer: db.container(config.leases),
      instanceName: config.instanceName,
      leaseRenewInterval: config.leaseRenewInterval,
      leaseAcquireInterval: config.leaseAcquireInterval,
      leaseExpirationInterval: config.leaseExpirationInterval,
      leaseWatchInterval: config.leaseWatchInterval,
      feedPollDelay: config.feedPollDelay,
      // Everything written after the bench created the containers must be seen.
      startFromBeginning: true,
    },
    async (docs) => {
      const now = Date.now();
      // Reported before the handler returns (so before the checkpoint): a batch this host checkpointed is
      // never lost from the parent's view by a kill -9 right after.
      await send({ type: "handled", rows: docs.map((d): HandledRow => [d.id, d.writtenAt ?? 0, now]) });
    },
  );
  processor.on("error", (e) => {
    void send({ type: "host-error", message: String((e as Error)?.message ?? e) });
  });
  processor.on(
    "acquired",
    (token) => void send({ type: "lease-event", event: "acquired", token, at: Date.now() }),
  );
  processor.on(
    "released",
    (token) => void send({ type: "lease-event", event: "released", token, at: Date.now() }),
  );
  processor.on("lost", (token, reason) => {
    void send({ type: "lease-event", event: "lost", token, reason, at: Date.now() });
  });
  let stopping = false;
  process.on("SIGTERM", () => {
    if (stopping) return;
    stopping = true;
    const t0 = Date.now();
    void processor
      .stop()
      .then(async () => {
        const stopMs = Date.now() - t0;
        await send({ type: "stopped", stopMs });
        client.dispose();
        process.exit(0);
      })
      .catch((e: unknown) => {
        console.error(e);
        process.exit(1);
      });
  });
  process.on("disconnect", () => process.exit(0));
  await processor.start();
  await send({ type: "host-ready", instanceName: config.instanceName, owned: processor.ownedLeaseTokens() });
}

const role = process.argv[2];
if (role === "emulator") {
  await runEmulator();
} else if (role === "host") {
  await runHost(JSON.parse(process.argv[3] ?? "{}") as HostConfig);
} else {
  console.error("usage: changefeed.child.ts emulator | host '<json>'");
  process.exit(2);
}
