/**
 * Durable task hub benchmark (packages/devhost/src/durable: CosmosTaskHub through its public API) against the embedded
 * emulator in a child process, with the same orchestrations replayed in memory by the project's test helper as
 * the peer in the same run. Writes bench/results/durable.json (see docs/bench-durable.md).
 *
 *   npm run bench:durable              = node --expose-gc --import tsx bench/durable.bench.ts
 *   npm run bench:durable -- --quick   small counts, a smoke run for CI: prints, leaves the JSON alone
 *
 *   1. sequence — 3-activity orchestrations one at a time: p50/p95 start → completed (and how it was observed)
 *   2. burst    — N started at once through the extension's HTTP API (createDurableApiHandler): starts answered/s,
 *                 completed/s
 *   3. fan-out  — one orchestration calling N activities at once: start → completed
 *   4. slow     — K 3-activity orchestrations started 100 ms after one whose activity takes 5 s, vs alone
 *   5. cost     — RU and requests per 3-activity orchestration on the hub's container and its lease container, from
 *                 the emulator's own meter minus the bench's observation requests (measured in 1, and over 2)
 *   6. memory   — RSS after 1,000 and after 10,000 orchestrations (batches of 100), after global.gc
 *   7. entities — signals/s to one entity and to 100 entities, callEntity round trip (bench/durable/entities.ts)
 *
 *   BENCH_DURABLE_ONLY=entities npm run bench:durable   runs phase 7 alone and merges its figures into the JSON
 *                                                       (key `entities`), leaving the other phases' as they were
 *
 * Exits 1 when an orchestration did not complete or returned a wrong output, or the observer tally disagreed with
 * the meter (`functionalProblems`): speed is judged in `goals`, never by the exit code.
 *
 * Knobs (environment): BENCH_DURABLE_SEQ_RUNS, BENCH_DURABLE_WARMUP, BENCH_DURABLE_BURST, BENCH_DURABLE_FANOUT,
 * BENCH_DURABLE_SLOW_ROUNDS, BENCH_DURABLE_MEMORY_FIRST, BENCH_DURABLE_MEMORY_TOTAL, BENCH_DURABLE_MEMORY_BUDGET_S,
 * BENCH_DURABLE_IDLE_MS, BENCH_DURABLE_TIMEOUT_S, BENCH_DURABLE_LABEL (recorded: what build this run measures);
 * the hub's own DURABLE_* settings are read as the dev host reads them. The scenarios are in bench/durable/
 * (setup, workload, observe, tally, measure, scenarios, memory, peer, report); statistics and child-process
 * helpers in bench/lib.
 */
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { readDurableHubSettings } from "@cosmos-feed/devhost/durable";
import { entitiesScenario, entityProblems } from "./durable/entities.js";
import type { Bench } from "./durable/measure.js";
import { memoryScenario } from "./durable/memory.js";
import { peerScenarios } from "./durable/peer.js";
import {
  durabilityCost,
  functionalProblems,
  GOALS,
  git,
  goalsOf,
  METHOD,
  notesOf,
  type Results,
} from "./durable/report.js";
import {
  burstScenario,
  fanOutScenario,
  sequenceScenario,
  slowNeighbourScenario,
} from "./durable/scenarios.js";
import { config, DB, newClient, RESULTS_FILE, ROOT, startEmulatorChild } from "./durable/setup.js";
import { ObserverTally } from "./durable/tally.js";
import { machineFacts, round2 } from "./lib/stats.js";

async function main(): Promise<void> {
  const began = performance.now();
  const machine = {
    ...machineFacts(ROOT),
    loadAverage1mAtStart: round2(os.loadavg()[0]),
    loadAverage1mAtEnd: 0,
  };
  console.log(
    `durable bench${config.quick ? " (--quick)" : ""}: ${machine.cpuCount} × ${machine.cpuModel}, node ${machine.node}, load ${machine.loadAverage1mAtStart}`,
  );
  const emu = await startEmulatorChild();
  const tally = new ObserverTally();
  const client = newClient(emu, tally);
  try {
    const { database: db } = await client.databases.create({ id: DB });
    const b = { emu, db, tally };
    const step: Step = async (label, run, line) => {
      const t = performance.now();
      const r = await run();
      console.log(`${label} (${Math.round((performance.now() - t) / 1000)} s): ${line(r)}`);
      return r;
    };
    if (ONLY === "entities") {
      await entitiesAlone(b, step, machine, began);
      return;
    }
    if (ONLY === "core") {
      await coreAlone(b, step, machine);
      return;
    }
    const { sequence, burst } = await sequenceAndBurst(b, step);
    const fanOut = await step(
      "3. fan-out",
      () => fanOutScenario(b),
      (r) =>
        r.completed
          ? `${r.activities} activities in ${r.seconds} s`
          : `not completed in ${r.timeoutSeconds} s (${r.lastStatus})`,
    );
    const slowNeighbour = await step(
      "4. slow neighbour",
      () => slowNeighbourScenario(b),
      (r) =>
        `p50 ${r.besideSlowMs.p50} ms beside the slow one vs ${r.aloneMs.p50} ms alone (+${r.addedP50Ms} ms)`,
    );
    const memory = await step(
      "6. memory",
      () => memoryScenario(b),
      (r) =>
        `RSS ${r.atFirst?.rssMb} MB after ${r.atFirst?.orchestrations}, ${r.atEnd?.rssMb} MB after ${r.reached} (×${r.rssRatio})`,
    );
    const entities = await step("7. entities", () => entitiesScenario(b), entitiesLine);
    const peer = await step(
      "peer (in memory)",
      () => peerScenarios(),
      (r) =>
        `p50 ${r.sequence.latencyMs.p50} ms; ${r.burst.completedPerSec}/s; fan-out ${r.fanOut.seconds} s`,
    );
    const results: Results = { sequence, burst, fanOut, slowNeighbour, memory, peer };
    machine.loadAverage1mAtEnd = round2(os.loadavg()[0]);
    const goals = goalsOf(results);
    const output = {
      machine,
      config: {
        ...config,
        label: process.env.BENCH_DURABLE_LABEL ?? null,
        /** The commit checked out when the bench ran, and whether packages/devhost/src/durable differed from it. */
        gitHead: git("rev-parse --short HEAD"),
        gitDirtyDurable: git("status --porcelain packages/devhost/src/durable") !== "",
        hubSettings: readDurableHubSettings(process.env),
        durationSeconds: Math.round((performance.now() - began) / 1000),
        method: METHOD,
      },
      /** Orchestrations that did not complete or were wrong, a tally that disagreed: the bench exits 1. */
      functionalProblems: [...functionalProblems(results), ...entityProblems(entities)],
      goals,
      goalLimits: GOALS,
      durabilityCost: durabilityCost(results),
      notes: notesOf(results, goals, {
        start: machine.loadAverage1mAtStart,
        end: machine.loadAverage1mAtEnd,
        cores: machine.cpuCount,
      }),
      ...results,
      entities: { ...entities, loadAverage1m: round2(os.loadavg()[0]) },
    };
    for (const n of output.notes) console.log(`- ${n}`);
    if (config.quick) {
      console.log(`\n--quick: ${RESULTS_FILE} left alone (${output.config.durationSeconds} s).`);
      if (process.env.BENCH_PRINT_JSON) console.log(JSON.stringify(output, null, 2));
    } else {
      writeFileSync(RESULTS_FILE, `${JSON.stringify(output, null, 2)}\n`);
      console.log(`\nwrote ${RESULTS_FILE} in ${output.config.durationSeconds} s`);
    }
    if (output.functionalProblems.length > 0) {
      console.error(`FUNCTIONAL PROBLEMS:\n${output.functionalProblems.map((p) => `  ${p}`).join("\n")}`);
      process.exitCode = 1;
    }
  } finally {
    client.dispose();
    await emu.close();
  }
}

/**
 * `BENCH_DURABLE_ONLY=entities`: phase 7 alone (its figures merged into the JSON written by a full run);
 * `BENCH_DURABLE_ONLY=core`: phases 1, 2 and 5 alone, printed, the JSON left alone (profiling the hot path).
 */
const ONLY = process.env.BENCH_DURABLE_ONLY;

type Step = <T>(label: string, run: () => Promise<T>, line: (r: T) => string) => Promise<T>;

/** Scenarios 1 and 2, each printed as it ends: the full run's first two and the `core` phase's only ones. */
async function sequenceAndBurst(b: Bench, step: Step) {
  const sequence = await step(
    "1. sequence",
    () => sequenceScenario(b),
    (r) =>
      `p50 ${r.latencyMs.p50} ms, p95 ${r.latencyMs.p95} ms; ${r.cost.hubContainer.ru} RU, ${r.cost.hubContainer.requests} requests per orchestration`,
  );
  const burst = await step(
    "2. burst",
    () => burstScenario(b),
    (r) =>
      `starts answered ${r.starts.answeredPerSec}/s, ${r.ended}/${r.orchestrations} ended, ${r.completedPerSec} completed/s`,
  );
  return { sequence, burst };
}

const entitiesLine = (r: Awaited<ReturnType<typeof entitiesScenario>>) =>
  `one entity ${r.oneEntitySignalsPerSec} signals/s, 100 entities ${r.manyEntitiesSignalsPerSec} signals/s, callEntity round trip p50 ${r.callEntityRoundTripP50Ms} ms (medians of ${r.rounds.length} rounds)`;

/**
 * Runs phases 1 and 2 (and 5, measured inside them) alone and prints their latency, rate, cost and CPU per
 * orchestration in both processes: a profile run (node --cpu-prof through NODE_OPTIONS reaches the emulator
 * child too). Writes nothing.
 */
async function coreAlone(
  b: Bench,
  step: Step,
  machine: ReturnType<typeof machineFacts> & { loadAverage1mAtStart: number; loadAverage1mAtEnd: number },
): Promise<void> {
  const { sequence, burst } = await sequenceAndBurst(b, step);
  const facts = { loadAverage1m: { start: machine.loadAverage1mAtStart, end: round2(os.loadavg()[0]) } };
  console.log(JSON.stringify({ ...facts, sequence, burst }, null, 2));
  const problems = [
    ...(sequence.notCompleted + sequence.wrongOutputs > 0
      ? [`scenario 1: ${sequence.notCompleted} not completed, ${sequence.wrongOutputs} wrong`]
      : []),
    ...(burst.completedCorrectly < burst.orchestrations
      ? [`scenario 2: ${burst.orchestrations - burst.completedCorrectly} not completed correctly`]
      : []),
  ];
  if (problems.length > 0) {
    console.error(`FUNCTIONAL PROBLEMS:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    process.exitCode = 1;
  }
}

/** Runs phase 7 alone; merges it into the results file (the other phases' figures and facts left as they were). */
async function entitiesAlone(
  b: Bench,
  step: Step,
  machine: ReturnType<typeof machineFacts> & { loadAverage1mAtStart: number; loadAverage1mAtEnd: number },
  began: number,
): Promise<void> {
  const entities = await step("7. entities", () => entitiesScenario(b), entitiesLine);
  const block = {
    ...entities,
    /** This phase ran alone: its own machine facts, load and build (the rest of the file is another run's). */
    ranAlone: {
      machine: { ...machine, loadAverage1mAtEnd: round2(os.loadavg()[0]) },
      gitHead: git("rev-parse --short HEAD"),
      gitDirtyDurable: git("status --porcelain packages/devhost/src/durable") !== "",
      hubSettings: readDurableHubSettings(process.env),
      config: config.entities,
      durationSeconds: Math.round((performance.now() - began) / 1000),
    },
  };
  if (config.quick) {
    console.log(`\n--quick: ${RESULTS_FILE} left alone.`);
    if (process.env.BENCH_PRINT_JSON) console.log(JSON.stringify(block, null, 2));
  } else {
    const all = JSON.parse(readFileSync(RESULTS_FILE, "utf8")) as Record<string, unknown>;
    all.entities = block;
    writeFileSync(RESULTS_FILE, `${JSON.stringify(all, null, 2)}\n`);
    console.log(`\nmerged phase 7 into ${RESULTS_FILE}`);
  }
  const problems = entityProblems(entities);
  if (problems.length > 0) {
    console.error(`FUNCTIONAL PROBLEMS:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    process.exitCode = 1;
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
