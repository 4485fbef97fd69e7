/**
 * The processor's only source of time (client-go's `clock.Clock`): wall time for what goes into lease
 * documents and is compared across hosts, monotonic time for this host's own deadlines, and an abortable
 * sleep for every wait. Tests inject `FakeClock` (`@cosmos-feed/core/testing`) and move time by hand.
 */
export interface Clock {
  /** Wall-clock time, ms since the epoch (lease timestamps, watch slots). */
  now(): number;
  /** Monotonic time in ms from an arbitrary origin: never jumps when the wall clock is set (local deadlines). */
  monotonicNow(): number;
  /** Resolves after `ms`, or early (without throwing) when `signal` fires. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock: `Date.now`, `performance.now`, `setTimeout`. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicNow: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    }),
};

interface FakeTimer {
  at: number;
  seq: number;
  resolve: () => void;
}

/**
 * A fake clock for tests: time stands still until {@link FakeClock.advance} moves it; sleepers wake in order
 * of their due time, and the promise chains they start run before time moves on (so a renewal that a timer
 * starts completes, or awaits its own fake I/O, before the next timer fires).
 */
export class FakeClock implements Clock {
  private wall: number;
  private mono = 0;
  private seq = 0;
  private timers: FakeTimer[] = [];

  constructor(startWallMs = Date.UTC(2026, 0, 1)) {
    this.wall = startWallMs;
  }

  /** The fake wall-clock time: the start time plus every advance (ms since the epoch). */
  now(): number {
    return this.wall + this.mono;
  }

  /** The fake monotonic time: the total of every advance since construction (ms). */
  monotonicNow(): number {
    return this.mono;
  }

  /** Moves only the wall clock (an NTP step): monotonic deadlines must not move. */
  setWallClock(wallMs: number): void {
    this.wall = wallMs - this.mono;
  }

  /** Sleepers that have not woken yet. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * Resolves when the clock has been advanced by `ms` (ms) or `signal` aborts, whichever comes first; never
   * rejects.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: FakeTimer = {
        at: this.mono + Math.max(0, ms),
        seq: this.seq++,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.timers = this.timers.filter((t) => t !== timer);
        resolve();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.timers.push(timer);
    });
  }

  /** Moves time forward by `ms`, firing every timer due on the way (in order) and letting its work run. */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    await settle();
    for (;;) {
      const next = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.mono = Math.max(this.mono, next.at);
      next.resolve();
      await settle();
    }
    this.mono = target;
    await settle();
  }
}

/** Lets pending promise callbacks (and the ones they schedule) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}
