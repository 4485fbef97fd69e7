/**
 * Lock benchmark: what the TTL lock (src/shared/locks) costs on top of the raw Cosmos operations it is made
 * of, and how it behaves when many holders want the same lock. Writes bench/results/locks.json.
 *
 *   npx tsx bench/locks.bench.ts          (or: npm run bench:locks)
 *
 * The emulator runs in its own child process (bench/locks.server.ts); the @azure/cosmos load generator runs
 * here. Three scenarios, in one run:
 *
 *   1. latency    — sequential acquire+release vs a bare create+delete of the same document (and vs the
 *                   same with If-Match), interleaved op by op, p50/p99 per round, medians over rounds.
 *   2. throughput — `concurrency` independent workers (one lock name / document each): lock → write → release
 *                  vs bare create+delete and vs the same raw requests without the library, alternating.
 *   3. contention — `contenders` LockClients on ONE lock name looping acquire → critical section → release
 *                  for `contentionSeconds`: rate, fairness, waits, 409s, RU, and a check that no two
 *                  validity windows overlap. Once with the library's acquire({waitMs}), once with
 *                  tryAcquire + a short jittered poll.
 *
 * Knobs (environment): BENCH_ROUNDS (6), BENCH_LAT_OPS (1000), BENCH_CONCURRENCY (16), BENCH_TP_ROUNDS (10),
 * BENCH_SLICE_S (1.5), BENCH_CONTENDERS (50), BENCH_CONTENTION_S (10), BENCH_CS_MS (5). See docs/bench-locks.md.
 */
import type { ChildProcess } from "node:child_process";
import { getEventListeners, setMaxListeners } from "node:events";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Container, CosmosClient, type ItemDefinition } from "@azure/cosmos";
import {
  type AcquireOptions,
  fencedUpdate,
  LockClient,
  LockDefaults,
  type LockHandle,
  LockHeldError,
} from "../src/shared/locks/index.js";
import { ask, forkTs, stopChild, waitForMessage } from "./lib/child.js";
import { envNumber, median, percentile } from "./lib/stats.js";
import type { MeterSnapshot, ToChild, ToParent } from "./locks.server.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..");
const RESULTS_FILE = join(HERE, "results", "locks.json");

const config = {
  /** Scenario 1: rounds (each contender's operations interleaved within a round). */
  rounds: Math.max(3, Math.round(envNumber("BENCH_ROUNDS", 6))),
  /** Scenario 1: measured sequential operations per contender and round (interleaved). */
  latencyOps: Math.round(envNumber("BENCH_LAT_OPS", 1000)),
  /** Per contender before the rounds: unrecorded warm-up, then a block measured against server counters. */
  latencyWarmupOps: 300,
  latencyBlockOps: 300,
  /** Scenario 2: parallel workers, each with its own lock name and documents. */
  concurrency: Math.round(envNumber("BENCH_CONCURRENCY", 16)),
  /** Scenario 2: rounds of alternating slices (more than scenario 1: ops/s per slice is noisier). */
  throughputRounds: Math.max(3, Math.round(envNumber("BENCH_TP_ROUNDS", 10))),
  sliceSeconds: envNumber("BENCH_SLICE_S", 1.5),
  sliceWarmupSeconds: 0.3,
  /** Scenario 3. */
  contenders: Math.round(envNumber("BENCH_CONTENDERS", 50)),
  contentionSeconds: envNumber("BENCH_CONTENTION_S", 10),
  criticalSectionMs: envNumber("BENCH_CS_MS", 5),
  /** acquire({waitMs}) in the library variant: larger than the run, so nobody gives up. */
  contentionWaitMs: 600_000,
  /** Poll variant: after a LockHeldError, sleep uniformly in [min/2, min] (LockDefaults.minRetryDelayMs). */
  pollDelayMs: LockDefaults.minRetryDelayMs,
  goalRatio: 1.2,
  /** Scenario 3 goal (library variant): every contender acquires, and Jain's index is at least this. */
  fairnessGoalJain: 0.8,
  database: "bench-locks",
  lockContainer: "locks",
  dataContainer: "data",
};

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolveSleep) => {
    if (signal?.aborted) return resolveSleep();
    const onAbort = (): void => {
      clearTimeout(timer);
      resolveSleep();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolveSleep();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

const round1 = (n: number): number => Math.round(n * 10) / 10;
const round2 = (n: number): number => Math.round(n * 100) / 100;
const round3 = (n: number): number => Math.round(n * 1000) / 1000;

function machineBusyMs(): number {
  let busy = 0;
  for (const c of os.cpus()) busy += c.times.user + c.times.nice + c.times.sys + c.times.irq;
  return busy;
}

// ---------------------------------------------------------------------------------------------------
// The emulator child

interface ServerStats {
  meter: MeterSnapshot;
  responses: Record<string, number>;
  cpuMs: number;
}

class EmulatorProcess {
  private nextId = 0;
  private constructor(
    readonly child: ChildProcess,
    readonly endpoint: string,
    readonly key: string,
  ) {}

  static async start(): Promise<EmulatorProcess> {
    const child = forkTs(join(HERE, "locks.server.ts"), [], ROOT);
    const ready = await waitForMessage<ToParent, "ready">(child, "ready", "emulator child");
    return new EmulatorProcess(child, ready.endpoint, ready.key);
  }

  async stats(): Promise<ServerStats> {
    const id = this.nextId++;
    type Stats = Extract<ToParent, { type: "stats" }>;
    const m = await ask<ToParent, Stats>(
      this.child,
      { type: "stats", id } satisfies ToChild,
      (x): x is Stats => x.type === "stats" && x.id === id,
    );
    return { meter: m.meter, responses: m.responses, cpuMs: m.cpuMs };
  }

  close(): Promise<void> {
    return stopChild(this.child, { type: "close" } satisfies ToChild);
  }
}

/** What happened between two stats snapshots: responses by route+status, RU and requests per container. */
interface Window {
  responses: Record<string, number>;
  requests: number;
  lockRu: number;
  dataRu: number;
  serverCpuMs: number;
  clientCpuMs: number;
  machineCpuMs: number;
  seconds: number;
}

interface Mark {
  server: ServerStats;
  client: NodeJS.CpuUsage;
  machineMs: number;
  at: number;
}

async function mark(emu: EmulatorProcess): Promise<Mark> {
  return {
    server: await emu.stats(),
    client: process.cpuUsage(),
    machineMs: machineBusyMs(),
    at: performance.now(),
  };
}

function ruOf(meter: MeterSnapshot, container: string): number {
  let sum = 0;
  for (const e of Object.values(meter[`${config.database}/${container}`] ?? {})) sum += e.ru;
  return sum;
}

function diff(a: Mark, b: Mark): Window {
  const responses: Record<string, number> = {};
  let requests = 0;
  for (const [k, v] of Object.entries(b.server.responses)) {
    const d = v - (a.server.responses[k] ?? 0);
    if (d > 0) {
      responses[k] = d;
      requests += d;
    }
  }
  const clientMs = (b.client.user - a.client.user + (b.client.system - a.client.system)) / 1000;
  return {
    responses,
    requests,
    lockRu: ruOf(b.server.meter, config.lockContainer) - ruOf(a.server.meter, config.lockContainer),
    dataRu: ruOf(b.server.meter, config.dataContainer) - ruOf(a.server.meter, config.dataContainer),
    serverCpuMs: b.server.cpuMs - a.server.cpuMs,
    clientCpuMs: clientMs,
    machineCpuMs: b.machineMs - a.machineMs,
    seconds: (b.at - a.at) / 1000,
  };
}

function perOp(w: Window, ops: number) {
  const responsesPerOp: Record<string, number> = {};
  for (const [k, v] of Object.entries(w.responses)) responsesPerOp[k] = round2(v / ops);
  return {
    requestsPerOp: round2(w.requests / ops),
    lockRuPerOp: round2(w.lockRu / ops),
    dataRuPerOp: round2(w.dataRu / ops),
    serverCpuUsPerOp: Math.round((w.serverCpuMs * 1000) / ops),
    clientCpuUsPerOp: Math.round((w.clientCpuMs * 1000) / ops),
    otherCpuCores: round2(Math.max(0, w.machineCpuMs - w.serverCpuMs - w.clientCpuMs) / (w.seconds * 1000)),
    responsesPerOp,
  };
}

// ---------------------------------------------------------------------------------------------------
// Instrumented lock client: counts LockHeldError answers of tryAcquire (each one = a 409 create + a read)

class CountingLockClient extends LockClient {
  held = 0;
  private depth = 0;

  override async tryAcquire(name: string, options: Omit<AcquireOptions, "waitMs"> = {}): Promise<LockHandle> {
    // tryAcquire calls itself once when the holder vanished between the 409 and the read: count the outer one.
    this.depth++;
    try {
      return await super.tryAcquire(name, options);
    } catch (e) {
      if (this.depth === 1 && e instanceof LockHeldError) this.held++;
      throw e;
    } finally {
      this.depth--;
    }
  }
}

interface LockDoc extends ItemDefinition {
  id: string;
  owner: string;
  ttl: number;
  acquiredAt: string;
}

/** The document a lock acquisition writes, for the bare baselines: same fields, same size. */
function lockLikeDoc(id: string): LockDoc {
  return {
    id,
    owner: "7f0c2a9e-3c1b-4f5e-9d0a-6b8e2c4d1f3a",
    ttl: LockDefaults.ttlSeconds,
    acquiredAt: new Date().toISOString(),
  };
}

interface Counter extends ItemDefinition {
  id: string;
  n: number;
  fencingToken?: number;
}

// ---------------------------------------------------------------------------------------------------
// Scenario 1: sequential latency

interface LatencyRound {
  round: number;
  contender: string;
  p50Ms: number;
  p99Ms: number;
  firstHalfP50Ms: number;
  secondHalfP50Ms: number;
  clientCpuUsPerOp: number;
}

type PairOp = () => Promise<[number, number]>;

async function latencyScenario(emu: EmulatorProcess, locksC: Container) {
  const locks = new LockClient({ container: locksC });
  const lockName = "lat-lock";
  const bareId = "lat-bare";
  const bareIfMatchId = "lat-bare-ifmatch";
  /** Each returns [first half ms, second half ms]. */
  const contenders: Record<string, PairOp> = {
    lock: async () => {
      const t0 = performance.now();
      const lock = await locks.acquire(lockName);
      const t1 = performance.now();
      await lock.release();
      return [t1 - t0, performance.now() - t1];
    },
    bare: async () => {
      const t0 = performance.now();
      await locksC.items.create(lockLikeDoc(bareId));
      const t1 = performance.now();
      await locksC.item(bareId, bareId).delete();
      return [t1 - t0, performance.now() - t1];
    },
    /** Exactly the requests the lock sends: create, then delete with If-Match on the created etag. */
    bareIfMatch: async () => {
      const t0 = performance.now();
      const { resource } = await locksC.items.create(lockLikeDoc(bareIfMatchId));
      const t1 = performance.now();
      await locksC
        .item(bareIfMatchId, bareIfMatchId)
        .delete({ accessCondition: { type: "IfMatch", condition: resource?._etag as string } });
      return [t1 - t0, performance.now() - t1];
    },
  };
  const names = Object.keys(contenders);

  // Blocks (also the warm-up): each contender alone, unrecorded, then measured against the server's counters
  // for what one operation costs in requests, RU and CPU on both sides.
  for (let i = 0; i < config.latencyWarmupOps; i++) for (const name of names) await contenders[name]();
  const blocks: Record<string, ReturnType<typeof perOp>> = {};
  for (const name of names) {
    const before = await mark(emu);
    for (let i = 0; i < config.latencyBlockOps; i++) await contenders[name]();
    blocks[name] = perOp(diff(before, await mark(emu)), config.latencyBlockOps);
  }

  // Rounds: the contenders' operations interleaved one by one (lock, bare, bareIfMatch, bare, bareIfMatch, lock,
  // …: the order rotates every iteration), so that machine noise hits all three alike.
  const rounds: LatencyRound[] = [];
  const pooled: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < config.rounds; round++) {
    const samples = Object.fromEntries(
      names.map((n) => [
        n,
        { totals: [] as number[], firsts: [] as number[], seconds: [] as number[], cpuUs: 0 },
      ]),
    );
    for (let i = 0; i < config.latencyOps; i++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(i + j + round) % names.length];
        const cpu0 = process.cpuUsage();
        const [a, b] = await contenders[name]();
        const cpu = process.cpuUsage(cpu0);
        const x = samples[name];
        x.firsts.push(a);
        x.seconds.push(b);
        x.totals.push(a + b);
        pooled[name].push(a + b);
        x.cpuUs += cpu.user + cpu.system;
      }
    }
    for (const name of names) {
      const x = samples[name];
      rounds.push({
        round,
        contender: name,
        p50Ms: round3(percentile(x.totals, 50)),
        p99Ms: round3(percentile(x.totals, 99)),
        firstHalfP50Ms: round3(percentile(x.firsts, 50)),
        secondHalfP50Ms: round3(percentile(x.seconds, 50)),
        clientCpuUsPerOp: Math.round(x.cpuUs / config.latencyOps),
      });
    }
    const r = rounds.filter((s) => s.round === round);
    console.log(
      `  latency round ${round}: ${r.map((s) => `${s.contender} p50 ${s.p50Ms} ms p99 ${s.p99Ms} ms`).join(" | ")}`,
    );
  }
  const summary = (name: string) => {
    const s = rounds.filter((x) => x.contender === name);
    return {
      p50Ms: round3(median(s.map((x) => x.p50Ms))),
      p99Ms: round3(median(s.map((x) => x.p99Ms))),
      firstHalfP50Ms: round3(median(s.map((x) => x.firstHalfP50Ms))),
      secondHalfP50Ms: round3(median(s.map((x) => x.secondHalfP50Ms))),
      clientCpuUsPerOp: Math.round(median(s.map((x) => x.clientCpuUsPerOp))),
      pooledP99Ms: round3(percentile(pooled[name], 99)),
      pooledP999Ms: round3(percentile(pooled[name], 99.9)),
      block: blocks[name],
    };
  };
  const ratio = (field: "p50Ms" | "p99Ms" | "clientCpuUsPerOp", base = "bare") => {
    const per: number[] = [];
    for (let round = 0; round < config.rounds; round++) {
      const l = rounds.find((s) => s.round === round && s.contender === "lock");
      const b = rounds.find((s) => s.round === round && s.contender === base);
      if (l && b) per.push(l[field] / b[field]);
    }
    return round3(median(per));
  };
  const ratioP50 = ratio("p50Ms");
  const ratioP99 = ratio("p99Ms");
  return {
    description:
      "One caller, sequential. lock = LockClient.acquire(name) (waitMs 0, autoRenew default) + handle.release() " +
      "on the same lock name each time; bare = container.items.create(doc) + container.item(id, id).delete() of a " +
      "document with the same fields ({id, owner, ttl, acquiredAt}) in the same lock container; bareIfMatch = " +
      "the same create, then a delete with If-Match on the created etag: exactly the requests acquire + release " +
      "send. firstHalf = acquire / create, secondHalf = release / delete. Per round, `latencyOps` operations of " +
      "each, interleaved one by one in rotating order; clientCpuUsPerOp = process.cpuUsage around each op. " +
      "`block` = a separate run of `latencyBlockOps` of one contender alone, diffed against the emulator's " +
      "counters (requests and RU per op, server CPU).",
    lock: summary("lock"),
    bare: summary("bare"),
    bareIfMatch: summary("bareIfMatch"),
    ratioP50,
    ratioP99,
    clientCpuRatio: ratio("clientCpuUsPerOp"),
    pooledRatioP99: round3(percentile(pooled.lock, 99) / percentile(pooled.bare, 99)),
    vsBareIfMatch: {
      pooledRatioP99: round3(percentile(pooled.lock, 99) / percentile(pooled.bareIfMatch, 99)),
      ratioP50: ratio("p50Ms", "bareIfMatch"),
      ratioP99: ratio("p99Ms", "bareIfMatch"),
      clientCpuRatio: ratio("clientCpuUsPerOp", "bareIfMatch"),
    },
    goal: config.goalRatio,
    goalMetP50: ratioP50 <= config.goalRatio,
    goalMetP99: ratioP99 <= config.goalRatio,
    rounds,
  };
}

// ---------------------------------------------------------------------------------------------------
// Scenario 2: throughput at concurrency C

type WorkerOp = (worker: number) => Promise<void>;

interface ThroughputSlice {
  round: number;
  contender: string;
  position: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  [k: string]: unknown;
}

async function runSlice(emu: EmulatorProcess, op: WorkerOp, seconds = config.sliceSeconds) {
  let stop = false;
  let measuring = false;
  const latencies: number[] = [];
  let t0 = 0;
  let t1 = Number.POSITIVE_INFINITY;
  const loops = Array.from({ length: config.concurrency }, async (_, w) => {
    while (!stop) {
      const start = performance.now();
      await op(w);
      const end = performance.now();
      if (measuring && end >= t0 && end <= t1) latencies.push(end - start);
    }
  });
  await sleep(config.sliceWarmupSeconds * 1000);
  const before = await mark(emu);
  t0 = performance.now();
  measuring = true;
  await sleep(seconds * 1000);
  t1 = performance.now();
  const after = await mark(emu);
  stop = true;
  await Promise.all(loops);
  const ops = latencies.length;
  return {
    opsPerSec: Math.round(ops / ((t1 - t0) / 1000)),
    p50Ms: round2(percentile(latencies, 50)),
    p99Ms: round2(percentile(latencies, 99)),
    ops,
    ...perOp(diff(before, after), ops),
  };
}

async function throughputScenario(emu: EmulatorProcess, locksC: Container, dataC: Container) {
  const locks = new LockClient({ container: locksC });
  const C = config.concurrency;
  const contenderNames = ["bare", "bareWrite", "lockWrite", "bareReadWrite", "lockFenced"] as const;
  const counters: Record<string, number[]> = {};
  for (const name of contenderNames) {
    counters[name] = new Array(C).fill(0);
    for (let w = 0; w < C; w++) {
      const id = `c-${name}-${w}`;
      await dataC.items.upsert<Counter>({ id, n: 0 });
    }
  }
  const cid = (name: string, w: number) => `c-${name}-${w}`;
  const ops: Record<(typeof contenderNames)[number], WorkerOp> = {
    /** The raw requests of an acquire + release, nothing else. */
    bare: async (w) => {
      const id = `tp-bare-${w}`;
      await locksC.items.create(lockLikeDoc(id));
      await locksC.item(id, id).delete();
    },
    /** The raw requests of lockWrite without the library: create, blind replace of the counter, delete. */
    bareWrite: async (w) => {
      const id = `tp-bareWrite-${w}`;
      const c = cid("bareWrite", w);
      await locksC.items.create(lockLikeDoc(id));
      await dataC.item(c, c).replace<Counter>({ id: c, n: ++counters.bareWrite[w] });
      await locksC.item(id, id).delete();
    },
    /** acquire → plain replace (no read, no If-Match; the fencing token stored but not checked) → release. */
    lockWrite: async (w) => {
      const c = cid("lockWrite", w);
      const lock = await locks.acquire(`tp-lockWrite-${w}`);
      try {
        lock.signal.throwIfAborted();
        await dataC
          .item(c, c)
          .replace<Counter>({ id: c, n: ++counters.lockWrite[w], fencingToken: lock.fencingToken });
      } finally {
        await lock.release();
      }
    },
    /** The raw requests of lockFenced without the library: create, read, replace If-Match, delete. */
    bareReadWrite: async (w) => {
      const id = `tp-bareReadWrite-${w}`;
      const c = cid("bareReadWrite", w);
      await locksC.items.create(lockLikeDoc(id));
      const { resource } = await dataC.item(c, c).read<Counter>();
      if (!resource) throw new Error(`counter ${c} missing`);
      await dataC
        .item(c, c)
        .replace<Counter>(
          { id: c, n: resource.n + 1 },
          { accessCondition: { type: "IfMatch", condition: resource._etag as string } },
        );
      counters.bareReadWrite[w]++;
      await locksC.item(id, id).delete();
    },
    /** acquire → fencedUpdate (read, token check, replace If-Match) of the counter → release. */
    lockFenced: async (w) => {
      const c = cid("lockFenced", w);
      const lock = await locks.acquire(`tp-lockFenced-${w}`);
      try {
        await fencedUpdate<Counter>(dataC, c, c, lock, (d) => ({ id: d.id, n: d.n + 1 }), {
          signal: lock.signal,
        });
        counters.lockFenced[w]++;
      } finally {
        await lock.release();
      }
    },
  };
  // Unrecorded: one slice per contender before the first round.
  for (const name of contenderNames) await runSlice(emu, ops[name], 1);
  const slices: ThroughputSlice[] = [];
  for (let round = 0; round < config.throughputRounds; round++) {
    const order = round % 2 === 0 ? [...contenderNames] : [...contenderNames].reverse();
    for (const [position, name] of order.entries()) {
      const r = await runSlice(emu, ops[name]);
      slices.push({ round, contender: name, position, ...r });
    }
    const r = slices.filter((s) => s.round === round);
    console.log(
      `  throughput round ${round}: ${r.map((s) => `${s.contender} ${s.opsPerSec}/s`).join(" | ")}`,
    );
  }
  // The writes really happened (no lost increments): every counter document matches the client's count.
  for (const name of ["bareWrite", "lockWrite", "bareReadWrite", "lockFenced"]) {
    for (let w = 0; w < C; w++) {
      const { resource } = await dataC.item(cid(name, w), cid(name, w)).read<Counter>();
      const expected = counters[name][w];
      if (!resource || resource.n !== expected) {
        throw new Error(`counter ${cid(name, w)} is ${resource?.n}, expected ${expected}`);
      }
    }
  }
  const summary = (name: string) => {
    const s = slices.filter((x) => x.contender === name);
    return {
      opsPerSec: Math.round(median(s.map((x) => x.opsPerSec))),
      p50Ms: round2(median(s.map((x) => x.p50Ms))),
      p99Ms: round2(median(s.map((x) => x.p99Ms))),
      requestsPerOp: round2(median(s.map((x) => x.requestsPerOp as number))),
      lockRuPerOp: round2(median(s.map((x) => x.lockRuPerOp as number))),
      dataRuPerOp: round2(median(s.map((x) => x.dataRuPerOp as number))),
      serverCpuUsPerOp: Math.round(median(s.map((x) => x.serverCpuUsPerOp as number))),
      clientCpuUsPerOp: Math.round(median(s.map((x) => x.clientCpuUsPerOp as number))),
      otherCpuCores: round2(median(s.map((x) => x.otherCpuCores as number))),
      responsesPerOp: s[s.length - 1].responsesPerOp,
    };
  };
  /** Slowdown factor of `a` relative to `b`: median over rounds of b.opsPerSec / a.opsPerSec (1 = same). */
  const perRound = (a: string, b: string) => {
    const per: number[] = [];
    for (let round = 0; round < config.throughputRounds; round++) {
      const x = slices.find((s) => s.round === round && s.contender === a);
      const y = slices.find((s) => s.round === round && s.contender === b);
      if (x && y) per.push(y.opsPerSec / x.opsPerSec);
    }
    return per;
  };
  const slowdown = (a: string, b: string) => round3(median(perRound(a, b)));
  const range = (a: string, b: string): [number, number] => {
    const per = perRound(a, b);
    return [round3(Math.min(...per)), round3(Math.max(...per))];
  };
  const goal = slowdown("lockWrite", "bare");
  return {
    description:
      `${C} independent workers in parallel, each with its own lock name and counter document; one ` +
      "CosmosClient, one LockClient. Contenders: bare = create + delete of a lock-like document (the raw " +
      "requests of acquire + release); bareWrite = create + blind replace of the counter + delete (no library); " +
      "lockWrite = acquire → plain replace of the counter (no read, no If-Match; stores the fencing token but " +
      "does not check it) → release; bareReadWrite = create + read + replace If-Match + delete (no library); " +
      "lockFenced = acquire → fencedUpdate (read, token check, replace If-Match) → release. Slowdown = median " +
      "over rounds of opsPerSec(baseline) / opsPerSec(contender), so 1.2 means 20 % fewer ops/s.",
    guardedWrite: "lockWrite uses a plain replace (1 request); lockFenced uses fencedUpdate (2 requests).",
    contenders: Object.fromEntries(contenderNames.map((n) => [n, summary(n)])),
    slowdown: {
      lockWriteVsBare: goal,
      lockWriteVsBareWrite: slowdown("lockWrite", "bareWrite"),
      lockFencedVsBare: slowdown("lockFenced", "bare"),
      lockFencedVsBareReadWrite: slowdown("lockFenced", "bareReadWrite"),
      bareWriteVsBare: slowdown("bareWrite", "bare"),
    },
    /** [min, max] of the per-round slowdowns: the spread the median is taken over. */
    slowdownRange: {
      lockWriteVsBare: range("lockWrite", "bare"),
      lockWriteVsBareWrite: range("lockWrite", "bareWrite"),
      lockFencedVsBare: range("lockFenced", "bare"),
      lockFencedVsBareReadWrite: range("lockFenced", "bareReadWrite"),
      bareWriteVsBare: range("bareWrite", "bare"),
    },
    goal: config.goalRatio,
    goalMet: goal <= config.goalRatio,
    slices,
  };
}

// ---------------------------------------------------------------------------------------------------
// Scenario 3: contention on one lock name

interface Validity {
  contender: number;
  start: number;
  end: number;
  token: number;
}

async function contentionScenario(emu: EmulatorProcess, locksC: Container, variant: "library" | "poll") {
  const name = `hot-${variant}`;
  const clients = Array.from(
    { length: config.contenders },
    (_, i) => new CountingLockClient({ container: locksC, owner: `contender-${i}` }),
  );
  const stop = new AbortController();
  // 50 contenders share one stop signal: each waiting acquire holds one listener on it while it sleeps.
  setMaxListeners(1_000_000, stop.signal);
  const counts = new Array<number>(config.contenders).fill(0);
  const waits: number[] = [];
  /** Waits of acquisitions that met at least one LockHeldError (the others found the lock free at once). */
  const contendedWaits: number[] = [];
  const unfinishedWaits: number[] = [];
  const windows: Validity[] = [];
  let lostWhileHolding = 0;
  const firstAcquiredAt = new Array<number | undefined>(config.contenders).fill(undefined);
  let waiting = 0;

  const acquire = async (client: CountingLockClient): Promise<LockHandle | undefined> => {
    if (variant === "library") {
      try {
        return await client.acquire(name, { waitMs: config.contentionWaitMs, signal: stop.signal });
      } catch (e) {
        if (stop.signal.aborted) return undefined;
        throw e;
      }
    }
    for (;;) {
      try {
        return await client.tryAcquire(name);
      } catch (e) {
        if (!(e instanceof LockHeldError)) throw e;
        if (stop.signal.aborted) return undefined;
        await sleep(config.pollDelayMs / 2 + (Math.random() * config.pollDelayMs) / 2, stop.signal);
        if (stop.signal.aborted) return undefined;
      }
    }
  };

  const before = await mark(emu);
  const startedAt = performance.now();
  const loops = clients.map(async (client, i) => {
    while (!stop.signal.aborted) {
      const t0 = performance.now();
      const heldBefore = client.held;
      waiting++;
      const lock = await acquire(client).finally(() => waiting--);
      if (!lock) {
        unfinishedWaits.push(performance.now() - t0);
        return;
      }
      const start = performance.now();
      waits.push(start - t0);
      if (client.held > heldBefore) contendedWaits.push(start - t0);
      firstAcquiredAt[i] ??= start - startedAt;
      let lostAt: number | undefined;
      lock.signal.addEventListener("abort", () => {
        lostAt ??= performance.now();
      });
      await sleep(config.criticalSectionMs);
      const end = Math.min(performance.now(), lostAt ?? Number.POSITIVE_INFINITY);
      if (lostAt !== undefined) lostWhileHolding++;
      await lock.release();
      windows.push({ contender: i, start, end, token: lock.fencingToken });
      counts[i]++;
    }
  });
  await sleep(config.contentionSeconds * 1000);
  const measuredSeconds = (performance.now() - startedAt) / 1000;
  const abortListenersBeforeStop = getEventListeners(stop.signal, "abort").length;
  const waitingAtStop = waiting;
  stop.abort();
  await Promise.all(loops);
  const after = await mark(emu);
  const firsts = firstAcquiredAt.filter((x): x is number => x !== undefined);

  // Safety: sorted by start, every window must begin after the previous one ended; tokens strictly increase.
  windows.sort((a, b) => a.start - b.start);
  let overlaps = 0;
  let tokenInversions = 0;
  const gaps: number[] = [];
  for (let k = 1; k < windows.length; k++) {
    if (windows[k].start < windows[k - 1].end) overlaps++;
    if (windows[k].token <= windows[k - 1].token) tokenInversions++;
    gaps.push(windows[k].start - windows[k - 1].end);
  }
  const total = counts.reduce((s, x) => s + x, 0);
  const sumSq = counts.reduce((s, x) => s + x * x, 0);
  const w = diff(before, after);
  const lockCreates409 = w.responses[`POST /dbs/x/colls/${config.lockContainer}/docs 409`] ?? 0;
  const held = clients.reduce((s, c) => s + c.held, 0);
  const busyMs = windows.reduce((s, x) => s + (x.end - x.start), 0);
  const sortedCounts = [...counts].sort((a, b) => a - b);
  return {
    variant,
    how:
      variant === "library"
        ? `each contender loops client.acquire(name, {waitMs: ${config.contentionWaitMs}, signal}) → sleep ${config.criticalSectionMs} ms → release()`
        : `each contender loops client.tryAcquire(name), on LockHeldError sleeping uniform [${config.pollDelayMs / 2}, ${config.pollDelayMs}] ms → sleep ${config.criticalSectionMs} ms → release()`,
    seconds: round2(measuredSeconds),
    acquisitions: total,
    acquisitionsPerSec: round1(total / measuredSeconds),
    lockBusyFraction: round3(busyMs / (measuredSeconds * 1000)),
    perContender: {
      min: sortedCounts[0],
      median: median(counts),
      max: sortedCounts[sortedCounts.length - 1],
      zero: counts.filter((c) => c === 0).length,
      topShare: round3(sortedCounts[sortedCounts.length - 1] / Math.max(1, total)),
      jainFairness: round3(sumSq === 0 ? 0 : (total * total) / (config.contenders * sumSq)),
      counts,
    },
    waitMs: {
      p50: round1(percentile(waits, 50)),
      p99: round1(percentile(waits, 99)),
      max: round1(Math.max(0, ...waits)),
      contended: contendedWaits.length,
      contendedP50: round1(percentile(contendedWaits, 50)),
      contendedP99: round1(percentile(contendedWaits, 99)),
      unfinishedAtStop: unfinishedWaits.length,
      unfinishedMaxMs: round1(Math.max(0, ...unfinishedWaits)),
    },
    firstAcquisitionMs: {
      p50: round1(percentile(firsts, 50)),
      max: round1(Math.max(0, ...firsts)),
      neverAcquired: config.contenders - firsts.length,
    },
    handoffGapMs: {
      p50: round2(percentile(gaps, 50)),
      p99: round2(percentile(gaps, 99)),
      min: round3(Math.min(...gaps)),
    },
    lockHeldErrors: held,
    lockHeldErrorsPerAcquisition: round2(held / Math.max(1, total)),
    server409OnLockCreate: lockCreates409,
    requests: w.requests,
    requestsPerAcquisition: round2(w.requests / Math.max(1, total)),
    responses: w.responses,
    lockContainerRu: round2(w.lockRu),
    lockRuPerAcquisition: round2(w.lockRu / Math.max(1, total)),
    serverCpuCores: round2(w.serverCpuMs / (w.seconds * 1000)),
    clientCpuCores: round2(w.clientCpuMs / (w.seconds * 1000)),
    safety: {
      windows: windows.length,
      overlappingWindows: overlaps,
      fencingTokenInversions: tokenInversions,
      lostWhileHolding,
    },
    /** Abort listeners on the shared stop signal just before it fired, vs contenders then inside acquire. */
    abortListenersOnCallerSignalBeforeStop: abortListenersBeforeStop,
    contendersWaitingAtStop: waitingAtStop,
  };
}

// ---------------------------------------------------------------------------------------------------
// Probe: does acquire({waitMs, signal}) leave abort listeners behind on the caller's signal?

async function abortListenerProbe(locksC: Container) {
  const holder = new LockClient({ container: locksC, owner: "probe-holder" });
  const waiter = new CountingLockClient({ container: locksC, owner: "probe-waiter" });
  const lock = await holder.acquire("abort-listener-probe");
  const caller = new AbortController();
  const waitMs = 400;
  let outcome = "acquired";
  try {
    await (await waiter.acquire("abort-listener-probe", { waitMs, signal: caller.signal })).release();
  } catch (e) {
    outcome = (e as Error).name;
  }
  const leftover = getEventListeners(caller.signal, "abort").length;
  await lock.release();
  return {
    how:
      `a held lock; acquire(name, {waitMs: ${waitMs}, signal}) from another client until it gives up; then ` +
      "count the abort listeners still registered on the (never aborted) caller signal.",
    outcome,
    failedAttempts: waiter.held,
    leftoverAbortListeners: leftover,
  };
}

// ---------------------------------------------------------------------------------------------------

function sdkVersion(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, "node_modules/@azure/cosmos/package.json"), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

async function main(): Promise<void> {
  const began = performance.now();
  const machine = {
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    cpuCount: os.cpus().length,
    totalMemoryGb: round1(os.totalmem() / 2 ** 30),
    loadAverage1m: round2(os.loadavg()[0]),
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    azureCosmos: sdkVersion(),
    date: new Date().toISOString(),
  };
  console.log(
    `locks bench: ${machine.cpuCount} × ${machine.cpuModel}, node ${machine.node}, load ${machine.loadAverage1m}`,
  );
  const emu = await EmulatorProcess.start();
  try {
    const client = new CosmosClient({ endpoint: emu.endpoint, key: emu.key });
    const { database } = await client.databases.createIfNotExists({ id: config.database });
    const { container: locksC } = await database.containers.createIfNotExists({
      id: config.lockContainer,
      partitionKey: { paths: ["/id"], version: 2 },
      defaultTtl: -1,
    });
    const { container: dataC } = await database.containers.createIfNotExists({
      id: config.dataContainer,
      partitionKey: { paths: ["/id"], version: 2 },
    });

    console.log("1. latency (sequential)");
    const latency = await latencyScenario(emu, locksC);
    console.log(`   lock/bare p50 ${latency.ratioP50}×, p99 ${latency.ratioP99}×`);
    console.log(`2. throughput (concurrency ${config.concurrency})`);
    const throughput = await throughputScenario(emu, locksC, dataC);
    console.log(`   slowdown ${JSON.stringify(throughput.slowdown)}`);
    console.log(
      `3. contention (${config.contenders} contenders, one lock, ${config.contentionSeconds} s each)`,
    );
    const contention = {
      library: await contentionScenario(emu, locksC, "library"),
      poll: await contentionScenario(emu, locksC, "poll"),
    };
    for (const c of Object.values(contention)) {
      console.log(
        `   ${c.variant}: ${c.acquisitionsPerSec}/s, per contender ${c.perContender.min}..${c.perContender.max} ` +
          `(Jain ${c.perContender.jainFairness}), wait p50 ${c.waitMs.p50} ms p99 ${c.waitMs.p99} ms, ` +
          `${c.lockHeldErrors} LockHeldError, ${c.lockContainerRu} RU, overlaps ${c.safety.overlappingWindows}`,
      );
    }
    const probe = await abortListenerProbe(locksC);
    console.log(
      `   abort-listener probe: ${probe.failedAttempts} failed attempts → ${probe.leftoverAbortListeners} listeners left on the caller's signal`,
    );
    const overlaps = contention.library.safety.overlappingWindows + contention.poll.safety.overlappingWindows;
    const inversions =
      contention.library.safety.fencingTokenInversions + contention.poll.safety.fencingTokenInversions;

    const result = {
      machine,
      config: {
        ...config,
        durationSeconds: Math.round((performance.now() - began) / 1000),
        server:
          "startEmulator({port:0, host:'127.0.0.1', enforceThroughput:false}) in its own `node --import tsx` child " +
          "(bench/locks.server.ts): HTTP, in memory, no provisioned throughput. Lock container: partition key /id, " +
          "defaultTtl -1. Data container: /id.",
        client:
          "@azure/cosmos in the bench process, one CosmosClient (default options, keep-alive agent). " +
          `LockClient defaults: ttl ${LockDefaults.ttlSeconds} s, safety margin ${LockDefaults.safetyMarginMs} ms, ` +
          `renew every ttl/3, min retry delay ${LockDefaults.minRetryDelayMs} ms.`,
        method:
          "Scenario 1 interleaves the contenders op by op (rotating order) within each round; scenario 2 runs one " +
          "slice per contender per round, order reversed every other round. Either way machine noise hits all " +
          "alike; figures are medians over rounds, ratios medians of per-round ratios. Requests, RU and server " +
          "CPU per op come from the emulator child (http.server.response.finish channel, RU meter, cpuUsage) " +
          "diffed around each measured slice or block. The emulator's RU meter does not charge requests that fail " +
          "(409/412/404); the real service does.",
      },
      latency,
      throughput,
      contention,
      abortListenerProbe: probe,
      verdict: {
        latencyRatioP50: latency.ratioP50,
        latencyRatioP99: latency.ratioP99,
        latencyGoalMet: latency.goalMetP50 && latency.goalMetP99,
        throughputLockWriteVsBare: throughput.slowdown.lockWriteVsBare,
        throughputGoalMet: throughput.goalMet,
        throughputLockWriteVsSameRequestsWithoutLibrary: throughput.slowdown.lockWriteVsBareWrite,
        overlappingValidityWindows: overlaps,
        fencingTokenInversions: inversions,
        contentionNeverAcquired: contention.library.firstAcquisitionMs.neverAcquired,
        contentionJainFairness: contention.library.perContender.jainFairness,
        fairnessGoal: { everyContenderAcquires: true, jainAtLeast: config.fairnessGoalJain },
        fairnessGoalMet:
          contention.library.firstAcquisitionMs.neverAcquired === 0 &&
          contention.library.perContender.jainFairness >= config.fairnessGoalJain,
      },
    };
    mkdirSync(dirname(RESULTS_FILE), { recursive: true });
    writeFileSync(RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`wrote ${relative(process.cwd(), RESULTS_FILE)} (${result.config.durationSeconds} s)`);
    if (overlaps > 0 || inversions > 0) {
      console.error(
        `SAFETY VIOLATION: ${overlaps} overlapping validity windows, ${inversions} token inversions`,
      );
      process.exitCode = 1;
    }
  } finally {
    await emu.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
