/**
 * The processor at fleet scale (issue 35), simulated on the real code: for each size, N hosts of the real
 * ChangeFeedProcessor (load balancer, renewer, lease watch, hand-off planner, bootstrapper, lease store) in this
 * process on one simulated clock, over an in-memory lease container with Cosmos DB's semantics and the emulator's
 * RU charges (bench/fleet/), and in the same run the same scenarios for a model of the .NET processor's lease
 * loops (bench/fleet/dotnet-model.ts, a model for comparison only). Seeded: a run repeats exactly.
 *
 *   npm run bench:fleet         → bench/results/fleet.json (docs/bench-fleet.md quotes it)
 *   npm run bench:fleet -- --estimator   the lag estimator at 100, 1,000, 10,000 leases on the emulator (key "estimator")
 *   npm run bench:fleet -- --emulator    real processors on the emulator beside the simulation (key "emulator")
 *   npm run bench:fleet -- --large       ours alone at 1,000 × 10,000 (BENCH_FLEET_LARGE, _EVENTS, _KEY; key "large";
 *                                        BENCH_FLEET_LARGE_ALGORITHM=dotnet-model: the .NET model alone,
 *                                        BENCH_FLEET_BALANCE_LIMIT_S caps each wait for balance)
 *
 * Knobs (environment): BENCH_FLEET_SIZES (hosts×leases, comma-separated; default 10x100,30x300,50x500,100x1000),
 * BENCH_FLEET_SEED (1), BENCH_FLEET_STEADY_S (170: five renewal periods of 34 s), BENCH_FLEET_LOSS (0: the share of
 * requests lost, never answered), BENCH_FLEET_ONLY_PRINT=1 (print, leave the JSON alone).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { TIMINGS } from "./fleet/hosts.js";
import { emulatorPhase, estimatorPhase, largePhase } from "./fleet/phases.js";
import { goals, type SizeSummary, summarize } from "./fleet/report.js";
import { type FleetRun, SETTLE_MS, simulate } from "./fleet/scenarios.js";
import { envNumber, machineFacts } from "./lib/stats.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const RESULTS_FILE = join(ROOT, "bench", "results", "fleet.json");
const onlyPrint = process.env.BENCH_FLEET_ONLY_PRINT === "1";
// The optional phases run on their own and merge their key into fleet.json (bench/fleet/phases.ts).
if (["--estimator", "--emulator", "--large"].some((f) => process.argv.includes(f))) {
  if (process.argv.includes("--estimator")) await estimatorPhase(ROOT, RESULTS_FILE, onlyPrint);
  if (process.argv.includes("--emulator")) await emulatorPhase(ROOT, RESULTS_FILE, onlyPrint);
  if (process.argv.includes("--large")) await largePhase(ROOT, RESULTS_FILE, onlyPrint);
  process.exit(0);
}
const sizes = (process.env.BENCH_FLEET_SIZES ?? "10x100,30x300,50x500,100x1000").split(",").map((s) => {
  const [h, l] = s.trim().split("x").map(Number);
  if (!(h >= 1 && l >= 1)) throw new Error(`BENCH_FLEET_SIZES: '${s}' is not <hosts>x<leases>.`);
  return { hosts: h, leases: l };
});
const seed = envNumber("BENCH_FLEET_SEED", 1);
const steadyMs = envNumber("BENCH_FLEET_STEADY_S", 170) * 1000;
const lossRate = Number(process.env.BENCH_FLEET_LOSS ?? 0);
if (!(lossRate >= 0 && lossRate < 1))
  throw new Error(`BENCH_FLEET_LOSS must be in [0, 1); got '${lossRate}'.`);
const options = { steadyMs, balanceLimitMs: 600_000, lossRate };

const runs: FleetRun[] = [];
const summaries: SizeSummary[] = [];
for (const { hosts, leases } of sizes) {
  const pair: FleetRun[] = [];
  for (const algorithm of ["ours", "dotnet-model"] as const) {
    const run = await simulate(algorithm, hosts, leases, seed, options);
    pair.push(run);
    runs.push(run);
    console.log(
      `${algorithm.padEnd(12)} ${hosts}×${leases}: steady ${run.events[0].steady.ruPerSecond} RU/s, ` +
        `${run.simulatedSeconds} s simulated in ${run.cpuSeconds} s CPU, double ownership ${run.doubleOwnership}`,
    );
    for (const e of run.events) {
      console.log(
        `  ${e.event.padEnd(24)} balanced ${String(e.balancedAfterAcquireIntervals).padStart(6)} intervals, ` +
          `${String(e.moves).padStart(5)} moves, max ${e.maxLeasesPerHost}/host, steady ${e.steady.ruPerSecond} RU/s, ` +
          `${e.steady.moves} steady moves`,
      );
    }
  }
  summaries.push(summarize(pair[0], pair[1]));
}

const conclusions = goals(runs, summaries);
for (const g of conclusions)
  console.log(`${g.met ? "MET    " : "NOT MET"} ${g.goal}${g.met ? "" : `: ${g.failures.join("; ")}`}`);

const largest = Math.max(...sizes.map((s) => s.hosts * s.leases));
const results = {
  benchmark: "fleet",
  machine: machineFacts(ROOT),
  method:
    "The real processor (createChangeFeedProcessor, every role) for N hosts in one process on one simulated clock " +
    "(bench/fleet/sim-clock.ts), over an in-memory lease container with the service's semantics for what the " +
    "processor does (ETag conditions and 412, 404, 409, its latest-version change feed, _ts; 1–4 ms one-way latency; " +
    "RU from the emulator's charge model) and an idle monitored container whose ranges can split (410). Beside it, " +
    "the same scenarios for a MODEL of the .NET processor's documented lease loops (bench/fleet/dotnet-model.ts; " +
    "for comparison only). After each event: until balanced, then until settled (no fleet-signal raise for one " +
    "acquire and one renew interval), then the steady window. Steady figures: the idle fleet after its cold start, " +
    "over the steady window. Double " +
    "ownership: a lease two running hosts each believe they hold (checked at every instant a host starts believing " +
    "one, and when a paused host resumes), except the victim of a steal that has not noticed yet (stealOverlaps).",
  timings: {
    ...TIMINGS,
    steadyWindowMs: steadyMs,
    settleMs: SETTLE_MS,
    balanceLimitMs: options.balanceLimitMs,
  },
  lossRate,
  seed,
  sizes: summaries,
  goals: conclusions,
  notRun:
    largest >= 1000 * 10_000
      ? []
      : [
          "1,000 hosts × 10,000 leases beside the .NET model: its all-leases queries make it too slow to simulate " +
            "here; ours alone at that size is the `-- --large` phase (key `large`), and BENCH_FLEET_SIZES=1000x10000 " +
            "runs both.",
        ],
  runs,
};
if (!onlyPrint) {
  // The phases' keys (--estimator, --emulator, --large's "large…") are kept: they were measured apart.
  const previous = existsSync(RESULTS_FILE) ? JSON.parse(readFileSync(RESULTS_FILE, "utf8")) : {};
  const kept = Object.fromEntries(
    Object.keys(previous)
      .filter((k) => k === "estimator" || k === "emulator" || k.startsWith("large"))
      .map((k) => [k, previous[k]]),
  );
  writeFileSync(RESULTS_FILE, `${JSON.stringify({ ...results, ...kept }, null, 2)}\n`);
  console.log(`wrote ${RESULTS_FILE}`);
}
process.exit(0);
