/**
 * Change feed processor benchmark (packages/changefeed/src) against the embedded emulator, in ONE run:
 *
 *   1. throughput: documents/s through the processor (1 host, 8 leases) vs a bare SDK pull-iterator loop
 *      and vs one iterator per range without leases (bareParallel), over the same pre-written documents, same
 *      maxItemCount (100 and 1000), handler only counting; also the processor with a checkpoint per page
 *      (maxCheckpointDelay 0);
 *   2. write→handler latency p50/p99 at a steady write rate, feedPollDelay 5000 (default) and 100 ms;
 *   3. failover time after kill -9 of one of 2 host processes (8 leases);
 *   4. handoff time after a graceful stop (SIGTERM → processor.stop()) and the worst write→handled latency
 *      across it, while a writer keeps writing;
 *   5. lease-container requests per hour, idle, 4 hosts × 32 leases, vs the .NET algorithm (analytic).
 *
 *   npx tsx bench/changefeed.bench.ts          → bench/results/changefeed.json (see docs/bench-changefeed.md)
 *
 * The emulator runs in a child process (bench/changefeed.child.ts emulator); phases 3 and 4 run each host in
 * a child process of its own (bench/changefeed.child.ts host). Knobs (environment): BENCH_DOCS (100000),
 * BENCH_ROUNDS (5), BENCH_LATENCY_RATE (200), BENCH_LATENCY_S (10), BENCH_HANDOVER_TRIALS (2),
 * BENCH_LEASE_SCALE (10: lease intervals of phases 3–5 are the defaults ÷ this; 1 = the real defaults, slow),
 * BENCH_IDLE_WINDOW_S (60), BENCH_PHASES (1,2,3,4,5: a subset runs only those and leaves the JSON alone).
 *
 * This file runs the phases and writes the JSON; the phases are in bench/changefeed/ (setup.ts: config, child
 * processes, documents, writers; throughput.ts, latency.ts, handover.ts, idle.ts; report.ts: conclusions
 * computed from the numbers and the method text). Statistics and child-process helpers: bench/lib.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { handoverTrial, prematureLosses } from "./changefeed/handover.js";
import { idlePhase } from "./changefeed/idle.js";
import { latencyRun } from "./changefeed/latency.js";
import { FAILOVER_FORMULA, git, METHOD, notesFor } from "./changefeed/report.js";
import {
  CHILD,
  config,
  DB,
  handoffIntervals,
  leaseScale,
  RESULTS_DIR,
  RESULTS_FILE,
  ROOT,
  round2,
  type Stats,
  scaled,
} from "./changefeed/setup.js";
import { GOAL_OVERHEAD_PCT, newClient, throughputPhase } from "./changefeed/throughput.js";
import { EmulatorProcess as SharedEmulatorProcess } from "./lib/emulator-process.js";
import { machineFacts, median, percentile } from "./lib/stats.js";

const phases = new Set(
  (process.env.BENCH_PHASES ?? "1,2,3,4,5")
    .split(",")
    .map((x) => Number(x.trim()))
    .filter((n) => n >= 1 && n <= 5),
);

async function main(): Promise<void> {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const began = Date.now();
  const machine = {
    ...machineFacts(ROOT),
    /** 1-minute load average at start and end: > 0 before we start means something else shares the cores. */
    loadAverage1mAtStart: round2(os.loadavg()[0]),
    loadAverage1mAtEnd: 0,
  };
  const emu = await SharedEmulatorProcess.start<Stats>(CHILD, ["emulator"], ROOT);
  const admin = newClient(emu);
  try {
    const { database: db } = await admin.databases.createIfNotExists({ id: DB });

    const run = (n: number) => phases.has(n);
    let throughput: Awaited<ReturnType<typeof throughputPhase>> | undefined;
    if (run(1)) {
      console.log(`1. throughput: ${config.throughput.docs} docs, ${config.throughput.ranges} ranges`);
      throughput = await throughputPhase(emu, db);
    }

    const latency: Awaited<ReturnType<typeof latencyRun>>[] = [];
    if (run(2)) {
      console.log("2. write→handler latency");
      for (const feedPollDelay of config.latency.feedPollDelays) {
        const r = await latencyRun(emu, db, feedPollDelay);
        latency.push(r);
        console.log(
          `  feedPollDelay ${feedPollDelay} ms: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms ` +
            `(${r.handled}/${r.written} handled at ${r.achievedRatePerSec}/s, ${r.duplicates} duplicates)`,
        );
      }
    }

    type Trial = Awaited<ReturnType<typeof handoverTrial>>;
    const failover: Trial[] = [];
    if (run(3)) {
      console.log(`3. failover after kill -9 (intervals ÷${leaseScale}: ${JSON.stringify(scaled)})`);
      for (let t = 0; t < config.handover.trials; t++) {
        const r = await handoverTrial(emu, db, "failover", t);
        failover.push(r);
        console.log(
          `  trial ${t + 1}: survivor owns all after ${r.allOwnedBySurvivorMs} ms; per lease ` +
            r.perLeaseTakeoverMs.map((l) => `${l.takenAfterMs} (age ${l.ageAtEventMs})`).join(", ") +
            `; worst write→handled ${r.worstLatencyAroundEventMs} ms, ${r.duplicates} duplicates, ${r.missing} missing`,
        );
      }
    }

    const handoff: Trial[] = [];
    if (run(4)) {
      console.log("4. handoff after graceful stop");
      for (let t = 0; t < config.handover.trials; t++) {
        const r = await handoverTrial(emu, db, "handoff", t);
        handoff.push(r);
        const early = prematureLosses(r);
        console.log(
          `  trial ${t + 1}: survivor owns all after ${r.allOwnedBySurvivorMs} ms (stop() took ${r.victimStopMs} ms); ` +
            `release→acquired per lease ${r.releaseToAcquireMs.map((x) => x.ms ?? "never").join(", ")} ms; ` +
            `worst write→handled ${r.worstLatencyAroundEventMs} ms (before: p99 ${r.latencyBeforeEventMs.p99} ms), ` +
            `${r.duplicates} duplicates, ${r.missing} missing` +
            (early.length
              ? `; stopping host LOST ${early.length} released lease(s) before the survivor took them`
              : ""),
        );
      }
    }

    let idle: Awaited<ReturnType<typeof idlePhase>> | undefined;
    if (run(5)) {
      console.log(
        `5. idle lease-container requests: ${config.idle.hosts} hosts × ${config.idle.ranges} leases, ` +
          `${config.idle.windowSeconds} s window at ÷${leaseScale}`,
      );
      idle = await idlePhase(emu, db);
      console.log(
        `  per hour: ours ${idle.perHour.oursMeter} (meter) / ${idle.perHour.oursProcessorCounters} (processor counters), ` +
          `.NET ${idle.perHour.dotnetAnalytic} → ratio ${idle.ratio.meter} / ${idle.ratio.processorCounters} (goal ≤ ${idle.ratio.goal})`,
      );
    }

    const output = {
      machine,
      config: {
        ...config,
        phases: [...phases],
        processorModule: process.env.BENCH_PROCESSOR_MODULE ?? "packages/changefeed/src/processor.ts",
        /** The commit checked out when the bench ran (the working tree may differ: see gitDirty). */
        gitHead: git("rev-parse --short HEAD"),
        gitDirtyChangefeed: git("status --porcelain packages/changefeed/src") !== "",
        durationSeconds: 0,
        method: METHOD,
      },
      throughput: throughput
        ? {
            seedDocsPerSec: throughput.seedDocsPerSec,
            goalOverheadPct: GOAL_OVERHEAD_PCT,
            goalBaseline: "bareParallel, maxItemCount 100, paired",
            goalMet:
              (throughput.bySize.find((s) => s.maxItemCount === 100)?.pairedOverheadVsBareParallelPct ??
                Number.POSITIVE_INFINITY) <= GOAL_OVERHEAD_PCT,
            bySize: throughput.bySize,
          }
        : null,
      latency,
      failover: failover.length
        ? {
            intervals: scaled,
            intervalScale: leaseScale,
            medianAllOwnedMs: median(failover.map((f) => f.allOwnedBySurvivorMs)),
            medianWorstLatencyMs: median(failover.map((f) => f.worstLatencyAroundEventMs)),
            formula: FAILOVER_FORMULA,
            trials: failover,
          }
        : null,
      handoff: handoff.length
        ? {
            intervals: handoffIntervals,
            medianAllOwnedMs: median(handoff.map((f) => f.allOwnedBySurvivorMs)),
            releaseToAcquireMs: (() => {
              const all = handoff.flatMap((t) =>
                t.releaseToAcquireMs.map((r) => r.ms ?? Number.POSITIVE_INFINITY),
              );
              return {
                p50: percentile(all, 50),
                max: Math.max(...all),
                leases: all.length,
                goalBelow: 1_000,
              };
            })(),
            medianWorstLatencyMs: median(handoff.map((f) => f.worstLatencyAroundEventMs)),
            prematureLossesPerTrial: handoff.map((t) => prematureLosses(t).length),
            trials: handoff,
          }
        : null,
      idleLeaseOps: idle ?? null,
      notes: notesFor(throughput?.bySize ?? [], latency, machine.loadAverage1mAtStart, GOAL_OVERHEAD_PCT),
      throughputRuns: throughput?.runs ?? [],
    };
    output.config.durationSeconds = Math.round((Date.now() - began) / 1000);
    output.machine.loadAverage1mAtEnd = round2(os.loadavg()[0]);
    if (phases.size === 5) {
      writeFileSync(RESULTS_FILE, `${JSON.stringify(output, null, 2)}\n`);
      console.log(`\nwrote ${RESULTS_FILE} in ${output.config.durationSeconds} s`);
    } else {
      console.log(
        `\nBENCH_PHASES=${[...phases].join(",")}: not all phases ran, so ${RESULTS_FILE} is left alone.`,
      );
      if (process.env.BENCH_PRINT_JSON) console.log(JSON.stringify(output, null, 2));
    }
    for (const s of throughput?.bySize ?? []) {
      console.log(
        `throughput max ${s.maxItemCount}: bare ${s.bare.docsPerSec}/s, processor ${s.processor.docsPerSec}/s, ` +
          `overhead ${s.overheadPct}% (paired ${s.pairedOverheadPct}%; vs 8 parallel iterators ${s.pairedOverheadVsBareParallelPct}%, ` +
          `per-page checkpoints ${s.perPagePairedOverheadVsBareParallelPct}%)`,
      );
    }
  } finally {
    admin.dispose();
    await emu.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
