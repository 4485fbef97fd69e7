import type { Container } from "@azure/cosmos";
import { MeasureDefaults } from "./defaults.js";

/** The writer's counts so far: documents created, and creates that failed. */
export interface WriterStats {
  written: number;
  failed: number;
}

/** A running writer: its counts, and the function that stops it (idempotent). */
export interface Writer {
  stats(): WriterStats;
  stop(): void;
}

/**
 * Writes small documents at `perSecond` a second (wall clock) on average as a Poisson stream (exponential gaps,
 * as the model assumes), each to a random one of MeasureDefaults.writerKeys partition keys.
 */
export function startWriter(container: Container, perSecond: number): Writer {
  let written = 0;
  let failed = 0;
  let stopped = false;
  let n = 0;
  let nextAt = performance.now();
  const gap = () => (-Math.log(1 - Math.random()) * 1000) / perSecond;
  const tick = () => {
    if (stopped) return;
    const now = performance.now();
    while (nextAt <= now) {
      nextAt += gap();
      const k = n++;
      container.items
        .create({ id: `w-${k}`, pk: `k${Math.floor(Math.random() * MeasureDefaults.writerKeys)}`, n: k })
        .then(
          () => {
            written++;
          },
          () => {
            failed++;
          },
        );
    }
    timer = setTimeout(tick, MeasureDefaults.writerTickMs);
  };
  let timer: NodeJS.Timeout | undefined = perSecond > 0 ? setTimeout(tick, 0) : undefined;
  return {
    stats: () => ({ written, failed }),
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
