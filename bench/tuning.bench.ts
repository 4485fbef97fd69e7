/**
 * Lease cost model vs measurement (issue 13): each scenario below runs as `cosmos-feed tune --measure` does — the
 * embedded emulator over a real socket, one real ChangeFeedProcessor per host in this process, a Poisson writer,
 * every interval ÷ BENCH_TUNING_SCALE — and every model row is put next to its measured value per scenario hour.
 *
 *   npm run bench:tuning        → bench/results/tuning.json (docs/tuning.md quotes it)
 *
 * Knobs (environment): BENCH_TUNING_SCALE (10), BENCH_TUNING_WINDOW_S (45, wall-clock seconds per scenario),
 * BENCH_TUNING_ONLY (comma-separated scenario names: runs those and prints, leaves the JSON alone).
 * The conclusions printed and stored are computed from the measurements (bench/lib/tuning-conclusions.ts).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { TuningInput } from "@cosmos-feed/changefeed/tuning";
import {
  checkMeasureRequest,
  compareWithMeasurement,
  MeasureDefaults,
  type MeasureResult,
  measureScenario,
  readInteropMeasurement,
} from "@cosmos-feed/devhost/tune";
import { envNumber, machineFacts, round1, round2 } from "./lib/stats.js";
import { conclusions } from "./lib/tuning-conclusions.js";
import { tuningDefaults } from "./lib/tuning-defaults.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const RESULTS_FILE = join(ROOT, "bench", "results", "tuning.json");
const scale = envNumber("BENCH_TUNING_SCALE", MeasureDefaults.scale);
const windowS = envNumber("BENCH_TUNING_WINDOW_S", 45);
const only = process.env.BENCH_TUNING_ONLY?.split(",").map((s) => s.trim());

interface Scenario {
  name: string;
  what: string;
  input: TuningInput;
}

/** A scenario on Microsoft's defaults (renew 17 s, acquire 13 s, expiration 60 s, poll 5 s), idle unless `extra` says. */
const scenario = (
  name: string,
  what: string,
  hosts: number,
  leases: number,
  extra: Partial<TuningInput> = {},
): Scenario => ({ name, what, input: tuningDefaults(hosts, leases, extra) });

const hostsX32 = (h: number) => `${h} host${h === 1 ? "" : "s"} × 32 leases`;

const SCENARIOS: Scenario[] = [
  ...[1, 4, 16].map((h) =>
    scenario(`defaults-${h}x32-idle`, `Microsoft's defaults, ${hostsX32(h)}, idle`, h, 32),
  ),
  ...[1, 4, 16].map((h) =>
    scenario(`defaults-${h}x32-10cps`, `Microsoft's defaults, ${hostsX32(h)}, 10 changes/s`, h, 32, {
      writesPerSecond: 10,
    }),
  ),
  scenario(
    "defaults-4x32-1cps",
    "Microsoft's defaults, 4 hosts × 32 leases, 1 change/s: leases both checkpoint and renew",
    4,
    32,
    { writesPerSecond: 1 },
  ),
  scenario("expiration-40s-4x32-idle", "expiration 40 s (else defaults), 4 × 32, idle", 4, 32, {
    leaseExpirationIntervalMs: 40_000,
  }),
  scenario("expiration-120s-4x32-idle", "expiration 120 s (else defaults), 4 × 32, idle", 4, 32, {
    leaseExpirationIntervalMs: 120_000,
  }),
  scenario("renew-8s-4x32-idle", "renew 8 s (else defaults), 4 × 32, idle", 4, 32, {
    leaseRenewIntervalMs: 8_000,
  }),
  scenario("watch-off-4x32-idle", "lease watch off (leaseWatchInterval 0), 4 × 32, idle", 4, 32, {
    leaseWatchIntervalMs: 0,
  }),
  scenario("poll-1s-4x32-10cps", "poll 1 s (else defaults), 4 × 32, 10 changes/s", 4, 32, {
    feedPollDelayMs: 1_000,
    writesPerSecond: 10,
  }),
  scenario("busy-4x8-20cps-poll-1s", "4 × 8, 20 changes/s, poll 1 s: most polls find changes", 4, 8, {
    feedPollDelayMs: 1_000,
    writesPerSecond: 20,
  }),
];

function rowLine(r: MeasureResult["rows"][number]): string {
  const p = (v: number | null) => (v === null ? "—" : `${v > 0 ? "+" : ""}${v.toFixed(1)}%`);
  return `    ${`${r.container}: ${r.what}`.padEnd(52)} model ${String(Math.round(r.model.requestsPerHour)).padStart(7)}/h measured ${String(r.measured.requestsPerHour).padStart(7)}/h ${p(r.deviationPct.requests).padStart(8)}  RU ${p(r.deviationPct.ru).padStart(8)}${r.meaningful ? "" : " (too few)"}`;
}

async function main(): Promise<void> {
  const machine = { ...machineFacts(ROOT), loadAverage1mAtStart: round2(os.loadavg()[0]) };
  const chosen = only ? SCENARIOS.filter((s) => only.includes(s.name)) : SCENARIOS;
  if (chosen.length === 0) throw new Error(`BENCH_TUNING_ONLY names no scenario: ${only?.join(", ")}`);
  console.log(
    `tuning bench: ${chosen.length} scenarios, intervals ÷ ${scale}, ${windowS} s windows; ${machine.cpuCount} × ${machine.cpuModel}, load ${machine.loadAverage1mAtStart}`,
  );
  const began = Date.now();
  const results: { name: string; what: string; result: MeasureResult }[] = [];
  const failed: { name: string; error: string }[] = [];
  for (const s of chosen) {
    const req = checkMeasureRequest({ scenario: s.input, scale, windowMs: windowS * 1000 });
    const t0 = Date.now();
    let result: MeasureResult;
    try {
      result = await measureScenario(req);
    } catch (e) {
      // One scenario failing (e.g. hosts that never balance on a loaded machine) is reported, the rest still run.
      failed.push({ name: s.name, error: (e as Error).message });
      console.log(`  ${s.name}: FAILED: ${(e as Error).message}`);
      continue;
    }
    results.push({ name: s.name, what: s.what, result });
    console.log(
      `  ${s.name}: ${result.goal.within}/${result.goal.judged} rows within ±${result.goal.pct} %, bootstrap ${result.bootstrap.measured} (model ${result.bootstrap.model}), ${round1((Date.now() - t0) / 1000)} s`,
    );
    for (const r of result.rows) console.log(rowLine(r));
  }
  const concl = conclusions(results);
  // The .NET column has no processor of ours to measure here: bench:interop measured the real one (4 × 32 idle at
  // Microsoft's defaults); the model is judged against that stored measurement with the same ±15 % goal.
  const interop = readInteropMeasurement();
  const dotnetMeasured = interop && compareWithMeasurement(tuningDefaults(4, 32), interop);
  if (dotnetMeasured) {
    const pct = (x: number) => `${x > 0 ? "+" : ""}${x} %`;
    concl.push(
      `.NET (bench:interop, ${dotnetMeasured.date.slice(0, 10)}): measured ${dotnetMeasured.documentRequestsPerHour} lease requests/h (${dotnetMeasured.requestsPerHour} with query plans) vs the model's ${dotnetMeasured.modelRequestsPerHour}: ${pct(dotnetMeasured.deviationPct)} / ${pct(dotnetMeasured.deviationWithQueryPlansPct)} — ${dotnetMeasured.withinTolerance ? "within" : "outside"} ±${MeasureDefaults.goalPct} %`,
    );
  }
  console.log("\nconclusions:");
  for (const c of concl) console.log(`  - ${c}`);
  if (only) return;
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  const output = {
    machine: { ...machine, loadAverage1mAtEnd: round2(os.loadavg()[0]), sharedMachine: true },
    method:
      "Each scenario: the embedded emulator in this process over a real socket (throttling off), a monitored container with one physical range per lease and the app's lean lease container (containers.json), H real ChangeFeedProcessors (one CosmosClient each) and a Poisson writer at the scenario's rate × scale; every interval (renew, acquire, expiration, safety margin, poll, watch, maxCheckpointDelay) ÷ scale. Phases: seeding, balancing (every lease owned, shares even, no change of hands for two acquire intervals), settling (one expiration interval), measuring (the window). Measured = the emulator's RU meter delta over the window (lease and monitored containers) plus the processors' events (checkpointed, acquired, released) and handler calls (pages, documents); per scenario hour = count × 3.6e6 / (window ms × scale). Renewals = lease replaces − checkpoints − acquires − releases; monitored pages = handler calls, empty reads = feed reads − pages. Rows whose model count in the window is below 20 are not judged.",
    scale,
    windowSeconds: windowS,
    goalPct: MeasureDefaults.goalPct,
    durationSeconds: round1((Date.now() - began) / 1000),
    scenarios: results.map(({ name, what, result }) => ({ name, what, ...result })),
    failed,
    dotnetMeasured: dotnetMeasured ?? null,
    conclusions: concl,
  };
  writeFileSync(RESULTS_FILE, `${JSON.stringify(output, null, 2)}\n`);
  console.log(`\nwritten: ${RESULTS_FILE}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
