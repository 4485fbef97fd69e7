import type { Clock } from "@cosmos-feed/core/clock";

/**
 * Cuts the feed-poll wait short: a process that has just written to the monitored container (the dev host's
 * durable task hub, after committing an episode) calls {@link FeedPollWakeup.wake} so its own workers read now
 * instead of after `feedPollDelay`. A wake that comes while a worker is reading is not lost: the worker checks
 * the generation it read under before sleeping.
 */
export class FeedPollWakeup {
  private generation = 0;
  private readonly sleepers = new Set<() => void>();

  /** The current generation; pass it to {@link sleep} to skip the wait when a wake came since. */
  get current(): number {
    return this.generation;
  }

  wake(): void {
    this.generation++;
    for (const wake of [...this.sleepers]) wake();
  }

  /** Sleeps `ms` on `clock`, or less when woken (or when woken since `sinceGeneration`). */
  async sleep(clock: Clock, ms: number, signal: AbortSignal, sinceGeneration: number): Promise<void> {
    if (this.generation !== sinceGeneration) return;
    const early = new AbortController();
    const wake = () => early.abort();
    this.sleepers.add(wake);
    try {
      await clock.sleep(ms, AbortSignal.any([signal, early.signal]));
    } finally {
      this.sleepers.delete(wake);
    }
  }
}
