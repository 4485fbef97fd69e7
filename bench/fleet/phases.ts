// The optional phases of bench:fleet (`-- --estimator`, `-- --emulator`, `-- --large`): each runs on its own and merges its
// results into bench/results/fleet.json under its own key, leaving the simulation's figures as they are.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { envNumber, machineFacts } from "../lib/stats.js";
import { AGREEMENT_PCT, compareWithEmulator, type EmulatorComparison } from "./emulator-run.js";
import { type EstimatorFigures, runEstimator } from "./estimator-run.js";
import type { Algorithm } from "./hosts.js";
import { tuningModel } from "./report.js";
import { EVENTS, type EventName, simulate } from "./scenarios.js";

const r2 = (n: number) => Math.round(n * 100) / 100;
/** The tuning model's tolerance against the simulation (issue 35: ±15 %), as in the main run's goals. */
const TUNING_TOLERANCE = 0.15;

function merge(resultsFile: string, key: string, value: unknown): void {
  const json = existsSync(resultsFile)
    ? JSON.parse(readFileSync(resultsFile, "utf8"))
    : { benchmark: "fleet" };
  json[key] = value;
  writeFileSync(resultsFile, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`merged '${key}' into ${resultsFile}`);
}

/**
 * `--estimator`: estimateLag over 100, 1,000 and 10,000 leases (BENCH_FLEET_ESTIMATOR_LEASES), each size
 * BENCH_FLEET_ESTIMATOR_REPEATS times (default 1), each run on a fresh emulator.
 */
export async function estimatorPhase(root: string, resultsFile: string, print: boolean): Promise<void> {
  const counts = (process.env.BENCH_FLEET_ESTIMATOR_LEASES ?? "100,1000,10000").split(",").map(Number);
  const repeats = envNumber("BENCH_FLEET_ESTIMATOR_REPEATS", 1);
  const runs: (EstimatorFigures & { repeat: number })[] = [];
  for (let repeat = 1; repeat <= repeats; repeat++)
    for (const n of counts) {
      const f = await runEstimator(n);
      runs.push({ ...f, repeat });
      console.log(
        `estimator ${n} leases (run ${repeat}): ${f.requests} metered requests (${f.requestsPerLease}/lease), ` +
          `${f.wireRequests.total} at the wire (${f.wireRequests.containerRead} container reads), ${f.ru} RU ` +
          `(${f.ruPerLease}/lease), ${f.feedReadRetries} feed reads retried, slowest request ${f.slowestRequestMs} ms, ` +
          `${f.wallMs} ms at load ${f.loadAverage1m}`,
      );
    }
  const firstRuns = runs.filter((f) => f.repeat === 1);
  const largest = firstRuns[firstRuns.length - 1];
  const smallest = firstRuns[0];
  const feedReads = (f: EstimatorFigures) => f.requestsByContainer["fleet/monitored"]?.changeFeed?.count ?? 0;
  const listingPages = (f: EstimatorFigures) => f.requestsByContainer["fleet/leases"]?.query?.count ?? 0;
  const retried = runs.filter((f) => f.feedReadRetries > 0);
  const conclusions = [
    `Requests grow linearly in leases: ${firstRuns.map((f) => `${f.requests} for ${f.leases}`).join(", ")} ` +
      `(${firstRuns.map((f) => f.requestsPerLease).join(", ")} per lease) on the emulator's meter (the data plane).`,
    `Per lease one change feed read of the monitored container (${firstRuns.map(feedReads).join(", ")} reads), plus the ` +
      `lease listing in pages (${firstRuns.map(listingPages).join(", ")} query pages): the estimate is one data-plane ` +
      "request per lease, as .NET's estimator does; a range's read cannot answer for another range's lease, so it is not batched.",
    `At the wire ${firstRuns.map((f) => `${r2(f.wireRequests.total / f.leases)}`).join(", ")} requests per lease: the SDK ` +
      `also reads the monitored container's definition once per change feed iterator (${firstRuns
        .map((f) => f.wireRequests.containerRead)
        .join(
          ", ",
        )} container reads, the estimate's own 3 among them), a metadata request the meter does not count.`,
    `RU per lease ${firstRuns.map((f) => f.ruPerLease).join(", ")}: at ${largest.leases} leases ${largest.ru} RU per estimate ` +
      `(${r2(largest.ru / smallest.ru)}× the ${smallest.leases}-lease estimate for ${r2(largest.leases / smallest.leases)}× the leases).`,
    `${runs.length} estimates (${repeats} run(s) of each size), every one complete; ${retried.length} needed a feed read ` +
      `sent again (${runs.reduce((a, f) => a + f.feedReadRetries, 0)} retries in all); slowest request ` +
      `${Math.max(...runs.map((f) => f.slowestRequestMs))} ms.`,
    `Wall time ${runs.map((f) => `${f.wallMs} ms`).join(", ")} on this shared machine (load ${runs.map((f) => f.loadAverage1m).join(", ")}): ` +
      "recorded, not judged; at most 64 leases' reads in flight (estimateLag's ESTIMATE_CONCURRENCY), default requestTimeout and readRetries.",
  ];
  for (const c of conclusions) console.log(`  - ${c}`);
  if (print) return;
  merge(resultsFile, "estimator", {
    machine: machineFacts(root),
    method:
      "estimateLag (@cosmos-feed/changefeed) from a client of its own over the embedded emulator (in memory, port 0, " +
      "throttling off). The monitored container has min(64, leases) physical ranges (the emulator's most at creation), " +
      "each cut into even EPK windows, one version-1 (EPK) lease document each, written directly in .NET's schema, " +
      'owned, with ContinuationToken "1"; 1,000 documents written before, so some leases have a backlog. Requests and ' +
      "RU: the emulator's meter delta over the estimate (both containers); wireRequests: every HTTP request of the " +
      "tool's client, counted by an SDK request plugin; wall time with the 1-minute load average. Each size " +
      `${repeats} time(s) (BENCH_FLEET_ESTIMATOR_REPEATS), a fresh emulator each.`,
    runs,
    conclusions,
  });
}

/** `--emulator`: real processors on the emulator beside the simulation (BENCH_FLEET_EMULATOR_SIZES, default 8x64,16x64,32x64). */
export async function emulatorPhase(root: string, resultsFile: string, print: boolean): Promise<void> {
  const sizes = (process.env.BENCH_FLEET_EMULATOR_SIZES ?? "8x64,16x64,32x64").split(",").map((s) => {
    const [h, l] = s.trim().split("x").map(Number);
    if (!(h >= 1 && l >= 1 && l <= 64))
      throw new Error(`BENCH_FLEET_EMULATOR_SIZES: '${s}' is not <hosts>x<leases> with at most 64 leases.`);
    return { hosts: h, leases: l };
  });
  const scale = envNumber("BENCH_FLEET_EMULATOR_SCALE", 5);
  const windowMs = envNumber("BENCH_FLEET_EMULATOR_WINDOW_S", 60) * 1000;
  const seed = envNumber("BENCH_FLEET_SEED", 1);
  const steadyMs = envNumber("BENCH_FLEET_STEADY_S", 170) * 1000;
  const loadAtStart = r2(os.loadavg()[0]);
  const runs: EmulatorComparison[] = [];
  for (const { hosts, leases } of sizes) {
    const c = await compareWithEmulator(hosts, leases, { scale, windowMs, seed, steadyMs });
    runs.push(c);
    console.log(
      `${hosts}×${leases}: emulator ${c.real.steadyRuPerSecond} RU/s ${c.real.steadyRequestsPerSecond} req/s, ` +
        `simulation ${c.simulation.steadyRuPerSecond} RU/s ${c.simulation.steadyRequestsPerSecond} req/s: ` +
        `${c.deviationPct.steadyRuPerSecond} % (${c.withinTolerance ? "within" : "outside"} ±${AGREEMENT_PCT} %)`,
    );
  }
  const conclusions = runs.map(
    (c) =>
      `${c.hosts}×${c.leases}: steady lease-container RU/s simulation ${c.simulation.steadyRuPerSecond} vs emulator ` +
      `${c.real.steadyRuPerSecond} (${c.deviationPct.steadyRuPerSecond} %), requests/s ${c.simulation.steadyRequestsPerSecond} ` +
      `vs ${c.real.steadyRequestsPerSecond} (${c.deviationPct.steadyRequestsPerSecond} %): ` +
      `${c.withinTolerance ? "agree" : "DISAGREE"} within ±${AGREEMENT_PCT} %; cold start balanced after ` +
      `${c.simulation.coldStartBalancedAcquireIntervals} (simulation) vs ${c.real.coldStartBalancedAcquireIntervals} ` +
      "(emulator, which also waits for two acquire intervals without a change of hands) acquire intervals.",
  );
  for (const c of conclusions) console.log(`  - ${c}`);
  if (print) return;
  merge(resultsFile, "emulator", {
    machine: {
      ...machineFacts(root),
      loadAverage1mAtStart: loadAtStart,
      loadAverage1mAtEnd: r2(os.loadavg()[0]),
    },
    method:
      "Real side: measureScenario (@cosmos-feed/devhost/tune) — the embedded emulator in this process over a real " +
      "socket (throttling off), H ChangeFeedProcessor instances in this one process (each with its own CosmosClient), " +
      "a monitored container with one physical range per lease (at most 64) and the lean lease container, idle, every " +
      "interval ÷ scale; steady = the emulator's lease-container meter over the window after balancing and one " +
      "expiration interval, per scenario second. Simulation: the cold start of the same size at the unscaled " +
      "intervals, its steady window after balance. Agreement: steady RU/s within ±" +
      `${AGREEMENT_PCT} %.`,
    scale,
    windowMs,
    agreementPct: AGREEMENT_PCT,
    runs,
    conclusions,
    allAgree: runs.every((c) => c.withinTolerance),
  });
}

/**
 * `--large`: this processor alone at a size the .NET model's loops make too slow to simulate beside it here
 * (BENCH_FLEET_LARGE, default 1000x10000; merged under BENCH_FLEET_LARGE_KEY, default "large", so that runs of
 * different events can sit side by side), with the events of BENCH_FLEET_LARGE_EVENTS (default: +10 % hosts, a
 * crash of 10 %, a split storm; the cold start always runs first), judged on the same goals.
 * BENCH_FLEET_LARGE_ALGORITHM=dotnet-model runs the .NET model instead (its all-leases queries make it slow: cap
 * the wait for balance with BENCH_FLEET_BALANCE_LIMIT_S, default 600).
 */
export async function largePhase(root: string, resultsFile: string, print: boolean): Promise<void> {
  const key = process.env.BENCH_FLEET_LARGE_KEY ?? "large";
  if (!/^large[A-Za-z0-9-]*$/.test(key))
    throw new Error("BENCH_FLEET_LARGE_KEY must start with 'large' (letters, digits, '-' after it).");
  const [hosts, leases] = (process.env.BENCH_FLEET_LARGE ?? "1000x10000").split("x").map(Number);
  if (!(hosts >= 1 && leases >= 1)) throw new Error("BENCH_FLEET_LARGE must be <hosts>x<leases>.");
  const events = (process.env.BENCH_FLEET_LARGE_EVENTS ?? "scale-out-10pct,crash-10pct,split-storm-10pct")
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e.length > 0) as EventName[];
  for (const e of events)
    if (!EVENTS.includes(e)) throw new Error(`BENCH_FLEET_LARGE_EVENTS: unknown event '${e}'.`);
  const algorithm = (process.env.BENCH_FLEET_LARGE_ALGORITHM ?? "ours") as Algorithm;
  if (algorithm !== "ours" && algorithm !== "dotnet-model")
    throw new Error("BENCH_FLEET_LARGE_ALGORITHM must be 'ours' or 'dotnet-model'.");
  const seed = envNumber("BENCH_FLEET_SEED", 1);
  const steadyMs = envNumber("BENCH_FLEET_STEADY_S", 170) * 1000;
  const balanceLimitMs = envNumber("BENCH_FLEET_BALANCE_LIMIT_S", 600) * 1000;
  const loadAtStart = r2(os.loadavg()[0]);
  const run = await simulate(algorithm, hosts, leases, seed, { steadyMs, balanceLimitMs, events });
  const steady = run.events[0].steady;
  const perLease = Math.round((steady.ruPerSecond / leases) * 10_000) / 10_000;
  console.log(
    `${algorithm} ${hosts}×${leases}: steady ${steady.ruPerSecond} RU/s (${perLease} per lease), ${run.simulatedSeconds} s simulated in ${run.cpuSeconds} s CPU (${run.cpuMsPerHostSecond} ms per host-s), double ownership ${run.doubleOwnership}`,
  );
  // Each steady window beside the tuning model for the fleet as it then was (hosts and leases after the event).
  const windows = run.events.map((e) => {
    const tuned = tuningModel(e.hosts, e.leases);
    const model = (algorithm === "ours" ? tuned.ours : tuned.dotnet).leaseRuPerSecond;
    return {
      event: e.event,
      hosts: e.hosts,
      leases: e.leases,
      steadyRuPerSecond: e.steady.ruPerSecond,
      ruPerSecondPerLease: Math.round((e.steady.ruPerSecond / e.leases) * 10_000) / 10_000,
      tuningModelRuPerSecond: model,
      tuningModelError: r2((model - e.steady.ruPerSecond) / e.steady.ruPerSecond),
    };
  });
  for (const [i, e] of run.events.entries())
    console.log(
      `  ${e.event.padEnd(24)} balanced ${e.balancedAfterExpiryAcquireIntervals ?? e.balancedAfterAcquireIntervals} intervals, ${e.moves} moves, max ${e.maxLeasesPerHost}/host, settled ${e.settledAfterMs / 1000} s later (${e.settleRu} RU), ${e.steady.moves} steady moves, steady ${e.steady.ruPerSecond} RU/s (model ${windows[i].tuningModelRuPerSecond}, ${Math.round(windows[i].tuningModelError * 100)} %)`,
    );
  const offModel = windows.filter((w) => Math.abs(w.tuningModelError) > TUNING_TOLERANCE);
  const perLeaseSpread =
    Math.max(...windows.map((w) => w.ruPerSecondPerLease)) /
    Math.min(...windows.map((w) => w.ruPerSecondPerLease));
  const slow = run.events.filter((e) => {
    const n = e.balancedAfterExpiryAcquireIntervals ?? e.balancedAfterAcquireIntervals;
    return n === null || n > 2;
  });
  const conclusions = [
    `Balanced within 2 acquire intervals after every event: ${slow.length === 0 ? "met" : `not met (${slow.map((e) => e.event).join(", ")})`}.`,
    `Zero lease moves in every steady window: ${run.events.every((e) => e.steady.moves === 0) ? "met" : "not met"}.`,
    `No double ownership: ${run.doubleOwnership === 0 ? "met" : `not met (${run.doubleOwnership})`}.`,
    `Steady lease-container RU/s ${steady.ruPerSecond}, ${perLease} per lease.`,
    `The tuning model's lease-container RU/s within ±${TUNING_TOLERANCE * 100} % of every steady window: ${offModel.length === 0 ? "met" : `not met (${offModel.map((w) => `${w.event}: model ${w.tuningModelRuPerSecond} vs ${w.steadyRuPerSecond}`).join("; ")})`}.`,
    `RU/s per lease across the steady windows: ${windows.map((w) => w.ruPerSecondPerLease).join(", ")} (the highest ${r2(perLeaseSpread)}× the lowest).`,
  ];
  for (const c of conclusions) console.log(`  - ${c}`);
  if (print) return;
  merge(resultsFile, key, {
    machine: {
      ...machineFacts(root),
      loadAverage1mAtStart: loadAtStart,
      loadAverage1mAtEnd: r2(os.loadavg()[0]),
    },
    method:
      algorithm === "ours"
        ? "The simulation of the main run (the real processor on the simulated clock over the in-memory lease " +
          "container), this processor only, for the events listed."
        : "The simulation of the main run, the model of the .NET processor's lease loops only (a model for " +
          `comparison, not the .NET processor), for the events listed; balance waited for at most ${balanceLimitMs / 1000} s.`,
    algorithm,
    balanceLimitMs,
    run,
    ruPerSecondPerLease: perLease,
    windows,
    conclusions,
  });
}
