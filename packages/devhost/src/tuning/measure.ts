/**
 * `cosmos-feed tune --measure` (`@cosmos-feed/devhost/tune`): runs a tuning scenario on the embedded emulator, over a real socket, with real
 * processors (one ChangeFeedProcessor per host, in this process) and a real writer, with every interval divided by
 * `scale`; reads the emulator's RU meter and the processors' own counters and events over a wall-clock window, and
 * puts each row of the lease cost model (packages/changefeed/src/tuning/model.ts) next to its measured value per scenario hour.
 *
 * Phases: seeding (a few documents per range), balancing (until every lease is owned, each host has its share and
 * no lease changed hands for two acquire intervals), settling (one expiration interval, so start-up writes are
 * over and renewals are on their own schedule), measuring (the window). docs/tuning.md describes the method.
 */
import { abortableSleep } from "@cosmos-feed/core/cosmos/retry";
import { addHosts, openFleet, seedContainers, waitUntilBalanced } from "./fleet.js";
import type { CheckedMeasureRequest } from "./request.js";
import { bootstrapRequests, measureResult } from "./result.js";
import type { MeasureResult, Phase, ProgressFn } from "./types.js";
import { startWriter } from "./writer.js";

/** Sleeps `ms`, reporting progress every ~1/40 of it. */
async function progressSleep(ms: number, phase: Phase, progress: ProgressFn | undefined): Promise<void> {
  const t0 = performance.now();
  const step = Math.max(50, Math.min(1_000, ms / 40));
  for (;;) {
    const left = t0 + ms - performance.now();
    progress?.(phase, Math.min(1, (ms - left) / ms));
    if (left <= 0) return;
    await abortableSleep(Math.min(step, left));
  }
}

/**
 * Runs one measurement (the request from checkMeasureRequest), telling `progress` of each phase; the emulator and
 * every processor are stopped before it returns. Takes about the settling phase (one scaled expiration interval)
 * plus `windowMs` plus the seeding and balancing time; throws when the hosts do not balance in time.
 */
export async function measureScenario(
  req: CheckedMeasureRequest,
  progress?: ProgressFn,
): Promise<MeasureResult> {
  const { scenario, scaled, scale, windowMs } = req;
  const phasesMs: Record<Phase, number> = { seeding: 0, balancing: 0, settling: 0, measuring: 0 };
  const fleet = await openFleet();
  const { emu, processors } = fleet;
  let stopWriter = () => {};
  try {
    // Seeding: the containers and a few documents in each range.
    let t = Date.now();
    const { monitored, leases } = await seedContainers(fleet.newClient(), scenario.leases, progress);
    phasesMs.seeding = Date.now() - t;

    // The writer runs from here to the end, at the scenario's rate × scale per wall-clock second.
    const writer = startWriter(monitored, scenario.writesPerSecond * scale);
    stopWriter = writer.stop;

    // Balancing: H processors, each with its own client (its own connections), as H hosts would.
    t = Date.now();
    const beforeStart = emu.meter.snapshot();
    const hosts = addHosts(fleet, scenario.hosts, scaled, { monitored: monitored.id, leases: leases.id });
    const { tallies } = hosts;
    await Promise.all(processors.map((p) => p.start()));
    await waitUntilBalanced(processors, tallies, scenario.leases, scaled, t, progress);
    const afterBalance = emu.meter.snapshot();
    progress?.("balancing", 1);
    phasesMs.balancing = Date.now() - t;
    const bootstrapByKind = bootstrapRequests(beforeStart, afterBalance, tallies, processors);

    // Settling: one expiration interval.
    t = Date.now();
    await progressSleep(scaled.leaseExpirationInterval, "settling", progress);
    phasesMs.settling = Date.now() - t;

    // Measuring.
    t = Date.now();
    const tally0 = tallies.map((x) => ({ ...x }));
    const counters0 = processors.map((p) => ({ ...p.counters.count }));
    const written0 = writer.stats();
    const m0 = emu.meter.snapshot();
    hosts.measuring = true;
    const w0 = performance.now();
    await progressSleep(windowMs, "measuring", progress);
    const m1 = emu.meter.snapshot();
    const wallMs = performance.now() - w0;
    hosts.measuring = false;
    const written1 = writer.stats();
    const counters1 = processors.map((p) => ({ ...p.counters.count }));
    const tally1 = tallies.map((x) => ({ ...x }));
    phasesMs.measuring = Date.now() - t;
    const owned = processors.map((p) => p.ownedLeaseTokens().length);
    stopWriter();
    await Promise.all(processors.map((p) => p.stop()));
    processors.length = 0;

    return measureResult({
      req,
      phasesMs,
      wallMs,
      m0,
      m1,
      tally0,
      tally1,
      counters0,
      counters1,
      written0,
      written1,
      owned,
      bootstrapByKind,
    });
  } finally {
    stopWriter();
    await fleet.close();
  }
}
