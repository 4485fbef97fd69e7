/**
 * CPU time of the processes a storm runs on, sampled while it runs, so the time to the last operation's end can be
 * told apart from the bench's tail of reads after it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { config, type HostStack } from "./setup.js";

const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat (Linux; USER_HZ is 100 there);
 * undefined elsewhere.
 */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces, so split after its closing parenthesis): utime is
    // field 14 and stime 15 of the whole line, i.e. the 12th and 13th after it.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(rest[11]) + Number(rest[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * CPU time (ms) of a process and every live process below it (/proc/<pid>/task/<tid>/children): the dev host and
 * its app's worker process together. undefined where /proc is not there.
 */
export function processTreeCpuMs(pid: number | undefined): number | undefined {
  const own = processCpuMs(pid);
  if (pid === undefined || own === undefined) return own;
  let total = own;
  for (const child of childPids(pid)) total += processTreeCpuMs(child) ?? 0;
  return total;
}

function childPids(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ").filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/** This process's CPU time so far (ms). */
export function ownCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

interface CpuSample {
  at: number;
  host: number | undefined;
  /** The dev host's own process alone (its event loop: HTTP, triggers, the task hub); the rest of host is the worker. */
  hostProcess: number | undefined;
  emulator: number;
  bench: number;
}

/**
 * CPU used by each process over a window (ms; host — with its worker process — null where /proc is not there;
 * hostProcess the dev host's process alone, worker the app's worker process(es) below it).
 */
export interface CpuWindow {
  windowMs: number;
  host: number | null;
  hostProcess: number | null;
  worker: number | null;
  emulator: number;
  bench: number;
}

/** Samples every config.cpuSampleMs from start() to stop(). */
export class CpuSampler {
  private readonly samples: CpuSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly stack: HostStack) {}

  private async sample(): Promise<void> {
    const emulator = (await this.stack.emulator.stats()).cpuMs;
    this.samples.push({
      at: Date.now(),
      // The dev host runs the app in a worker process of its own: both are the host's cost.
      host: processTreeCpuMs(this.stack.host.child.pid),
      hostProcess: processCpuMs(this.stack.host.child.pid),
      emulator,
      bench: ownCpuMs(),
    });
  }

  async start(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => {
      this.pending = this.pending.then(() => this.sample());
    }, config.cpuSampleMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.pending;
    await this.sample();
  }

  /** From the first sample to the first one taken at or after `until` (the last sample when none is). */
  window(until = Number.POSITIVE_INFINITY): CpuWindow {
    const a = this.samples[0];
    const b = this.samples.find((s) => s.at >= until) ?? this.samples[this.samples.length - 1];
    const host = a.host === undefined || b.host === undefined ? null : Math.round(b.host - a.host);
    const hostProcess =
      a.hostProcess === undefined || b.hostProcess === undefined
        ? null
        : Math.round(b.hostProcess - a.hostProcess);
    return {
      windowMs: b.at - a.at,
      host,
      hostProcess,
      worker: host === null || hostProcess === null ? null : Math.max(0, host - hostProcess),
      emulator: Math.round(b.emulator - a.emulator),
      bench: Math.round(b.bench - a.bench),
    };
  }
}

/** CPU ms used so far by a stack's processes: the dev host with its worker, and its emulator child. */
function stackCpuMs(stack: HostStack): number {
  return (processTreeCpuMs(stack.host.child.pid) ?? 0) + (processCpuMs(stack.emulator.child.pid) ?? 0);
}

/**
 * Waits until every stack is quiet: under `config.quietCores` of a core over one `config.quietWindowMs` window (at
 * most `config.quietMaxMs`). A storm's tail — the summaries trigger recounting, a host's GC — otherwise runs into
 * the next storm on the other host and is measured as that storm's. Returns the time waited (ms).
 */
export async function waitUntilQuiet(stacks: HostStack[]): Promise<number> {
  const began = Date.now();
  for (;;) {
    const before = stacks.map(stackCpuMs);
    await new Promise((r) => setTimeout(r, config.quietWindowMs));
    const busiest = Math.max(...stacks.map((s, i) => stackCpuMs(s) - (before[i] ?? 0)));
    if (busiest / config.quietWindowMs < config.quietCores || Date.now() - began > config.quietMaxMs) {
      return Date.now() - began;
    }
  }
}
