/**
 * Scenario 6: the bench process's memory (the hub, its SDK client, the orchestrators) after `first` and after
 * `total` three-activity orchestrations, run in batches of `batch` started at once, one batch after the other, on a
 * fresh hub. Instances are not purged: a hub whose memory follows the number of instances it has run grows here.
 * Each reading waits `settleMs` after the batch (the hub's feed pages and checkpoints of the last commits finish),
 * then takes `samples` samples `sampleGapMs` apart, each after two full collections (global.gc, when node runs with
 * --expose-gc), and keeps the median: RSS moves by tens of MB between two such samples on a busy machine (pages
 * the allocator has not returned yet), which one sample would pass off as growth or as its absence.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { median, round1, round2 } from "../lib/stats.js";
import { type Bench, deadlineIn } from "./measure.js";
import { awaitAll } from "./observe.js";
import { config, openHub } from "./setup.js";

const gc = (globalThis as { gc?: () => void }).gc;
const MB = 2 ** 20;

async function reading(orchestrations: number, seconds: number) {
  const { settleMs, samples, sampleGapMs } = config.memory.reading;
  await sleep(settleMs);
  const rss: number[] = [];
  const heap: number[] = [];
  for (let i = 0; i < samples; i++) {
    if (i > 0) await sleep(sampleGapMs);
    gc?.();
    gc?.();
    const m = process.memoryUsage();
    rss.push(m.rss / MB);
    heap.push(m.heapUsed / MB);
  }
  return {
    orchestrations,
    seconds: round1(seconds),
    rssMb: round1(median(rss)),
    rssSamplesMb: rss.map(round1),
    heapUsedMb: round1(median(heap)),
  };
}

export async function memoryScenario(b: Bench) {
  const { first, total, batch, budgetSeconds } = config.memory;
  const h = await openHub(b.db, "memory");
  const t0 = performance.now();
  const budgetEnds = t0 + budgetSeconds * 1000;
  const readings: Awaited<ReturnType<typeof reading>>[] = [];
  let done = 0;
  let notEnded = 0;
  let failed = 0;
  let nextReading = first;
  /** Time spent running orchestrations (readings excluded). */
  let runSeconds = 0;
  const take = async () => {
    readings.push(await reading(done, (performance.now() - t0) / 1000));
  };
  try {
    for (let b0 = 0; done < total && performance.now() < budgetEnds; b0++) {
      const batchStarted = performance.now();
      const size = Math.min(batch, total - done);
      const prefix = `m${b0}-`;
      await Promise.all(
        Array.from({ length: size }, (_v, i) =>
          h.hub.startNew("seq3", { instanceId: `${prefix}${i}`, input: "1" }),
        ),
      );
      const seen = await awaitAll(h.hub, prefix, size, deadlineIn(config.observe.timeoutMs));
      notEnded += size - seen.ended.length;
      failed += seen.ended.filter((s) => s.runtimeStatus !== "Completed").length;
      done += size;
      runSeconds += (performance.now() - batchStarted) / 1000;
      // A reading after `first`, and one every `first` after that (the curve); the last after the final batch.
      if (done >= nextReading || done >= total) {
        await take();
        nextReading += first;
      }
      if (notEnded > 0) break; // a stuck hub: more batches would only measure the backlog
    }
    if (readings.at(-1)?.orchestrations !== done) await take();
  } finally {
    await h.hub.stop();
  }
  const atFirst = readings.find((r) => r.orchestrations >= first);
  const last = readings.at(-1);
  return {
    batch,
    first,
    total,
    budgetSeconds,
    gcExposed: gc !== undefined,
    reached: done,
    reachedTotal: done >= total,
    notEnded,
    notCompleted: failed,
    /** Batches only: from each batch's starts to its last end seen, readings left out. */
    orchestrationsPerSec: round1(done / runSeconds),
    atFirst: atFirst ?? null,
    atEnd: last ?? null,
    /** RSS at the end / RSS after the first `first` orchestrations. */
    rssRatio: atFirst && last ? round2(last.rssMb / atFirst.rssMb) : null,
    heapRatio: atFirst && last ? round2(last.heapUsedMb / atFirst.heapUsedMb) : null,
    readings,
    problemsLogged: h.counters.problems,
    firstProblems: h.counters.firstProblems,
  };
}
