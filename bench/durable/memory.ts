/**
 * Scenario 6: the bench process's memory (the hub, its SDK client, the orchestrators) after `first` and after
 * `total` three-activity orchestrations, run in batches of `batch` started at once, one batch after the other, on a
 * fresh hub. Instances are not purged: a hub whose memory follows the number of instances it has run grows here.
 * Both readings are taken after two full collections (global.gc, when node runs with --expose-gc) so garbage not
 * yet collected does not count.
 */
import { round1, round2 } from "../lib/stats.js";
import { type Bench, deadlineIn } from "./measure.js";
import { awaitAll } from "./observe.js";
import { config, openHub } from "./setup.js";

const gc = (globalThis as { gc?: () => void }).gc;
const MB = 2 ** 20;

function reading(orchestrations: number, seconds: number) {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return {
    orchestrations,
    seconds: round1(seconds),
    rssMb: round1(m.rss / MB),
    heapUsedMb: round1(m.heapUsed / MB),
    externalMb: round1(m.external / MB),
  };
}

export async function memoryScenario(b: Bench) {
  const { first, total, batch, budgetSeconds } = config.memory;
  const h = await openHub(b.db, "memory");
  const t0 = performance.now();
  const budgetEnds = t0 + budgetSeconds * 1000;
  const readings: ReturnType<typeof reading>[] = [];
  let done = 0;
  let notEnded = 0;
  let failed = 0;
  let elapsedSeconds = 0;
  try {
    for (let b0 = 0; done < total && performance.now() < budgetEnds; b0++) {
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
      // A reading after `first`, and one every `first` after that (the curve); the last after the final batch.
      if (done % first === 0 || done >= total) readings.push(reading(done, (performance.now() - t0) / 1000));
      if (notEnded > 0) break; // a stuck hub: more batches would only measure the backlog
    }
    if (readings.at(-1)?.orchestrations !== done)
      readings.push(reading(done, (performance.now() - t0) / 1000));
    elapsedSeconds = (performance.now() - t0) / 1000;
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
    orchestrationsPerSec: round1(done / elapsedSeconds),
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
