/** Change feed bench: configuration, the emulator and host child processes, documents, writers. */

import type { ChildProcess } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  BulkOperationType,
  type Container,
  type Database,
  type JSONObject,
  type OperationInput,
} from "@azure/cosmos";
import { ChangeFeedDefaults } from "@cosmos-feed/changefeed/options";
import { meterDelta as meterDeltaOf, RANGE_COUNT_HEADER } from "@cosmos-feed/emulator";
import type { HandledRow, HostConfig, ToParent } from "../changefeed.child.js";
import { forkTs, waitForMessage } from "../lib/child.js";
import type { EmulatorProcess as SharedEmulatorProcess } from "../lib/emulator-process.js";
import { envNumber, round1, round2 } from "../lib/stats.js";

/**
 * BENCH_PROCESSOR_MODULE=/abs/path/processor.ts benchmarks another build of the processor (to A/B a fix); the
 * host children read the same variable. Default: ../packages/changefeed/src/processor.ts.
 */
export type ProcessorModule = typeof import("@cosmos-feed/changefeed");
export const { createChangeFeedProcessor }: ProcessorModule = process.env.BENCH_PROCESSOR_MODULE
  ? ((await import(pathToFileURL(process.env.BENCH_PROCESSOR_MODULE).href)) as ProcessorModule)
  : await import("@cosmos-feed/changefeed");

/** bench/ (this file is in bench/changefeed/). */
export const HERE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const ROOT = resolve(HERE, "..");
export const CHILD = join(HERE, "changefeed.child.ts");
export const RESULTS_DIR = join(HERE, "results");
export const RESULTS_FILE = join(RESULTS_DIR, "changefeed.json");
export const DB = "bench";

export const leaseScale = envNumber("BENCH_LEASE_SCALE", 10);
/** The processor's default lease intervals divided by BENCH_LEASE_SCALE (phases 3–5). */
export const scaled = {
  leaseRenewInterval: Math.round(ChangeFeedDefaults.leaseRenewInterval / leaseScale),
  leaseAcquireInterval: Math.round(ChangeFeedDefaults.leaseAcquireInterval / leaseScale),
  leaseExpirationInterval: Math.round(ChangeFeedDefaults.leaseExpirationInterval / leaseScale),
  leaseWatchInterval: Math.round(ChangeFeedDefaults.leaseWatchInterval / leaseScale),
};

/**
 * Hand-off trials keep the default watch slot (1 s), so the pickup they measure is the one users get; the
 * acquire interval (5 s) exceeds 2 hosts × 1 s, so a balancing round cannot be what makes a pickup fast.
 */
export const handoffIntervals = {
  ...scaled,
  leaseAcquireInterval: 5_000,
  leaseWatchInterval: ChangeFeedDefaults.leaseWatchInterval,
};

export const config = {
  throughput: {
    docs: envNumber("BENCH_DOCS", 100_000),
    ranges: 8,
    maxItemCounts: [100, 1000],
    rounds: envNumber("BENCH_ROUNDS", 5),
    partitionKeyValues: 512,
  },
  latency: {
    ratePerSec: envNumber("BENCH_LATENCY_RATE", 200),
    seconds: envNumber("BENCH_LATENCY_S", 10),
    ranges: 8,
    feedPollDelays: [ChangeFeedDefaults.feedPollDelay, 100],
  },
  handover: {
    trials: envNumber("BENCH_HANDOVER_TRIALS", 2),
    ranges: 8,
    hosts: 2,
    writeRatePerSec: 100,
    feedPollDelay: 100,
    intervals: scaled,
    handoffIntervals,
    /** Writer keeps going after the survivor owns everything, then everything must be handled. */
    tailMs: 2_000,
  },
  idle: {
    hosts: 4,
    ranges: 32,
    windowSeconds: envNumber("BENCH_IDLE_WINDOW_S", 60),
    intervals: scaled,
    scale: leaseScale,
  },
};

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------------------
// Children

export type Stats = Extract<ToParent, { type: "stats" }>;

export const forkChild = (args: string[]): ChildProcess => forkTs(CHILD, args, ROOT);

export type EmulatorProcess = SharedEmulatorProcess<Stats>;

/** Per-container meter counts (requests of every kind) between two snapshots. */
export function meterDelta(before: Stats, after: Stats, container: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [kind, e] of Object.entries(meterDeltaOf(before.meter, after.meter, `${DB}/${container}`)))
    if (e && e.count > 0) out[kind] = e.count;
  return out;
}

/** Per-container RU charged by kind between two snapshots. */
export function meterRuDelta(before: Stats, after: Stats, container: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [kind, e] of Object.entries(meterDeltaOf(before.meter, after.meter, `${DB}/${container}`)))
    if (e && e.ru > 0) out[kind] = round2(e.ru);
  return out;
}

/** HTTP requests between two snapshots, for routes naming `container` (or none: account/db-level). */
export function requestDelta(before: Stats, after: Stats, container?: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [route, n] of Object.entries(after.requests)) {
    if (container !== undefined && !route.includes(`/colls/${container}`)) continue;
    const d = n - (before.requests[route] ?? 0);
    if (d > 0) out[route.replace(`/colls/${container}`, "/colls/x")] = d;
  }
  return out;
}

export const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

export class HostProcess {
  readonly handled: HandledRow[] = [];
  readonly errors: string[] = [];
  readonly leaseEvents: Extract<ToParent, { type: "lease-event" }>[] = [];
  stopMs: number | undefined;
  exitedAt: number | undefined;
  readonly exited: Promise<void>;

  constructor(readonly config: HostConfig) {
    this.child = forkChild(["host", JSON.stringify(config)]);
    this.exited = new Promise<void>((r) =>
      this.child.once("exit", () => {
        this.exitedAt = Date.now();
        r();
      }),
    );
    this.child.on("message", (m: ToParent) => {
      if (m.type === "handled") for (const row of m.rows) this.handled.push(row);
      else if (m.type === "host-error") this.errors.push(m.message);
      else if (m.type === "lease-event") this.leaseEvents.push(m);
      else if (m.type === "stopped") this.stopMs = m.stopMs;
    });
  }

  readonly child: ChildProcess;

  async ready(): Promise<void> {
    await waitForMessage<ToParent, "host-ready">(
      this.child,
      "host-ready",
      `host ${this.config.instanceName}`,
    );
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 20_000);
    await this.exited;
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------------
// Data

export interface BenchDoc {
  id: string;
  pk: string;
  writtenAt?: number;
  [k: string]: unknown;
}

export const TARGET_DOC_BYTES = 1024;

/** A ~1 KB order-like document. */
export function makeDoc(id: string, n: number, writtenAt?: number): BenchDoc {
  const doc: BenchDoc = {
    id,
    pk: `tenant-${n % config.throughput.partitionKeyValues}`,
    type: "order",
    n,
    ...(writtenAt !== undefined ? { writtenAt } : {}),
    customer: { name: "Ada Lovelace", email: "ada@example.com", tier: "gold", score: 42.5 },
    items: [1, 2, 3, 4].map((k) => ({ sku: `SKU-${1000 + k}`, qty: k, price: 9.99 * k, tags: ["a", "b"] })),
    flags: { paid: true, shipped: false, gift: n % 2 === 0 },
    note: "",
  };
  doc.note = "x".repeat(Math.max(0, TARGET_DOC_BYTES - Buffer.byteLength(JSON.stringify(doc))));
  return doc;
}

let containerSeq = 0;
/** A fresh number for container ids (each run uses fresh containers). */
export function nextContainerSeq(): number {
  containerSeq++;
  return containerSeq;
}
export async function createContainers(
  db: Database,
  tag: string,
  ranges: number,
): Promise<{ monitored: Container; leases: Container }> {
  containerSeq++;
  const { container: monitored } = await db.containers.create(
    { id: `${tag}-data-${containerSeq}`, partitionKey: { paths: ["/pk"], version: 2 } },
    { initialHeaders: { [RANGE_COUNT_HEADER]: String(ranges) } },
  );
  const { container: leases } = await db.containers.create({
    id: `${tag}-leases-${containerSeq}`,
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  const pkRanges = await monitored.readPartitionKeyRanges().fetchAll();
  if (pkRanges.resources.length !== ranges) {
    throw new Error(`expected ${ranges} ranges, got ${pkRanges.resources.length}`);
  }
  return { monitored, leases };
}

/** Writes `count` documents with transactional batches (≤ 100 operations, one partition key each), 8 at a time. */
export async function seed(container: Container, count: number): Promise<number> {
  const t0 = performance.now();
  const byKey = new Map<string, OperationInput[]>();
  for (let n = 0; n < count; n++) {
    const doc = makeDoc(`d${n}`, n);
    let ops = byKey.get(doc.pk);
    if (!ops) {
      ops = [];
      byKey.set(doc.pk, ops);
    }
    // A BenchDoc is plain JSON; its `unknown`-typed extra fields just are not spelled as JSONValue.
    ops.push({ operationType: BulkOperationType.Create, resourceBody: doc as unknown as JSONObject });
  }
  const batches: [string, OperationInput[]][] = [];
  for (const [pk, ops] of byKey) {
    for (let i = 0; i < ops.length; i += 100) batches.push([pk, ops.slice(i, i + 100)]);
  }
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const [pk, ops] = batches[next++];
      const res = await container.items.batch(ops, pk);
      const failed = res.result?.filter((r) => r.statusCode >= 400) ?? [];
      if (res.code !== undefined && res.code >= 400)
        throw new Error(`seeding: batch failed with ${res.code}`);
      if (failed.length > 0)
        throw new Error(`seeding: ${failed.length} creates failed (${failed[0].statusCode})`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return Math.round(count / ((performance.now() - t0) / 1000));
}

export interface Writer {
  /** Documents issued so far (ids w0 … w{n−1}), with their writtenAt. */
  writtenAt: Map<string, number>;
  errors: number;
  /** Resolves once `max` documents were written (or after stop()). */
  done: Promise<void>;
  stop(): Promise<void>;
}

/** Writes ~1 KB documents with a `writtenAt` timestamp at a steady rate until stopped or `max` reached. */
export function startWriter(
  container: Container,
  ratePerSec: number,
  max = Number.POSITIVE_INFINITY,
): Writer {
  const writtenAt = new Map<string, number>();
  const inflight = new Set<Promise<unknown>>();
  let stopped = false;
  const w: Writer = { writtenAt, errors: 0, done: Promise.resolve(), stop: async () => {} };
  const loop = (async () => {
    const t0 = performance.now();
    let i = 0;
    while (!stopped && i < max) {
      const due = Math.min(max, Math.floor(((performance.now() - t0) * ratePerSec) / 1000) + 1);
      for (; i < due; i++) {
        const id = `w${i}`;
        const at = Date.now();
        writtenAt.set(id, at);
        const p = container.items.create(makeDoc(id, i, at)).catch(() => {
          w.errors++;
          writtenAt.delete(id);
        });
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      await sleep(2);
    }
    await Promise.all(inflight);
  })();
  w.done = loop;
  w.stop = async () => {
    stopped = true;
    await loop;
  };
  return w;
}

/** Re-exported for the scenario modules. */
export { round1, round2 };
