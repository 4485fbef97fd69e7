/**
 * App benchmark: the dev host's cost on the app's own HTTP path, PUT throughput under the subscription lock, how
 * soon the change feed trigger sees a write, and the app end to end — PUTs → operations Succeeded — measured from
 * outside the dev host as a client sees it. Writes bench/results/app.json (see docs/bench-app.md).
 *
 *   npm run bench:app                 (builds dist/ first; ~11 minutes)
 *   npm run bench:app -- --quick      (a short smoke run of every phase; the JSON is left alone)
 *   npm run bench:app -- --modes [serverless,manual]   (only: the flows phase on `npm start` per throughput mode;
 *                                     bench/results/app-modes.json — bench/app/modes.ts)
 *   npm run bench:app -- --cost       (only: requests and RU per flow by container and reason, 1 and 200 flows, against
 *                                     the goal of ≤ 100 RU per flow; bench/results/app-cost.json — bench/app/cost.ts)
 *   npm run bench:app -- --cost --baseline main   (the same, beside the app at that commit in the same run:
 *                                     bench/app/cost-baseline.ts)
 *
 *   1. http    — GET one resource: the dev host vs the SAME exported handler on bare node:http (in this process).
 *   4. flows   — N PUTs at once (N = 1, 100, 200) to a dev host child; every operation URL read at a bounded rate
 *                until Succeeded: flows/s, p50/p95 accepted → Succeeded, the reads the bench made; the same storm
 *                against a host with the reactions trigger disabled (the PUTs alone) as the ceiling; the old
 *                bench's poll (every operation every 20 ms) reproduced once as a diagnostic.
 *   2. put     — PUT throughput with `concurrency` clients: over 100 subscriptions vs one hot one.
 *   3. trigger — write (PUT acknowledged) → the reactions trigger's record, at FEED_POLL_DELAY_MS 1000 and 200.
 *   5. concurrency — a fixture app's `noop` and `busy` (spins 0–10 ms) through the dev host (host + worker
 *                process) vs the SAME handler module on bare node:http, each server a child process: single-request
 *                overhead, p50/p99/req/s at 1, 32 and 256 closed-loop clients; optionally the dev host from before
 *                the worker process (BENCH_BEFORE_CHECKOUT) as a third server.
 *
 * Order: 1, 4 (on quiet hosts: no backlog), 2 (on phase 4's app host), 3, 5. Every host child of phases 1–4 has
 * its own emulator child. Knobs (environment): BENCH_HTTP_ROUNDS, BENCH_HTTP_OPS, BENCH_CONCURRENCY, BENCH_PUT_S,
 * BENCH_TRIGGER_WRITES, BENCH_FLOW_ROUNDS, BENCH_SINGLE_FLOWS, BENCH_STATUS_READS_PER_S,
 * BENCH_STATUS_READ_MIN_INTERVAL_MS, BENCH_STORM_TIMEOUT_MS, BENCH_CONC_ROUNDS, BENCH_CONC_NOOP_OPS,
 * BENCH_CONC_BUSY_REQUESTS, BENCH_BEFORE_CHECKOUT (bench/app/setup.ts). The phases are in bench/app/.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { concurrencyPhase } from "./app/concurrency.js";
import { costConfig, costPhase } from "./app/cost.js";
import { baselineFromArgs, buildBaseline } from "./app/cost-baseline.js";
import { flowPhase } from "./app/flow-runs.js";
import { httpPhase } from "./app/http.js";
import { modeConfig, modesFromArgs, modesPhase } from "./app/modes.js";
import { putPhase, triggerPhase } from "./app/put-trigger.js";
import { git, METHOD, notesFor } from "./app/report.js";
import { agent, config, killChildren, RESULTS_FILE, ROOT, startStack } from "./app/setup.js";
import { machineFacts, median, round2 } from "./lib/stats.js";

/** `--modes`: the flows phase on `npm start`'s embedded emulator per throughput mode (bench/app/modes.ts) alone. */
async function modesMain(): Promise<void> {
  const machine = {
    ...machineFacts(ROOT),
    loadAverage1mAtStart: round2(os.loadavg()[0]),
    sharedMachine: true,
  };
  const modes = modesFromArgs(process.argv);
  console.log(
    `app bench --modes ${modes.join(",")}: ${modeConfig.flows} PUTs at once on \`cosmos-feed start\` (embedded emulator), ` +
      `${modeConfig.rounds} round(s); load ${machine.loadAverage1mAtStart}`,
  );
  const scratch = mkdtempSync(join(tmpdir(), "bench-app-modes-"));
  try {
    const results = await modesPhase(scratch, modes);
    const summary = results.map((r) => ({
      mode: r.mode,
      flowsPerSecondMedian: round2(median(r.flowsPerSecond)),
      throttledMedian: median(r.throttled),
      allSucceeded: r.succeeded.every((n) => n === r.flows),
    }));
    const result = {
      machine: { ...machine, loadAverage1mAtEnd: round2(os.loadavg()[0]) },
      config: {
        ...modeConfig,
        statusReadsPerSecond: config.statusReadsPerSecond,
        gitHead: git("rev-parse --short HEAD"),
        gitDirty: git("status --porcelain -- src functions packages") !== "",
        method:
          "Per mode, `cosmos-feed start` on the compiled app with its embedded emulator and COSMOS_THROUGHPUT_MODE set; " +
          "N PUTs at once, each on its own subscription, every operation read at a bounded rate until it ended; " +
          "flows/s = N ÷ (last operation endTime − first PUT sent); 429s from the emulator's meter (`throttled`).",
      },
      summary,
      modes: results,
    };
    for (const s of summary)
      console.log(
        `   ${s.mode}: ${s.flowsPerSecondMedian} flows/s, ${s.throttledMedian} 429s (median of rounds)`,
      );
    if (config.quick) console.log("--quick: results left alone.");
    else {
      writeFileSync(MODES_RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`);
      console.log(`wrote ${relative(process.cwd(), MODES_RESULTS_FILE)}`);
    }
  } finally {
    killChildren();
    agent.destroy();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** `--cost`: requests and RU per flow by container and reason, against the goal (bench/app/cost.ts) alone. */
async function costMain(): Promise<void> {
  console.log(`app bench --cost: sizes ${costConfig.sizes.join(", ")}; load ${round2(os.loadavg()[0])}`);
  const scratch = mkdtempSync(join(tmpdir(), "bench-app-cost-"));
  try {
    const commit = baselineFromArgs(process.argv);
    const baseline = commit === undefined ? undefined : buildBaseline(scratch, commit);
    const result = await costPhase(scratch, baseline);
    console.log(
      `   goal ${result.goal.what}: ${result.goal.ruPerFlow} RU → ${result.goal.met ? "met" : "not met"}; ` +
        `without the dev host's task hub ${result.goal.ruPerFlowWithoutTaskHub} RU → ` +
        `${result.goal.metWithoutTaskHub ? "met" : "not met"}`,
    );
    if (config.quick) console.log("--quick: results left alone.");
    else {
      writeFileSync(COST_RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`);
      console.log(`wrote ${relative(process.cwd(), COST_RESULTS_FILE)}`);
    }
  } finally {
    killChildren();
    agent.destroy();
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const began = performance.now();
  const machine = {
    ...machineFacts(ROOT),
    loadAverage1mAtStart: round2(os.loadavg()[0]),
    loadAverage1mAtEnd: 0,
    sharedMachine: true,
  };
  console.log(
    `app bench${config.quick ? " (--quick)" : ""}: ${machine.cpuCount} × ${machine.cpuModel}, node ${machine.node}, ` +
      `load ${machine.loadAverage1mAtStart}`,
  );
  const scratch = mkdtempSync(join(tmpdir(), "bench-app-"));
  try {
    const http = await httpPhase(scratch);
    console.log(
      `1. http GET: dev host p50 ${http.devhostP50Ms} ms vs bare ${http.bareP50Ms} ms → +${http.addedP50Ms} ms, ${http.ratioP50}×`,
    );

    console.log(
      `4. flows: sizes ${config.flowSizes.join(", ")}, ${config.flowRounds} round(s); status reads ≤ ` +
        `${config.statusReadsPerSecond}/s, each operation ≤ every ${config.statusReadMinIntervalMs} ms`,
    );
    const ceiling = await startStack("ceiling", scratch, {
      "AzureWebJobs.reactToResources.Disabled": "true",
      // The PUTs alone: its summaries trigger would recount 200 subscriptions after each storm, beside the app's.
      "AzureWebJobs.summarizeResources.Disabled": "true",
    });
    const app = await startStack("app", scratch);
    let flows: Awaited<ReturnType<typeof flowPhase>>;
    let put: Awaited<ReturnType<typeof putPhase>>;
    try {
      try {
        flows = await flowPhase(ceiling, app);
      } finally {
        await ceiling.stop();
      }
      put = await putPhase(app);
    } finally {
      await app.stop();
    }
    for (const s of flows.summaries)
      console.log(
        `   ${s.size} at once: ${s.flowsPerSecond} flows/s (PUTs alone ${s.ceilingPutAnswersPerSecond}/s), ` +
          `p50 ${s.acceptedToSucceededP50Ms} ms, p95 ${s.acceptedToSucceededP95Ms} ms, ${s.statusReadsPerFlow} reads/flow`,
      );
    console.log(
      `2. PUT/s: 100 subscriptions ${put.spreadOver100.acceptedPerSecond}, one hot ${put.oneHot.acceptedPerSecond} ` +
        `(409 share ${put.oneHot.contendedShare})`,
    );

    const trigger = [];
    for (const pollMs of [1000, 200]) {
      const t = await triggerPhase(scratch, pollMs);
      trigger.push(t);
      console.log(`3. write → trigger at poll ${pollMs} ms: p50 ${t.p50Ms} ms (goal ≤ ${t.goalP50Ms})`);
    }

    console.log(
      `5. concurrency: noop and busy (0–${config.busyMaxMs} ms) at ${config.concLevels.join(", ")} clients, ` +
        `${config.concRounds} round(s); before the worker process: ${config.beforeCheckout ?? "not measured"}`,
    );
    const concurrency = await concurrencyPhase();
    console.log(
      `   single-request overhead ${concurrency.single.overheadP50Ms} ms (dev host p50 ` +
        `${concurrency.single.devhost.p50Ms} ms, bare ${concurrency.single.bare.p50Ms} ms; goal ≤ ` +
        `${concurrency.single.goalOverheadMs} ms)`,
    );
    for (const b of concurrency.busy)
      console.log(
        `   busy at ${b.concurrency}: dev host p50 ${b.devhost.p50Ms} / p99 ${b.devhost.p99Ms} ms, ` +
          `${b.devhost.requestsPerSecond}/s; bare ${b.bare.p50Ms} / ${b.bare.p99Ms} ms, ${b.bare.requestsPerSecond}/s` +
          (b.before
            ? `; before ${b.before.p50Ms} / ${b.before.p99Ms} ms, ${b.before.requestsPerSecond}/s`
            : ""),
      );

    const notes = notesFor(http, put, trigger, flows, concurrency);
    for (const n of notes) console.log(n);
    machine.loadAverage1mAtEnd = round2(os.loadavg()[0]);
    const goal = flows.summaries.find((s) => s.size === config.goalAtSize);
    const result = {
      machine,
      config: {
        ...config,
        gitHead: git("rev-parse --short HEAD"),
        gitDirty: git("status --porcelain -- src functions") !== "",
        durationSeconds: Math.round((performance.now() - began) / 1000),
        method: METHOD,
      },
      goal: {
        what: `${config.goalAtSize} PUTs at once → every operation Succeeded at ≥ ${config.goalFlowsPerSecond} flows/s`,
        flowsPerSecond: goal?.flowsPerSecond ?? null,
        met: goal ? goal.flowsPerSecond >= config.goalFlowsPerSecond : null,
      },
      flows: flows.summaries,
      oldPolling: flows.oldPolling,
      http,
      put: { concurrency: config.concurrency, seconds: config.putSeconds, ...put },
      trigger,
      concurrency,
      notes,
      flowRounds: flows.rounds,
    };
    if (config.quick) {
      console.log(`--quick: ${relative(process.cwd(), RESULTS_FILE)} left alone.`);
    } else {
      mkdirSync(dirname(RESULTS_FILE), { recursive: true });
      writeFileSync(RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`);
      console.log(`wrote ${relative(process.cwd(), RESULTS_FILE)} in ${result.config.durationSeconds} s`);
    }
  } finally {
    killChildren();
    agent.destroy();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (!existsSync(join(ROOT, "dist", "functions", "resources.js"))) {
  console.log("dist/ is missing: run `npm run build` first (npm run bench:app does).");
  process.exit(1);
}
const MODES_RESULTS_FILE = join(dirname(RESULTS_FILE), "app-modes.json");
const COST_RESULTS_FILE = join(dirname(RESULTS_FILE), "app-cost.json");
const run = process.argv.includes("--cost") ? costMain : process.argv.includes("--modes") ? modesMain : main;
run().catch((e: unknown) => {
  console.error(e);
  killChildren();
  process.exit(1);
});
