/**
 * A clock for the emulator's provisioned-throughput budgets (`startEmulator({ throughputClock })`) that a test can
 * stop. While it is stopped nothing refills: a container's budget is the one second's worth it started with, so a
 * burst that needs more is throttled by count (its charges against that one second), however slowly a loaded
 * machine delivers the burst. Running, it is real time (`performance.now`).
 */
export class ThroughputClock {
  private stoppedAt: number | undefined;
  private runWhen: (() => boolean) | undefined;

  /** The reading the emulator takes: the stopped instant, or real time. */
  readonly now = (): number => {
    if (this.stoppedAt !== undefined && this.runWhen?.()) this.run();
    return this.stoppedAt ?? performance.now();
  };

  /** Stops the clock; with `runWhen`, it runs again at the first reading after `runWhen()` holds. */
  stop(runWhen?: () => boolean): void {
    this.stoppedAt = performance.now();
    this.runWhen = runWhen;
  }

  /** Real time again: the budgets refill for the time stopped (at most one second's worth, the bucket's size). */
  run(): void {
    this.stoppedAt = undefined;
    this.runWhen = undefined;
  }
}
