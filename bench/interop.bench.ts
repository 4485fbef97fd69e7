/**
 * Ours vs Microsoft's .NET Change Feed Processor (Microsoft.Azure.Cosmos 3.64.0, the Functions trigger's), side by
 * side in one run on one emulator (HTTPS, throttling off), each fleet on its own containers:
 *   1. drain: documents/s for one host to deliver a backlog (BENCH_INTEROP_DOCS, 1 KB, 8 ranges, 100 per page);
 *   2. idle: lease-container requests per hour at 4 hosts × 32 leases, Microsoft's defaults ÷ BENCH_INTEROP_SCALE,
 *      counted by the emulator's meter over BENCH_INTEROP_WINDOW_S, per default-interval hour — and .NET's figure
 *      against the cost model `cosmos-feed tune` uses (packages/changefeed/src/tuning/model.ts), goal ±15 %;
 *   3. failover: 2 hosts × 8 leases, kill -9 one (ours: abandon(), which stops without releasing): ms until the
 *      survivor owns every lease (scaled intervals; also in lease-expiration intervals);
 *   4. hand-off: the same with a graceful stop: ms from stop to every lease owned by the survivor.
 *
 *   npm run bench:interop   → bench/results/interop.json (needs the .NET SDK; builds the harness first)
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Container, Database } from "@azure/cosmos";
import { tune } from "@cosmos-feed/changefeed/tuning";
import { DotnetProcessorHost } from "./lib/dotnet.js";
import { NodeProcessorHost, ownership, readLeases, startTlsEmulator, type TlsEmulator } from "./lib/fleet.js";
import { git } from "./lib/git.js";
import { envNumber, machineFacts, round1, round2 } from "./lib/stats.js";
import { tuningDefaults } from "./lib/tuning-defaults.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const RESULTS_FILE = join(ROOT, "bench", "results", "interop.json");
const DOCS = envNumber("BENCH_INTEROP_DOCS", 20_000);
const SCALE = envNumber("BENCH_INTEROP_SCALE", 10);
const WINDOW_S = envNumber("BENCH_INTEROP_WINDOW_S", 30);
const HOUR = 3_600_000;

/** Microsoft's defaults (ms): the trigger's and both processors'. */
const DEFAULTS = {
  feedPollDelay: 5_000,
  leaseAcquireInterval: 13_000,
  leaseExpirationInterval: 60_000,
  leaseRenewInterval: 17_000,
};
const scaled = {
  feedPollDelay: DEFAULTS.feedPollDelay / SCALE,
  leaseAcquireInterval: DEFAULTS.leaseAcquireInterval / SCALE,
  leaseExpirationInterval: DEFAULTS.leaseExpirationInterval / SCALE,
  leaseRenewInterval: DEFAULTS.leaseRenewInterval / SCALE,
};
/** Ours scales its own timing knobs too (watch slot 1 s, checkpoint delay 1 s), as bench:tuning does. */
const oursScaled = { ...scaled, leaseWatchInterval: 1_000 / SCALE, maxCheckpointDelay: 1_000 / SCALE };

type Kind = "ours" | "dotnet";
interface Host {
  name: string;
  delivered(): number;
  /** When the first and the latest batch was handled (Date.now(); .NET: when its line arrived). */
  batchTimes(): { first: number; last: number };
  stop(): Promise<void>;
  crash(): Promise<void>;
}

let t: TlsEmulator;
let db: Database;
let seq = 0;

async function containers(ranges: number): Promise<{ monitored: Container; leases: Container }> {
  seq++;
  const { container: monitored } = await db.containers.create(
    { id: `data-${seq}`, partitionKey: { paths: ["/pk"], version: 2 } },
    { initialHeaders: { "x-ms-emulator-partition-count": String(ranges) } },
  );
  const { container: leases } = await db.containers.create({
    id: `leases-${seq}`,
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  return { monitored, leases };
}

async function startHost(
  kind: Kind,
  name: string,
  c: { monitored: Container; leases: Container },
  startFromBeginning: boolean,
): Promise<Host> {
  if (kind === "dotnet") {
    const h = new DotnetProcessorHost(t.dotnet(), {
      database: db.id,
      monitored: c.monitored.id,
      leases: c.leases.id,
      processorName: "bench",
      instanceName: name,
      startFromBeginning,
      maxItems: 100,
      reportBatches: true,
      ...scaled,
    });
    await until(`${name} started`, () => h.lines.some((l) => l.ev === "started" || l.ev === "fatal"));
    if (h.events("fatal").length > 0) throw new Error(h.diagnostics());
    return {
      name,
      delivered: () => h.events("batch").reduce((n, b) => n + Number(b.count), 0),
      batchTimes: () => {
        const batches = h.events("batch");
        return { first: Number(batches[0]?.receivedAt ?? 0), last: Number(batches.at(-1)?.receivedAt ?? 0) };
      },
      stop: () => h.stop(),
      crash: () => h.kill(),
    };
  }
  const client = t.client();
  const h = new NodeProcessorHost(
    name,
    client.database(db.id).container(c.monitored.id),
    client.database(db.id).container(c.leases.id),
    {
      processorName: "bench",
      startFromBeginning,
      maxItems: 100,
      intervals: oursScaled,
      countOnly: true,
    },
  );
  await h.start();
  return {
    name,
    delivered: () => h.delivered,
    batchTimes: () => ({ first: h.firstBatchAt, last: h.lastBatchAt }),
    stop: () => h.stop(),
    crash: () => h.crash(),
  };
}

async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  everyMs = 20,
  limitMs = 300_000,
): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function owners(leases: Container): Promise<Map<string, number>> {
  return ownership(await readLeases(leases, "bench"));
}

async function drain(
  kind: Kind,
): Promise<{ documents: number; seconds: number; docsPerSecond: number; fromStartSeconds: number }> {
  const c = await containers(8);
  const pad = "x".repeat(900);
  for (let i = 0; i < DOCS; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, DOCS - i) }, (_, j) =>
        c.monitored.items.create({ id: `d${i + j}`, pk: `k${(i + j) % 1000}`, pad }),
      ),
    );
  }
  const h = await startHost(kind, `${kind}-drain`, c, true);
  const started = Date.now();
  await until(`${kind} drained ${DOCS}`, () => h.delivered() >= DOCS);
  // The rate: from the first batch handled to the last (bootstrap, lease acquisition and a .NET process's start-up
  // excluded on both sides); from the start call returning as well, for reference.
  const { first, last } = h.batchTimes();
  const seconds = (last - first) / 1000;
  await h.stop();
  return {
    documents: h.delivered(),
    seconds: round2(seconds),
    docsPerSecond: Math.round(DOCS / seconds),
    fromStartSeconds: round2((last - started) / 1000),
  };
}

async function idle(
  kind: Kind,
): Promise<{ requests: Record<string, number>; requestsPerHour: number; documentRequestsPerHour: number }> {
  const c = await containers(32);
  const hosts: Host[] = [];
  for (let i = 0; i < 4; i++) hosts.push(await startHost(kind, `${kind}-idle-${i}`, c, false));
  await until(
    `${kind}: 4 hosts × 8 leases`,
    async () => {
      const o = await owners(c.leases);
      return o.size === 4 && [...o.values()].every((n) => n === 8);
    },
    200,
  );
  // Settle (one expiration interval), then count over the window.
  await new Promise((r) => setTimeout(r, scaled.leaseExpirationInterval));
  const meterName = `${db.id}/${c.leases.id}`;
  const before = t.emulator.meter.snapshot()[meterName] ?? {};
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  const after = t.emulator.meter.snapshot()[meterName] ?? {};
  await Promise.all(hosts.map((h) => h.stop()));
  const requests: Record<string, number> = {};
  for (const kindName of Object.keys(after) as (keyof typeof after)[]) {
    const n = (after[kindName]?.count ?? 0) - (before[kindName]?.count ?? 0);
    if (n !== 0) requests[kindName] = n;
  }
  const perHour = (n: number) => Math.round((n * HOUR) / (WINDOW_S * 1000 * SCALE));
  const all = Object.values(requests).reduce((a, b) => a + b, 0);
  // Query-plan requests (.NET asks the gateway for a plan before each all-leases query) are metered as metadata.
  return {
    requests,
    requestsPerHour: perHour(all),
    documentRequestsPerHour: perHour(all - (requests.metadata ?? 0)),
  };
}

/** Two hosts × 8 leases; one leaves (crash or graceful stop): ms until the other owns all 8. */
async function takeover(kind: Kind, how: "crash" | "stop"): Promise<number> {
  const c = await containers(8);
  const a = await startHost(kind, `${kind}-${how}-a`, c, false);
  const b = await startHost(kind, `${kind}-${how}-b`, c, false);
  await until(
    `${kind}: 2 × 4 leases`,
    async () => {
      const o = await owners(c.leases);
      return o.get(a.name) === 4 && o.get(b.name) === 4;
    },
    100,
  );
  const started = Date.now();
  const leaving = how === "crash" ? a.crash() : a.stop();
  await until(
    `${kind}: ${b.name} owns all 8 after the ${how}`,
    async () => (await owners(c.leases)).get(b.name) === 8,
    20,
  );
  const ms = Date.now() - started;
  await leaving;
  await b.stop();
  return ms;
}

async function main(): Promise<void> {
  const built = spawnSync("npm", ["run", "interop:build"], { cwd: ROOT, stdio: "inherit" });
  if (built.status !== 0) throw new Error("npm run interop:build failed");
  const dotnetVersion = spawnSync("dotnet", ["--version"], { encoding: "utf8" }).stdout.trim();
  const machine = {
    ...machineFacts(ROOT),
    dotnetSdk: dotnetVersion,
    microsoftAzureCosmos: "3.64.0",
    loadAverage1mAtStart: round2(os.loadavg()[0]),
  };
  t = await startTlsEmulator({ enforceThroughput: false });
  db = (await t.client().databases.create({ id: "bench" })).database;
  const began = Date.now();
  const result: Record<string, Record<Kind, unknown>> = {
    drain: {} as never,
    idle: {} as never,
    failoverMs: {} as never,
    handoffMs: {} as never,
  };
  for (const kind of ["ours", "dotnet"] as const) {
    console.log(`${kind}: drain ${DOCS} documents`);
    result.drain[kind] = await drain(kind);
    console.log(`  ${JSON.stringify(result.drain[kind])}`);
    console.log(`${kind}: idle 4 hosts × 32 leases, ${WINDOW_S} s window, intervals ÷ ${SCALE}`);
    result.idle[kind] = await idle(kind);
    console.log(`  ${JSON.stringify(result.idle[kind])}`);
    result.failoverMs[kind] = await takeover(kind, "crash");
    result.handoffMs[kind] = await takeover(kind, "stop");
    console.log(
      `  failover ${result.failoverMs[kind]} ms, hand-off ${result.handoffMs[kind]} ms (scaled intervals)`,
    );
  }
  await t.close();

  const drainOurs = (result.drain.ours as { docsPerSecond: number }).docsPerSecond;
  const drainNet = (result.drain.dotnet as { docsPerSecond: number }).docsPerSecond;
  const idleOurs = (result.idle.ours as { requestsPerHour: number }).requestsPerHour;
  const idleNet = result.idle.dotnet as { requestsPerHour: number; documentRequestsPerHour: number };
  const model = tune(tuningDefaults(4, 32, {}));
  const modelNet = model.dotnet.leaseRequestsPerHour;
  const modelOurs = model.ours.leaseRequestsPerHour;
  const dev = (measured: number, modelled: number) => round1(((measured - modelled) / modelled) * 100);
  const expirationMs = scaled.leaseExpirationInterval;
  const failover = result.failoverMs as Record<Kind, number>;
  const handoff = result.handoffMs as Record<Kind, number>;
  const conclusions = [
    `drain: ours ${drainOurs} docs/s vs .NET ${drainNet} docs/s (ratio ${round2(drainOurs / drainNet)})`,
    `idle lease requests at 4 × 32, per default-interval hour: ours ${idleOurs} vs .NET ${idleNet.requestsPerHour} (${idleNet.documentRequestsPerHour} without query plans): ratio ${round2(idleOurs / idleNet.requestsPerHour)}`,
    `.NET measured vs the tune model (${modelNet}/h): ${dev(idleNet.documentRequestsPerHour, modelNet)} % without query plans, ${dev(idleNet.requestsPerHour, modelNet)} % with them — ${Math.abs(dev(idleNet.documentRequestsPerHour, modelNet)) <= 15 ? "within" : "outside"} ±15 %`,
    `ours measured vs the tune model (${modelOurs}/h): ${dev(idleOurs, modelOurs)} % — ${Math.abs(dev(idleOurs, modelOurs)) <= 15 ? "within" : "outside"} ±15 %`,
    `failover after kill -9 (expiration ${expirationMs} ms): ours ${failover.ours} ms (${round2(failover.ours / expirationMs)} × expiration), .NET ${failover.dotnet} ms (${round2(failover.dotnet / expirationMs)} ×)`,
    `hand-off on a graceful stop: ours ${handoff.ours} ms vs .NET ${handoff.dotnet} ms (acquire interval ${scaled.leaseAcquireInterval} ms)`,
  ];
  console.log("\nconclusions:");
  for (const c of conclusions) console.log(`  - ${c}`);
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  const output = {
    machine: {
      ...machine,
      loadAverage1mAtEnd: round2(os.loadavg()[0]),
      sharedMachine: true,
      commit: git("rev-parse --short HEAD"),
    },
    method:
      "One emulator in this process over HTTPS (throttling off); each measurement on its own monitored and lease containers. Ours: ChangeFeedProcessor hosts in this process (one CosmosClient each); .NET: interop/dotnet processes (Microsoft.Azure.Cosmos 3.64.0, Gateway mode, built as the Functions trigger builds its processor). Drain: a backlog of 1 KB documents over 8 ranges, 100 per page, one host from the beginning; documents / time from the first batch handled to the last (ours: in the handler; .NET: when its batch line reached this process), which leaves out bootstrap, lease acquisition and the .NET process's start-up. Idle: 4 hosts over 32 leases, Microsoft's defaults (poll 5 s, acquire 13 s, expiration 60 s, renew 17 s; ours also watch 1 s, checkpoint delay 1 s) ÷ scale; once balanced and one expiration later, the emulator's meter counts the lease container's requests over the window; per hour = count × 3.6e6 / (window ms × scale). Failover / hand-off: 2 hosts × 8 leases at the scaled intervals; one is killed (.NET: SIGKILL; ours: abandon(), no release) or stopped; time until the other owns all 8, polled every 20 ms.",
    docs: DOCS,
    scale: SCALE,
    windowSeconds: WINDOW_S,
    durationSeconds: round1((Date.now() - began) / 1000),
    drain: result.drain,
    idle: { ...result.idle, model: { dotnet: modelNet, ours: modelOurs } },
    failoverMs: failover,
    handoffMs: handoff,
    scaledIntervalsMs: scaled,
    conclusions,
  };
  writeFileSync(RESULTS_FILE, `${JSON.stringify(output, null, 2)}\n`);
  console.log(`\nwritten: ${RESULTS_FILE}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
