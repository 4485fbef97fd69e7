import type { Clock } from "@cosmos-feed/changefeed";

/**
 * The simulation's time: one fake clock for every simulated host, as the unit tests' FakeClock (time stands still
 * until the driver moves it; sleepers wake in due order and the promise chains they start run before time moves
 * on). Unlike FakeClock it keeps its timers in a heap and fires all timers due at one instant together, then lets
 * the promise chains run once: FakeClock scans every timer and yields 20 times per timer, fine for a unit test but
 * hours of CPU for 1,000 hosts. Each host sees it through a {@link HostClock}, which a scenario can pause (a
 * process stopped by the OS: its timers and answers wait, time goes on).
 */

interface Timer {
  at: number;
  seq: number;
  host: HostClock | undefined;
  resolve: () => void;
  cancelled: boolean;
}

/**
 * A binary min-heap of timers by (at, seq). (at, seq) is a total order (seq is unique), so the order timers come
 * out in does not depend on the heap's layout: compacting it changes nothing that fires.
 */
class TimerHeap {
  private items: Timer[] = [];
  /**
   * Timers cancelled while in the heap (an estimate: a cancelled timer is dropped when it comes out). Most of a
   * fleet's timers are requestTimeout bounds cancelled when their request answers; kept, they grew the heap to
   * tens of thousands of dead entries, each making every push and pop deeper.
   */
  private cancelled = 0;
  get size(): number {
    return this.items.length;
  }
  peek(): Timer | undefined {
    return this.items[0];
  }
  push(t: Timer): void {
    const a = this.items;
    // Sift up with a hole: each step moves one parent down instead of swapping.
    let i = a.length;
    a.push(t);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = a[p];
      if (!before(t, parent)) break;
      a[i] = parent;
      i = p;
    }
    a[i] = t;
  }
  pop(): Timer | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) this.siftDown(last, 0);
    if (top?.cancelled && this.cancelled > 0) this.cancelled--;
    return top;
  }
  /** Places `t` at `i` and moves it down to where it belongs (a hole moves up instead of swaps). */
  private siftDown(t: Timer, start: number): void {
    const a = this.items;
    const n = a.length;
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const m = r < n && before(a[r], a[l]) ? r : l;
      if (!before(a[m], t)) break;
      a[i] = a[m];
      i = m;
    }
    a[i] = t;
  }
  /** A timer in the heap was cancelled: once they are most of it, they are dropped and the heap rebuilt. */
  noteCancelled(): void {
    this.cancelled++;
    if (this.cancelled < 1024 || this.cancelled * 2 < this.items.length) return;
    const live = this.items.filter((t) => !t.cancelled);
    this.items = live;
    this.cancelled = 0;
    for (let i = (live.length >> 1) - 1; i >= 0; i--) this.siftDown(live[i], i);
  }
}

const before = (x: Timer, y: Timer) => x.at < y.at || (x.at === y.at && x.seq < y.seq);

/** Lets every pending promise callback run: nothing in the simulation waits on real I/O or real timers. */
const drain = () => new Promise<void>((resolve) => setImmediate(resolve));

export class SimClock {
  private mono = 0;
  private seq = 0;
  private readonly heap = new TimerHeap();
  /** Instants at which at least one timer fired (the driver checks its invariants at each). */
  instants = 0;

  constructor(private readonly startWallMs = Date.UTC(2026, 0, 1)) {}

  /** Simulated wall-clock time (ms since the epoch). */
  now(): number {
    return this.startWallMs + this.mono;
  }

  /** Simulated time since the start (ms). */
  elapsed(): number {
    return this.mono;
  }

  /** A timer on this clock, owned by `host` (undefined: the network's, never paused). */
  schedule(ms: number, host: HostClock | undefined, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = {
        at: this.mono + Math.max(0, ms),
        seq: this.seq++,
        host,
        cancelled: false,
        resolve,
      };
      // Only a timer with a signal needs the listener and its removal (the network's timers have none).
      if (signal) {
        const onAbort = () => {
          timer.cancelled = true;
          // Still in the heap unless a paused host holds it (then the estimate is only a little high).
          this.heap.noteCancelled();
          resolve();
        };
        timer.resolve = () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        signal.addEventListener("abort", onAbort, { once: true });
      }
      this.heap.push(timer);
    });
  }

  /** Re-queues a paused host's timers when it resumes (due now at the latest, in their original order). */
  requeue(timers: Timer[]): void {
    for (const t of timers) {
      t.at = Math.max(t.at, this.mono);
      t.seq = this.seq++;
      this.heap.push(t);
    }
  }

  /**
   * Moves time forward by `ms`: each instant with due timers fires them all, lets their work run, then calls
   * `atInstant` (the driver's invariant checks).
   */
  async advance(ms: number, atInstant?: () => void): Promise<void> {
    const target = this.mono + ms;
    await drain();
    for (;;) {
      const next = this.heap.peek();
      if (!next || next.at > target) break;
      this.mono = Math.max(this.mono, next.at);
      let fired = 0;
      while (this.heap.peek() && (this.heap.peek() as Timer).at <= this.mono) {
        const t = this.heap.pop() as Timer;
        if (t.cancelled) continue;
        if (t.host?.paused) {
          t.host.deferred.push(t);
          continue;
        }
        t.resolve();
        fired++;
      }
      if (fired === 0) continue;
      await drain();
      // The work may have queued more timers for this same instant (a resumed host's): they belong to it.
      if ((this.heap.peek()?.at ?? Number.POSITIVE_INFINITY) <= this.mono) continue;
      this.instants++;
      atInstant?.();
    }
    this.mono = target;
    await drain();
  }

  /** One host's view of this clock. */
  forHost(): HostClock {
    return new HostClock(this);
  }
}

/**
 * A host's clock: the simulation's time, with sleeps that do not wake while the host is paused (they fire, in
 * order, when it resumes). Monotonic time goes on during a pause, as it does for a stopped process.
 */
export class HostClock implements Clock {
  paused = false;
  /** Timers that came due while paused. */
  readonly deferred: Timer[] = [];

  constructor(readonly sim: SimClock) {}

  now(): number {
    return this.sim.now();
  }

  monotonicNow(): number {
    return this.sim.elapsed();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.sim.schedule(ms, this, signal);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.sim.requeue(this.deferred.splice(0).filter((t) => !t.cancelled));
  }
}
