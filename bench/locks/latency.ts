/** Lock bench, scenario 1: sequential acquire+release vs a bare create+delete (and with If-Match). */

import type { Container } from "@azure/cosmos";
import { LockClient } from "@cosmos-feed/locks";
import { median, percentile } from "../lib/stats.js";
import { config, diff, type EmulatorProcess, lockLikeDoc, mark, perOp, round3 } from "./setup.js";

export interface LatencyRound {
  round: number;
  contender: string;
  p50Ms: number;
  p99Ms: number;
  firstHalfP50Ms: number;
  secondHalfP50Ms: number;
  clientCpuUsPerOp: number;
}

export type PairOp = () => Promise<[number, number]>;

export async function latencyScenario(emu: EmulatorProcess, locksC: Container) {
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
