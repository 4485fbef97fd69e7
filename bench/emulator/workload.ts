/** Emulator bench: the SDK workload, interleaved slices of ours and vercel, and their summaries. */

import { monitorEventLoopDelay } from "node:perf_hooks";
import { type Container, CosmosClient, type ItemDefinition } from "@azure/cosmos";
import type { ServerKind } from "../emulator.server.js";
import { median, percentile } from "../lib/stats.js";
import {
  config,
  KEY,
  machineBusyMs,
  round2,
  round3,
  type ServerMemory,
  ServerProcess,
  type ServerStats,
  sleep,
} from "./setup.js";

export interface BenchDoc extends ItemDefinition {
  id: string;
  pk: string;
}

export const TARGET_DOC_BYTES = 1024;

/** A ~1 KB order-like document (the same shape for both servers). */
export function makeDoc(id: string, n: number): BenchDoc {
  const doc = {
    id,
    pk: `tenant-${n % config.partitionKeyValues}`,
    type: "order",
    n,
    createdAt: "2025-01-01T00:00:00.000Z",
    customer: { name: "Ada Lovelace", email: "ada@example.com", tier: "gold", score: 42.5 },
    items: [1, 2, 3, 4].map((k) => ({ sku: `SKU-${1000 + k}`, qty: k, price: 9.99 * k, tags: ["a", "b"] })),
    flags: { paid: true, shipped: false, gift: n % 2 === 0 },
    note: "",
  };
  const padding = TARGET_DOC_BYTES - Buffer.byteLength(JSON.stringify(doc));
  doc.note = "x".repeat(Math.max(0, padding));
  return doc;
}

export interface Sample {
  ops: number;
  errors: number;
  firstError?: string;
  latenciesMs: number[];
  seconds: number;
  /**
   * The server's counters, diffed between the two moments the CHILD took them (`windowMs` apart); `ops` are the
   * operations the client started between those moments (failed ones included: they sent a request too).
   * `lagMs`: how far those moments trail the client's asks (start: the measured window's start; end: the ask
   * after the drain). Dividing by the client's own window count instead only holds if the lag is nil.
   */
  server: {
    cpuMs: number;
    requests: Record<string, number>;
    loopDelayP99Ms: number;
    loopDelayMaxMs: number;
    ops: number;
    windowMs: number;
    lagMs: { start: number; end: number };
  };
  clientCpuMs: number;
  clientLoopDelayP99Ms: number;
  clientLoopDelayMaxMs: number;
  /** CPU time of the whole machine (all processes) over the client's window (`clientWindowMs`), ms. */
  machineCpuMs: number;
  /** From the start of the measured window until the client's last operation ended (includes the drain). */
  clientWindowMs: number;
  /** Operations that ended in `clientWindowMs` (the client's CPU and the machine's are taken over it). */
  clientOps: number;
}

/** Now as epoch ms with sub-ms precision: comparable with the children's `atMs`. */
const epochNow = (): number => performance.timeOrigin + performance.now();

/**
 * Runs `op` in `concurrency` loops: first `warmupS` seconds unrecorded, then `measureS` seconds where
 * every completion is counted with its latency, and the server's CPU and request counters are diffed.
 */
export async function runPhase(
  server: ServerProcess,
  concurrency: number,
  warmupS: number,
  measureS: number,
  op: (worker: number) => Promise<unknown>,
): Promise<Sample> {
  const t0 = performance.now();
  const measureStart = t0 + warmupS * 1000;
  const measureEnd = measureStart + measureS * 1000;
  const latenciesMs: number[] = [];
  /**
   * Start of every operation (epoch ms), the ramp-up included: the server's window counts the operations that
   * started in it (their requests arrive in it; those in flight at its start arrived before it, and at its end,
   * after the drain, none is in flight). End of every operation, for the client's window.
   */
  const startsAtMs: number[] = [];
  const endsAtMs: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let before: { server: ServerStats; client: NodeJS.CpuUsage; machineMs: number } | undefined;
  const clientLoop = monitorEventLoopDelay({ resolution: 10 });
  const beforeReady = (async () => {
    await sleep(measureStart - performance.now());
    const client = process.cpuUsage();
    const machineMs = machineBusyMs();
    before = { server: await server.stats(), client, machineMs };
    clientLoop.enable();
  })();

  const worker = async (w: number): Promise<void> => {
    for (;;) {
      const start = performance.now();
      if (start >= measureEnd) return;
      startsAtMs.push(performance.timeOrigin + start);
      try {
        await op(w);
      } catch (e) {
        errors++;
        firstError ??= String((e as Error)?.message ?? e).slice(0, 300);
        if (errors > 1000) throw new Error(`too many errors against ${server.kind}: ${firstError}`);
        continue;
      }
      const end = performance.now();
      endsAtMs.push(performance.timeOrigin + end);
      if (end >= measureStart && end < measureEnd) latenciesMs.push(end - start);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  const clientAfter = process.cpuUsage();
  const machineAfter = machineBusyMs();
  const clientWindowMs = performance.now() - measureStart;
  clientLoop.disable();
  const askedAfter = epochNow();
  const serverAfter = await server.stats();
  await beforeReady;
  if (!before) throw new Error("no baseline stats");
  const from = before.server.atMs;
  const to = serverAfter.atMs;
  const serverOps = startsAtMs.filter((t) => t >= from && t < to).length;
  const clientOps = endsAtMs.filter((t) => t >= performance.timeOrigin + measureStart).length;
  const requests: Record<string, number> = {};
  for (const [k, v] of Object.entries(serverAfter.requests)) {
    const d = v - (before.server.requests[k] ?? 0);
    if (d > 0) requests[k] = d;
  }
  return {
    ops: latenciesMs.length,
    errors,
    firstError,
    latenciesMs,
    seconds: measureS,
    server: {
      cpuMs: serverAfter.cpuMs - before.server.cpuMs,
      requests,
      loopDelayP99Ms: serverAfter.loopDelayP99Ms,
      loopDelayMaxMs: serverAfter.loopDelayMaxMs,
      ops: serverOps,
      windowMs: to - from,
      lagMs: { start: from - (performance.timeOrigin + measureStart), end: to - askedAfter },
    },
    machineCpuMs: machineAfter - before.machineMs,
    clientWindowMs,
    clientOps,
    clientLoopDelayP99Ms: clientLoop.percentile(99) / 1e6,
    clientLoopDelayMaxMs: clientLoop.max / 1e6,
    clientCpuMs: (clientAfter.user - before.client.user + clientAfter.system - before.client.system) / 1000,
  };
}

export interface PhaseSlice {
  pair: number;
  /** 1 = this server ran first in its pair, 2 = second. */
  position: number;
  opsPerSec: number;
  ops: number;
  errors: number;
  firstError?: string;
  p50Ms: number;
  p99Ms: number;
  /** Server process CPU time / wall time over the measured window (1.0 = one core busy). */
  serverCpuCores: number;
  /** Bench (SDK client) process CPU time / wall time over the measured window. */
  clientCpuCores: number;
  /**
   * CPU used by OTHER processes on the machine during the window (cores): machine busy time minus this
   * server and client. Anything well above 0.1 means something else competed for the 2 cores.
   */
  otherCpuCores: number;
  /** Server process CPU time (user + system) per operation, in µs. */
  serverCpuUsPerOp: number;
  /** SDK client process CPU time per operation, in µs. */
  clientCpuUsPerOp: number;
  /** The server's event-loop delay over the measured window (ms): p99 and max. */
  serverLoopDelayP99Ms: number;
  serverLoopDelayMaxMs: number;
  /** The bench (client) process's event-loop delay over the measured window (ms). */
  clientLoopDelayP99Ms: number;
  clientLoopDelayMaxMs: number;
  /**
   * HTTP requests the server received per SDK operation, by route: its counters over its own window divided
   * by the operations started in that window (see Sample.server).
   */
  requestsPerOp: Record<string, number>;
  /** The server's window: its length, the operations in it, and how far its ends lagged the client's asks. */
  serverWindow: { ms: number; ops: number; requests: number; lagStartMs: number; lagEndMs: number };
}

export function summarizeSample(s: Sample, pair: number, position: number): PhaseSlice {
  const serverOps = Math.max(1, s.server.ops);
  const clientOps = Math.max(1, s.clientOps);
  const requestsPerOp: Record<string, number> = {};
  for (const [k, v] of Object.entries(s.server.requests)) requestsPerOp[k] = round3(v / serverOps);
  const serverCores = s.server.cpuMs / Math.max(1, s.server.windowMs);
  const clientWindowMs = Math.max(1, s.clientWindowMs);
  return {
    pair,
    position,
    opsPerSec: Math.round(s.ops / s.seconds),
    ops: s.ops,
    errors: s.errors,
    ...(s.firstError ? { firstError: s.firstError } : {}),
    p50Ms: round2(percentile(s.latenciesMs, 50)),
    p99Ms: round2(percentile(s.latenciesMs, 99)),
    serverCpuCores: round2(serverCores),
    clientCpuCores: round2(s.clientCpuMs / clientWindowMs),
    otherCpuCores: round2(Math.max(0, (s.machineCpuMs - s.clientCpuMs) / clientWindowMs - serverCores)),
    serverCpuUsPerOp: Math.round((s.server.cpuMs * 1000) / serverOps),
    clientCpuUsPerOp: Math.round((s.clientCpuMs * 1000) / clientOps),
    serverLoopDelayP99Ms: round2(s.server.loopDelayP99Ms),
    serverLoopDelayMaxMs: round2(s.server.loopDelayMaxMs),
    clientLoopDelayP99Ms: round2(s.clientLoopDelayP99Ms),
    clientLoopDelayMaxMs: round2(s.clientLoopDelayMaxMs),
    requestsPerOp,
    serverWindow: {
      ms: Math.round(s.server.windowMs),
      ops: s.server.ops,
      requests: Object.values(s.server.requests).reduce((a, b) => a + b, 0),
      lagStartMs: Math.round(s.server.lagMs.start),
      lagEndMs: Math.round(s.server.lagMs.end),
    },
  };
}

export interface PhaseSummary {
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  serverCpuUsPerOp: number;
  clientCpuUsPerOp: number;
  /** 1e6 / serverCpuUsPerOp: what one fully busy server core would sustain if the client kept up. */
  serverCoreCapacityOpsPerSec: number;
  slices: PhaseSlice[];
}

export function summarizeSlices(rounds: PhaseSlice[]): PhaseSummary {
  const serverCpuUsPerOp = Math.round(median(rounds.map((r) => r.serverCpuUsPerOp)));
  return {
    opsPerSec: Math.round(median(rounds.map((r) => r.opsPerSec))),
    p50Ms: round2(median(rounds.map((r) => r.p50Ms))),
    p99Ms: round2(median(rounds.map((r) => r.p99Ms))),
    serverCpuUsPerOp,
    clientCpuUsPerOp: Math.round(median(rounds.map((r) => r.clientCpuUsPerOp))),
    serverCoreCapacityOpsPerSec: Math.round(1e6 / Math.max(1, serverCpuUsPerOp)),
    slices: rounds,
  };
}

/**
 * The same client settings for both servers. Endpoint discovery is off because vercel's HTTP server
 * advertises `https://` locations in GET / (its account handler hard-codes the scheme), which the SDK
 * would then use for every request and fail with EPROTO; with discovery off the SDK sends everything to
 * the endpoint it was given, and neither server gets GET / requests.
 */
export function newClient(endpoint: string, endpointDiscovery = false): CosmosClient {
  return new CosmosClient({
    endpoint,
    key: KEY,
    connectionPolicy: { enableEndpointDiscovery: endpointDiscovery, requestTimeout: 10_000 },
  });
}

export async function setupContainer(client: CosmosClient, id: string): Promise<Container> {
  const { database } = await client.databases.createIfNotExists({ id: "bench" });
  const { container } = await database.containers.createIfNotExists({ id, partitionKey: { paths: ["/pk"] } });
  return container;
}

export interface Target {
  kind: ServerKind;
  server: ServerProcess;
  container: Container;
  written: BenchDoc[];
  seq: number[];
}

export const KINDS: readonly ServerKind[] = ["ours", "vercel"];

export function writeOp(t: Target): (w: number) => Promise<void> {
  return async (w) => {
    const n = t.seq[w]++;
    const doc = makeDoc(`w${w}-${n}`, n * config.concurrency + w);
    await t.container.items.create(doc);
    t.written.push(doc);
  };
}

export function readOp(t: Target): () => Promise<void> {
  return async () => {
    const doc = t.written[Math.floor(Math.random() * t.written.length)];
    const { resource } = await t.container.item(doc.id, doc.pk).read<BenchDoc>();
    if (resource?.id !== doc.id) throw new Error(`read ${doc.id} returned ${resource?.id}`);
  };
}

/** Warm-up for both, then `pairs` × {ours, vercel} measured slices (order alternating), per operation. */
export async function interleaved(
  targets: Record<ServerKind, Target>,
  name: string,
  warmupSeconds: number,
  op: (t: Target) => (w: number) => Promise<void>,
): Promise<Record<ServerKind, PhaseSlice[]>> {
  for (const kind of KINDS)
    await runPhase(targets[kind].server, config.concurrency, warmupSeconds, 0, op(targets[kind]));
  const out: Record<ServerKind, PhaseSlice[]> = { ours: [], vercel: [] };
  for (let pair = 0; pair < config.pairs; pair++) {
    const order = pair % 2 === 0 ? KINDS : [...KINDS].reverse();
    for (const [i, kind] of order.entries()) {
      const t = targets[kind];
      const sample = await runPhase(
        t.server,
        config.concurrency,
        config.sliceWarmupSeconds,
        config.sliceSeconds,
        op(t),
      );
      out[kind].push(summarizeSample(sample, pair, i + 1));
    }
    const o = out.ours[pair];
    const v = out.vercel[pair];
    console.log(
      `${name} pair ${pair + 1}: ours ${String(o.opsPerSec).padStart(5)}/s (p50 ${o.p50Ms} ms, server ` +
        `${o.serverCpuUsPerOp} µs/op)  vercel ${String(v.opsPerSec).padStart(5)}/s (p50 ${v.p50Ms} ms, server ` +
        `${v.serverCpuUsPerOp} µs/op)  client ${o.clientCpuCores}/${v.clientCpuCores} cores, ` +
        `other ${Math.max(o.otherCpuCores, v.otherCpuCores)}` +
        (o.errors + v.errors > 0 ? `  errors ${o.errors}+${v.errors}: ${o.firstError ?? v.firstError}` : ""),
    );
  }
  return out;
}

/** Live memory a server holds per document: heap + external after full GCs, minus the same before any write. */
export interface MemoryPerDoc {
  docsWritten: number;
  /** (heapUsed + external after) − (before), per document written, bytes. */
  bytesPerDoc: number;
  before: ServerMemory;
  after: ServerMemory;
  /** Resident set after the run (MB): includes the runtime, free heap pages and allocator slack. */
  serverRssMb: number;
}

export function memoryPerDoc(before: ServerMemory, after: ServerMemory, docsWritten: number): MemoryPerDoc {
  const live = (m: ServerMemory) => m.heapUsedBytes + m.externalBytes;
  return {
    docsWritten,
    bytesPerDoc: Math.round((live(after) - live(before)) / Math.max(1, docsWritten)),
    before,
    after,
    serverRssMb: Math.round(after.rssBytes / 2 ** 20),
  };
}

export async function benchBoth() {
  const servers = await Promise.all(KINDS.map((k) => ServerProcess.start(k)));
  try {
    const targets = {} as Record<ServerKind, Target>;
    const empty = {} as Record<ServerKind, ServerMemory>;
    for (const server of servers) {
      targets[server.kind] = {
        kind: server.kind,
        server,
        container: await setupContainer(newClient(server.endpoint), "items"),
        written: [],
        seq: new Array<number>(config.concurrency).fill(0),
      };
      // The baseline: the server up, its database and container made, one request of each kind served.
      await targets[server.kind].container.items.create(makeDoc("baseline", 0));
      await targets[server.kind].container.item("baseline", makeDoc("baseline", 0).pk).read();
      empty[server.kind] = await server.memory();
    }
    const writes = await interleaved(targets, "writes", config.writeWarmupSeconds, writeOp);
    const reads = await interleaved(targets, "reads ", config.readWarmupSeconds, readOp);
    const after = {} as Record<ServerKind, MemoryPerDoc>;
    for (const kind of KINDS) {
      after[kind] = memoryPerDoc(
        empty[kind],
        await targets[kind].server.memory(),
        targets[kind].written.length,
      );
    }
    return { writes, reads, after };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/**
 * What the SDK does against vercel's HTTP server with its DEFAULT connection policy (endpoint discovery
 * on): bound to 127.0.0.1 the advertised https:// locations break every call; bound to 0.0.0.0 its
 * account id is "localhost", the SDK ignores the locations and re-reads GET / around every request.
 */
export async function vercelDefaultClientProbe() {
  const probeSeconds = 3;
  const loopback = await ServerProcess.start("vercel", "127.0.0.1");
  let boundTo127: { ok: boolean; error?: string };
  try {
    await setupContainer(newClient(loopback.endpoint, true), "items");
    boundTo127 = { ok: true };
  } catch (e) {
    boundTo127 = {
      ok: false,
      error: String((e as Error)?.message ?? e)
        .split("\n")[0]
        .slice(0, 100),
    };
  } finally {
    await loopback.stop();
  }
  const wildcard = await ServerProcess.start("vercel", "0.0.0.0");
  try {
    const container = await setupContainer(newClient(wildcard.endpoint, true), "items");
    const written: BenchDoc[] = [];
    const seq = new Array<number>(config.concurrency).fill(0);
    const writes = await runPhase(wildcard, config.concurrency, 1, probeSeconds, async (w) => {
      const n = seq[w]++;
      const doc = makeDoc(`trap-w${w}-${n}`, n * config.concurrency + w);
      await container.items.create(doc);
      written.push(doc);
    });
    const reads = await runPhase(wildcard, config.concurrency, 1, probeSeconds, async () => {
      const doc = written[Math.floor(Math.random() * written.length)];
      await container.item(doc.id, doc.pk).read();
    });
    const w = summarizeSample(writes, 0, 1);
    const r = summarizeSample(reads, 0, 1);
    return {
      what:
        "vercel with the SDK's default connection policy (enableEndpointDiscovery:true), short run " +
        `(1 s warm-up + ${probeSeconds} s per phase), not part of the comparison.`,
      boundTo127,
      boundTo0000: {
        accountId: "localhost",
        writes: { opsPerSec: w.opsPerSec, p50Ms: w.p50Ms, requestsPerOp: w.requestsPerOp },
        reads: { opsPerSec: r.opsPerSec, p50Ms: r.p50Ms, requestsPerOp: r.requestsPerOp },
      },
    };
  } finally {
    await wildcard.stop();
  }
}
