/**
 * Lock benchmark: what the TTL lock (packages/locks/src) costs on top of the raw Cosmos operations it is made
 * of, and how it behaves when many holders want the same lock. Writes bench/results/locks.json.
 *
 *   npx tsx bench/locks.bench.ts          (or: npm run bench:locks)
 *
 * The emulator runs in its own child process (bench/locks.server.ts); the @azure/cosmos load generator runs
 * here. Three scenarios, in one run:
 *
 *   1. latency    — sequential acquire+release vs a bare create+delete of the same document (and vs the
 *                   same with If-Match), interleaved op by op, p50/p99 per round, medians over rounds.
 *   2. throughput — `concurrency` independent workers (one lock name / document each): lock → write → release
 *                  vs bare create+delete and vs the same raw requests without the library, alternating.
 *   3. contention — `contenders` LockClients on ONE lock name looping acquire → critical section → release
 *                  for `contentionSeconds`: rate, fairness, waits, 409s, RU, and a check that no two
 *                  validity windows overlap. Once with the library's acquire({waitMs}), once with
 *                  tryAcquire + a short jittered poll.
 *   4. crash      — a holder process killed with SIGKILL: time until another client holds the lock, after the
 *                  kill and after the lock lapsed (bench/locks/crash.ts).
 *
 * Knobs (environment): BENCH_ROUNDS (6), BENCH_LAT_OPS (1000), BENCH_CONCURRENCY (16), BENCH_TP_ROUNDS (10),
 * BENCH_SLICE_S (1.5), BENCH_CONTENDERS (50), BENCH_CONTENTION_S (10), BENCH_CS_MS (5), BENCH_CRASH_TRIALS (5),
 * BENCH_LOCKS_ONLY=crash (runs scenario 4 alone and replaces only its part of the results, with its own machine
 * facts). See docs/bench-locks.md.
 *
 * This file runs the scenarios and writes the JSON; the scenarios are in bench/locks/ (setup.ts: config, the
 * emulator child, request/RU/CPU windows; latency.ts, throughput.ts, contention.ts, probe.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join, relative } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { LockDefaults } from "@cosmos-feed/locks";
import { EmulatorProcess as SharedEmulatorProcess } from "./lib/emulator-process.js";
import { machineFacts } from "./lib/stats.js";
import { contentionScenario } from "./locks/contention.js";
import { crashScenario } from "./locks/crash.js";
import { latencyScenario } from "./locks/latency.js";
import { abortListenerProbe } from "./locks/probe.js";
import { config, HERE, RESULTS_FILE, ROOT, round2, type ServerStats } from "./locks/setup.js";
import { throughputScenario } from "./locks/throughput.js";

// ---------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const began = performance.now();
  const machine = { ...machineFacts(ROOT), loadAverage1m: round2(os.loadavg()[0]) };
  console.log(
    `locks bench: ${machine.cpuCount} × ${machine.cpuModel}, node ${machine.node}, load ${machine.loadAverage1m}`,
  );
  const emu = await SharedEmulatorProcess.start<ServerStats>(join(HERE, "locks.server.ts"), [], ROOT);
  if (process.env.BENCH_LOCKS_ONLY === "crash") {
    try {
      await crashOnly(emu, machine);
    } finally {
      await emu.close();
    }
    return;
  }
  try {
    const client = new CosmosClient({ endpoint: emu.endpoint, key: emu.key });
    const { database } = await client.databases.createIfNotExists({ id: config.database });
    const { container: locksC } = await database.containers.createIfNotExists({
      id: config.lockContainer,
      partitionKey: { paths: ["/id"], version: 2 },
      defaultTtl: -1,
    });
    const { container: dataC } = await database.containers.createIfNotExists({
      id: config.dataContainer,
      partitionKey: { paths: ["/id"], version: 2 },
    });

    console.log("1. latency (sequential)");
    const latency = await latencyScenario(emu, locksC);
    console.log(`   lock/bare p50 ${latency.ratioP50}×, p99 ${latency.ratioP99}×`);
    console.log(`2. throughput (concurrency ${config.concurrency})`);
    const throughput = await throughputScenario(emu, locksC, dataC);
    console.log(`   slowdown ${JSON.stringify(throughput.slowdown)}`);
    console.log(
      `3. contention (${config.contenders} contenders, one lock, ${config.contentionSeconds} s each)`,
    );
    const contention = {
      library: await contentionScenario(emu, locksC, "library"),
      poll: await contentionScenario(emu, locksC, "poll"),
    };
    for (const c of Object.values(contention)) {
      console.log(
        `   ${c.variant}: ${c.acquisitionsPerSec}/s, per contender ${c.perContender.min}..${c.perContender.max} ` +
          `(Jain ${c.perContender.jainFairness}), wait p50 ${c.waitMs.p50} ms p99 ${c.waitMs.p99} ms, ` +
          `${c.lockHeldErrors} LockHeldError, ${c.lockContainerRu} RU, overlaps ${c.safety.overlappingWindows}`,
      );
    }
    const probe = await abortListenerProbe(locksC);
    console.log(
      `   abort-listener probe: ${probe.failedAttempts} failed attempts → ${probe.leftoverAbortListeners} listeners left on the caller's signal`,
    );
    console.log(`4. crash takeover (${config.crashTrials} holders killed with SIGKILL)`);
    const crash = await crashScenario(emu, locksC);
    console.log(
      `   acquired ${crash.acquiredAfterKillMs.min}..${crash.acquiredAfterKillMs.max} ms after the kill ` +
        `(median ${crash.acquiredAfterKillMs.median}); ${crash.withinBound} of ${crash.trials.length} within ${crash.boundMs} ms`,
    );
    const overlaps = contention.library.safety.overlappingWindows + contention.poll.safety.overlappingWindows;
    const inversions =
      contention.library.safety.fencingTokenInversions + contention.poll.safety.fencingTokenInversions;

    const result = {
      machine,
      config: {
        ...config,
        durationSeconds: Math.round((performance.now() - began) / 1000),
        server:
          "startEmulator({port:0, host:'127.0.0.1', enforceThroughput:false}) in its own `node --import tsx` child " +
          "(bench/locks.server.ts): HTTP, in memory, no provisioned throughput. Lock container: partition key /id, " +
          "defaultTtl -1. Data container: /id.",
        client:
          "@azure/cosmos in the bench process, one CosmosClient (default options, keep-alive agent). " +
          `LockClient defaults: ttl ${LockDefaults.ttlSeconds} s, safety margin ${LockDefaults.safetyMarginMs} ms, ` +
          `renew every ttl/3, min retry delay ${LockDefaults.minRetryDelayMs} ms.`,
        method:
          "Scenario 1 interleaves the contenders op by op (rotating order) within each round; scenario 2 runs one " +
          "slice per contender per round, order reversed every other round. Either way machine noise hits all " +
          "alike; figures are medians over rounds, ratios medians of per-round ratios. Requests, RU and server " +
          "CPU per op come from the emulator child (http.server.response.finish channel, RU meter, cpuUsage) " +
          "diffed around each measured slice or block. The emulator's RU meter does not charge requests that fail " +
          "(409/412/404); the real service does.",
      },
      latency,
      throughput,
      contention,
      abortListenerProbe: probe,
      crash,
      verdict: {
        latencyRatioP50: latency.ratioP50,
        latencyRatioP99: latency.ratioP99,
        latencyGoalMet: latency.goalMetP50 && latency.goalMetP99,
        throughputLockWriteVsBare: throughput.slowdown.lockWriteVsBare,
        throughputGoalMet: throughput.goalMet,
        throughputLockWriteVsSameRequestsWithoutLibrary: throughput.slowdown.lockWriteVsBareWrite,
        overlappingValidityWindows: overlaps,
        fencingTokenInversions: inversions,
        contentionNeverAcquired: contention.library.firstAcquisitionMs.neverAcquired,
        contentionJainFairness: contention.library.perContender.jainFairness,
        fairnessGoal: { everyContenderAcquires: true, jainAtLeast: config.fairnessGoalJain },
        fairnessGoalMet:
          contention.library.firstAcquisitionMs.neverAcquired === 0 &&
          contention.library.perContender.jainFairness >= config.fairnessGoalJain,
        crashTakeoverWithinBound: `${crash.withinBound} of ${crash.trials.length} within ${crash.boundMs} ms of the kill`,
        crashTakeoverTokensLarger: crash.everyTokenLarger,
      },
    };
    mkdirSync(dirname(RESULTS_FILE), { recursive: true });
    writeFileSync(RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`wrote ${relative(process.cwd(), RESULTS_FILE)} (${result.config.durationSeconds} s)`);
    if (overlaps > 0 || inversions > 0) {
      console.error(
        `SAFETY VIOLATION: ${overlaps} overlapping validity windows, ${inversions} token inversions`,
      );
      process.exitCode = 1;
    }
  } finally {
    await emu.close();
  }
}

/** Scenario 4 alone: its figures replace the `crash` part of the stored results (with this run's machine facts). */
async function crashOnly(emu: SharedEmulatorProcess<ServerStats>, machine: object): Promise<void> {
  const client = new CosmosClient({ endpoint: emu.endpoint, key: emu.key });
  const { database } = await client.databases.createIfNotExists({ id: config.database });
  const { container: locksC } = await database.containers.createIfNotExists({
    id: config.lockContainer,
    partitionKey: { paths: ["/id"], version: 2 },
    defaultTtl: -1,
  });
  console.log(`4. crash takeover (${config.crashTrials} holders killed with SIGKILL)`);
  const crash = { machine, ...(await crashScenario(emu, locksC)) };
  console.log(
    `   ${JSON.stringify(crash.acquiredAfterKillMs)} ms after the kill; ${crash.withinBound} within bound`,
  );
  const stored = JSON.parse(readFileSync(RESULTS_FILE, "utf8")) as { verdict: Record<string, unknown> };
  const result = {
    ...stored,
    crash,
    verdict: {
      ...stored.verdict,
      crashTakeoverWithinBound: `${crash.withinBound} of ${crash.trials.length} within ${crash.boundMs} ms of the kill`,
      crashTakeoverTokensLarger: crash.everyTokenLarger,
    },
  };
  writeFileSync(RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${relative(process.cwd(), RESULTS_FILE)} (crash part)`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
