/** Lock bench, scenario 2: independent workers, lock → write → release vs the same raw requests. */

import type { Container } from "@azure/cosmos";
import { fencedUpdate, LockClient } from "@cosmos-feed/locks";
import { median, percentile } from "../lib/stats.js";
import {
  type Counter,
  config,
  diff,
  type EmulatorProcess,
  lockLikeDoc,
  mark,
  perOp,
  round2,
  round3,
  sleep,
} from "./setup.js";

export type WorkerOp = (worker: number) => Promise<void>;

export interface ThroughputSlice {
  round: number;
  contender: string;
  position: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  [k: string]: unknown;
}

export async function runSlice(emu: EmulatorProcess, op: WorkerOp, seconds = config.sliceSeconds) {
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

export async function throughputScenario(emu: EmulatorProcess, locksC: Container, dataC: Container) {
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
