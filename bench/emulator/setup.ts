/** Emulator bench: configuration and the server child processes (ours and vercel), quiet-machine wait. */

import type { ChildProcess } from "node:child_process";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ChildMessage, ParentMessage, ServerKind } from "../emulator.server.js";
import { ask, forkTs, stopChild, waitForMessage } from "../lib/child.js";
import { envNumber, round1, round2, round3 } from "../lib/stats.js";

/** bench/ (this file is in bench/emulator/). */
export const HERE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const ROOT = resolve(HERE, "..");
export const RESULTS_DIR = join(HERE, "results");
export const RESULTS_FILE = join(RESULTS_DIR, "emulator.json");
/** Raw profile (gitignored: bench/results/*.cpuprofile); open it in Chrome DevTools or VS Code. */
export const PROFILE_FILE = join(RESULTS_DIR, "emulator-server.cpuprofile");
export const KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

export const config = {
  /** Measured slices per server and operation; slices alternate ours/vercel in pairs. */
  pairs: Math.round(envNumber("BENCH_PAIRS", 8)),
  concurrency: Math.round(envNumber("BENCH_CONCURRENCY", 32)),
  /** Unrecorded load per server before the write slices (reads: at most 2 s). */
  writeWarmupSeconds: envNumber("BENCH_WARMUP_S", 3),
  readWarmupSeconds: Math.min(2, envNumber("BENCH_WARMUP_S", 3)),
  /** Measured seconds per slice, each after `sliceWarmupSeconds` of unrecorded ramp-up. */
  sliceSeconds: envNumber("BENCH_SLICE_S", 2),
  sliceWarmupSeconds: 0.5,
  changeFeedDocs: envNumber("BENCH_CF_DOCS", 20_000),
  changeFeedMaxItemCount: 1000,
  changeFeedDrains: 3,
  profileSeconds: envNumber("BENCH_PROFILE_S", 4),
  profileSamplingIntervalUs: 500,
  partitionKeyValues: 64,
  /** Before starting, and before the profile, wait (up to this many seconds in all) for a quiet machine. */
  quietWaitBudgetSeconds: envNumber("BENCH_QUIET_WAIT_S", 20),
};

// ---------------------------------------------------------------------------------------------------
// Server child processes

export interface ServerStats {
  /** When the child took them (epoch ms). */
  atMs: number;
  requests: Record<string, number>;
  cpuMs: number;
  rssBytes: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

export interface ServerMemory {
  heapUsedBytes: number;
  externalBytes: number;
  rssBytes: number;
}

export class ServerProcess {
  private constructor(
    readonly kind: ServerKind,
    readonly child: ChildProcess,
    readonly endpoint: string,
  ) {}

  static async start(kind: ServerKind, host?: string): Promise<ServerProcess> {
    const child = forkTs(join(HERE, "emulator.server.ts"), host ? [kind, host] : [kind], ROOT, [
      "--expose-gc",
    ]);
    const ready = await waitForMessage<ChildMessage, "ready">(child, "ready", `${kind} server`);
    return new ServerProcess(kind, child, ready.endpoint);
  }

  private asked = 0;

  /** Sends `msg` with a fresh id and resolves with the answer of that id (an earlier ask's late answer is not it). */
  private ask<T extends ChildMessage["type"]>(
    msg: ParentMessage,
    answer: T,
  ): Promise<Extract<ChildMessage, { type: T }>> {
    const id = ++this.asked;
    return ask<ChildMessage, Extract<ChildMessage, { type: T }>>(
      this.child,
      { ...msg, id },
      (m): m is Extract<ChildMessage, { type: T }> => m.type === answer && m.re === id,
      (m) => (m.type === "error" && m.re === id ? `${this.kind} server: ${m.message}` : undefined),
    );
  }

  async stats(): Promise<ServerStats> {
    const s = await this.ask({ type: "stats" }, "stats");
    return {
      atMs: s.atMs,
      requests: s.requests,
      cpuMs: s.cpuUserMs + s.cpuSystemMs,
      rssBytes: s.rssBytes,
      loopDelayP99Ms: s.loopDelayP99Ms,
      loopDelayMaxMs: s.loopDelayMaxMs,
    };
  }

  /** Live memory after full GCs in the child. */
  async memory(): Promise<ServerMemory> {
    const { heapUsedBytes, externalBytes, rssBytes } = await this.ask({ type: "memory" }, "memory");
    return { heapUsedBytes, externalBytes, rssBytes };
  }

  async startProfile(): Promise<void> {
    await this.ask({ type: "profile-start" }, "profile-started");
  }

  async stopProfile(file: string): Promise<string> {
    return (await this.ask({ type: "profile-stop", file }, "profile")).file;
  }

  stop(): Promise<void> {
    return stopChild(this.child, { type: "stop" } satisfies ParentMessage);
  }
}

let quietWaitLeftMs = config.quietWaitBudgetSeconds * 1000;

/**
 * The machine is shared (other engineers' tests and benches): before a run, sample the machine's busy
 * CPU for 1 s while we are idle and wait while others use more than a third of a core, within a budget.
 */
export async function awaitQuietMachine(): Promise<{ waitedSeconds: number; otherCpuCoresBefore: number }> {
  const start = performance.now();
  for (;;) {
    const m0 = machineBusyMs();
    const c0 = process.cpuUsage();
    await sleep(1000);
    const own = process.cpuUsage(c0);
    const other = Math.max(0, machineBusyMs() - m0 - (own.user + own.system) / 1000) / 1000;
    const waited = performance.now() - start;
    if (other < 0.33 || waited >= quietWaitLeftMs) {
      quietWaitLeftMs = Math.max(0, quietWaitLeftMs - waited);
      return { waitedSeconds: round1(waited / 1000), otherCpuCoresBefore: round2(other) };
    }
  }
}

/** Busy CPU time of the whole machine so far (ms, all cores), from os.cpus(). */
export function machineBusyMs(): number {
  let busy = 0;
  for (const c of os.cpus()) busy += c.times.user + c.times.nice + c.times.sys + c.times.irq;
  return busy;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}

/** Re-exported for the scenario modules. */
export { round1, round2, round3 };
