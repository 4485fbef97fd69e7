import { seededRandom } from "../lib/prng.js";
import { Fleet } from "./fleet.js";
import type { Algorithm } from "./hosts.js";
import { TIMINGS } from "./hosts.js";

/**
 * The scenarios, run one after the other on one fleet (each starts from the steady state the previous left):
 * cold start; +10 % hosts; −10 % hosts by graceful stop; −10 % by crash; a rolling restart of every host (in
 * tenths, a tenth every 30 s: each stopped gracefully and replaced by a new host); one host paused for longer than
 * the expiration interval, then resumed; a split storm (10 % of the ranges split at once). After each event: the
 * time until balanced (sampled every simulated second); then the settling: until no fleet-signal raise for
 * SETTLE_MS (every host has looked at the signal since the last raise and refreshed its view, and every lease has
 * been renewed since: what is read after that is the steady state's, not the event's); then a steady window
 * measuring requests, RU and moves.
 */

export const EVENTS = [
  "cold-start",
  "scale-out-10pct",
  "scale-in-10pct-graceful",
  "crash-10pct",
  "rolling-restart",
  "pause-past-expiration",
  "split-storm-10pct",
] as const;
export type EventName = (typeof EVENTS)[number];

export interface SimOptions {
  /** Steady window after each event (simulated ms). */
  steadyMs: number;
  /** Longest wait for balance after an event (simulated ms). */
  balanceLimitMs: number;
  /** Events to run (default: all). */
  events?: readonly EventName[];
  lossRate?: number;
}

export interface EventResult {
  event: EventName;
  hosts: number;
  leases: number;
  /** Simulated ms from the event until balanced; null: not within balanceLimitMs. */
  balancedAfterMs: number | null;
  /** The same in acquire intervals. */
  balancedAfterAcquireIntervals: number | null;
  /**
   * For a crash or a pause, the time the leases could not be taken (their owner's last write + the expiration
   * interval, at most that long after the event) is not the balancer's: balanced after the event less the
   * expiration interval, in acquire intervals. Null for the other events.
   */
  balancedAfterExpiryAcquireIntervals: number | null;
  /** Lease moves (owner changes) from the event until balanced. */
  moves: number;
  steals: number;
  /** The most leases any live host owned while the event played out. */
  maxLeasesPerHost: number;
  /** Lease-container requests and RU from the event until balanced. */
  requests: number;
  ru: number;
  /** Simulated ms from balanced until settled (SETTLE_MS without a fleet-signal raise). */
  settledAfterMs: number;
  /** Lease-container requests and RU from balanced until settled (the tail of the event's signal waves). */
  settleRequests: number;
  settleRu: number;
  steady: {
    windowMs: number;
    /** Lease moves from balanced to the window's end (the settling included). */
    moves: number;
    requestsPerSecond: number;
    ruPerSecond: number;
    /** Requests per second and RU per second by kind ("replace", "feed", "fleet-read", …). */
    byKind: Record<string, { requestsPerSecond: number; ruPerSecond: number }>;
  };
}

export interface FleetRun {
  algorithm: Algorithm;
  hosts: number;
  leases: number;
  seed: number;
  events: EventResult[];
  doubleOwnership: number;
  doubleOwnershipSamples: string[];
  stealOverlaps: number;
  errors: number;
  errorSamples: string[];
  simulatedSeconds: number;
  /** Simulated host-seconds (hosts alive × simulated seconds). */
  hostSeconds: number;
  /** Process CPU per simulated host-second (ms). */
  cpuMsPerHostSecond: number;
  cpuSeconds: number;
}

const r2 = (n: number) => Math.round(n * 100) / 100;

/** Quiet time after the last fleet-signal raise before the steady window: one acquire and one renew interval. */
export const SETTLE_MS = TIMINGS.acquireMs + TIMINGS.renewMs;

export async function simulate(
  algorithm: Algorithm,
  hosts: number,
  leases: number,
  seed: number,
  o: SimOptions,
): Promise<FleetRun> {
  // The processor's own jitter (the 412 backoff, a failed read's backoff) draws from Math.random: seeded for the
  // run, so that a seed repeats exactly.
  const systemRandom = Math.random;
  Math.random = seededRandom(seed ^ 0x5eed);
  try {
    return await run(algorithm, hosts, leases, seed, o);
  } finally {
    Math.random = systemRandom;
  }
}

async function run(
  algorithm: Algorithm,
  hosts: number,
  leases: number,
  seed: number,
  o: SimOptions,
): Promise<FleetRun> {
  const cpu0 = process.cpuUsage();
  const fleet = new Fleet({ algorithm, leases, seed, lossRate: o.lossRate });
  const tenth = Math.max(1, Math.ceil(hosts / 10));
  const events: EventResult[] = [];
  const wanted = new Set(o.events ?? EVENTS);
  const pick = (n: number) => {
    const live = fleet.live();
    return live.filter((_, i) => i % Math.max(1, Math.floor(live.length / n)) === 0).slice(0, n);
  };

  const measure = async (
    event: EventName,
    act: () => Promise<void> | void,
    expiryBound = false,
    ready?: () => boolean,
  ) => {
    const moves0 = fleet.counts.moves;
    const steals0 = fleet.counts.steals;
    const meter0 = fleet.leases.meter.totals();
    let maxPerHost = fleet.maxPerHost();
    await act();
    const ms = await fleet.untilBalanced(
      o.balanceLimitMs,
      () => {
        maxPerHost = Math.max(maxPerHost, fleet.maxPerHost());
      },
      ready,
    );
    const meter1 = fleet.leases.meter.totals();
    // Moves from here on are steady moves (the settling included): none is expected once balanced.
    const moves1 = fleet.counts.moves;
    const settledMs = await fleet.untilQuiet(SETTLE_MS, o.balanceLimitMs);
    const meterSettled = fleet.leases.meter.totals();
    const kinds1 = fleet.leases.meter.snapshot();
    await fleet.run(o.steadyMs);
    const meter2 = fleet.leases.meter.totals();
    const kinds2 = fleet.leases.meter.snapshot();
    const byKind: EventResult["steady"]["byKind"] = {};
    for (const [kind, now] of Object.entries(kinds2)) {
      const was = kinds1[kind] ?? { requests: 0, ru: 0 };
      if (now.requests === was.requests) continue;
      byKind[kind] = {
        requestsPerSecond: r2(((now.requests - was.requests) * 1000) / o.steadyMs),
        ruPerSecond: r2(((now.ru - was.ru) * 1000) / o.steadyMs),
      };
    }
    const { leases: now } = fleet.ownership();
    events.push({
      event,
      hosts: fleet.live().length,
      leases: now,
      balancedAfterMs: ms ?? null,
      balancedAfterAcquireIntervals: ms === undefined ? null : r2(ms / TIMINGS.acquireMs),
      balancedAfterExpiryAcquireIntervals:
        !expiryBound || ms === undefined
          ? null
          : r2(Math.max(0, ms - TIMINGS.expirationMs) / TIMINGS.acquireMs),
      moves: moves1 - moves0,
      steals: fleet.counts.steals - steals0,
      maxLeasesPerHost: maxPerHost,
      requests: meter1.requests - meter0.requests,
      ru: r2(meter1.ru - meter0.ru),
      settledAfterMs: settledMs,
      settleRequests: meterSettled.requests - meter1.requests,
      settleRu: r2(meterSettled.ru - meter1.ru),
      steady: {
        windowMs: o.steadyMs,
        moves: fleet.counts.moves - moves1,
        requestsPerSecond: r2(((meter2.requests - meterSettled.requests) * 1000) / o.steadyMs),
        ruPerSecond: r2(((meter2.ru - meterSettled.ru) * 1000) / o.steadyMs),
        byKind,
      },
    });
  };

  await measure("cold-start", () => {
    fleet.add(hosts);
  });
  if (wanted.has("scale-out-10pct")) await measure("scale-out-10pct", () => void fleet.add(tenth));
  if (wanted.has("scale-in-10pct-graceful"))
    await measure("scale-in-10pct-graceful", () => fleet.stop(pick(tenth)));
  if (wanted.has("crash-10pct")) await measure("crash-10pct", () => fleet.crash(pick(tenth)), true);
  if (wanted.has("rolling-restart")) {
    await measure("rolling-restart", async () => {
      const all = fleet.live();
      for (let i = 0; i < all.length; i += tenth) {
        const batch = all.slice(i, i + tenth);
        fleet.stop(batch);
        fleet.add(batch.length);
        if (i + tenth < all.length) await fleet.run(30_000);
      }
    });
  }
  if (wanted.has("pause-past-expiration")) {
    await measure(
      "pause-past-expiration",
      async () => {
        const [victim] = pick(1);
        const pauseMs = TIMINGS.expirationMs + 30_000;
        fleet.pause(victim, pauseMs);
        await fleet.run(pauseMs);
      },
      false,
    );
  }
  if (wanted.has("split-storm-10pct")) {
    let expected = 0;
    await measure(
      "split-storm-10pct",
      () => {
        expected = fleet.ownership().leases + fleet.split(0.1);
      },
      false,
      () => fleet.ownership().leases === expected,
    );
  }

  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return {
    algorithm,
    hosts,
    leases,
    seed,
    events,
    doubleOwnership: fleet.counts.doubleOwnership,
    doubleOwnershipSamples: fleet.doubleSamples,
    stealOverlaps: fleet.counts.stealOverlaps,
    errors: fleet.counts.errors,
    errorSamples: fleet.errorSamples,
    simulatedSeconds: r2(fleet.sim.elapsed() / 1000),
    hostSeconds: Math.round(fleet.hostMs / 1000),
    cpuMsPerHostSecond: r2(cpuMs / (fleet.hostMs / 1000)),
    cpuSeconds: r2(cpuMs / 1000),
  };
}
