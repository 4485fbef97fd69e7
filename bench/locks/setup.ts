/** Lock bench: configuration, the emulator child, request/RU/CPU windows, documents. */

import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ItemDefinition } from "@azure/cosmos";
import {
  type AcquireOptions,
  LockClient,
  LockDefaults,
  type LockHandle,
  LockHeldError,
} from "@cosmos-feed/locks";
import type { EmulatorProcess as SharedEmulatorProcess } from "../lib/emulator-process.js";
import { envNumber, round1, round2, round3 } from "../lib/stats.js";
import type { MeterSnapshot, ToParent } from "../locks.server.js";

/** bench/ (this file is in bench/locks/). */
export const HERE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const ROOT = resolve(HERE, "..");
export const RESULTS_FILE = join(HERE, "results", "locks.json");

export const config = {
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
  /** Scenario 4 (crash takeover): trials, and the holder's lock TTL (s). */
  crashTrials: Math.max(1, Math.round(envNumber("BENCH_CRASH_TRIALS", 5))),
  crashTtlSeconds: 3,
  /** The emulator child's TTL sweep interval (ms): startEmulator's default, which locks.server.ts keeps. */
  crashSweepIntervalMs: 1_000,
  database: "bench-locks",
  lockContainer: "locks",
  dataContainer: "data",
};

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
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

export function machineBusyMs(): number {
  let busy = 0;
  for (const c of os.cpus()) busy += c.times.user + c.times.nice + c.times.sys + c.times.irq;
  return busy;
}

// ---------------------------------------------------------------------------------------------------
// The emulator child

export type ServerStats = Extract<ToParent, { type: "stats" }>;
export type EmulatorProcess = SharedEmulatorProcess<ServerStats>;

/** What happened between two stats snapshots: responses by route+status, RU and requests per container. */
export interface Window {
  responses: Record<string, number>;
  requests: number;
  lockRu: number;
  dataRu: number;
  serverCpuMs: number;
  clientCpuMs: number;
  machineCpuMs: number;
  seconds: number;
}

export interface Mark {
  server: ServerStats;
  client: NodeJS.CpuUsage;
  machineMs: number;
  at: number;
}

export async function mark(emu: EmulatorProcess): Promise<Mark> {
  return {
    server: await emu.stats(),
    client: process.cpuUsage(),
    machineMs: machineBusyMs(),
    at: performance.now(),
  };
}

export function ruOf(meter: MeterSnapshot, container: string): number {
  let sum = 0;
  for (const e of Object.values(meter[`${config.database}/${container}`] ?? {})) sum += e.ru;
  return sum;
}

export function diff(a: Mark, b: Mark): Window {
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

export function perOp(w: Window, ops: number) {
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

export class CountingLockClient extends LockClient {
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

export interface LockDoc extends ItemDefinition {
  id: string;
  owner: string;
  ttl: number;
  acquiredAt: string;
}

/** The document a lock acquisition writes, for the bare baselines: same fields, same size. */
export function lockLikeDoc(id: string): LockDoc {
  return {
    id,
    owner: "7f0c2a9e-3c1b-4f5e-9d0a-6b8e2c4d1f3a",
    ttl: LockDefaults.ttlSeconds,
    acquiredAt: new Date().toISOString(),
  };
}

export interface Counter extends ItemDefinition {
  id: string;
  n: number;
  fencingToken?: number;
}

/** Re-exported for the scenario modules. */
export { round1, round2, round3 };
