/** Scenario 3: many contenders on one lock name: rate, fairness, waits, overlap check. */
import { getEventListeners, setMaxListeners } from "node:events";
import type { Container } from "@azure/cosmos";
import { type LockHandle, LockHeldError } from "@cosmos-feed/locks";
import { median, percentile } from "../lib/stats.js";
import {
  CountingLockClient,
  config,
  diff,
  type EmulatorProcess,
  mark,
  round1,
  round2,
  round3,
  sleep,
} from "./setup.js";

export interface Validity {
  contender: number;
  start: number;
  end: number;
  token: number;
}

export async function contentionScenario(
  emu: EmulatorProcess,
  locksC: Container,
  variant: "library" | "poll",
) {
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
