import { type Clock, systemClock } from "@cosmos-feed/core/clock";

export interface CoalescingCheckpointerOptions {
  /** Writes the lease's continuation (throws LeaseLostError when the lease is gone). */
  write: (etag: string) => Promise<void>;
  /** Called after a write succeeded, with the documents it covers (every batch merged into it). */
  written: (etag: string, documents: number) => void;
  /**
   * Longest a handled batch's checkpoint may be held back by {@link CoalescingCheckpointer.defer} (ms, by
   * `clock.monotonicNow`); 0 writes every deferred checkpoint at once.
   */
  maxDelay?: number;
  clock?: Clock;
}

/**
 * Checkpoints off the read path, with two ways of writing fewer lease documents:
 * - at most one lease write in flight per lease; while it runs, later etags replace each other (only the
 *   newest matters), never a stale one;
 * - {@link defer}: the worker holds a handled batch's checkpoint while it waits for the next page; when that
 *   page brings changes, the next batch's checkpoint replaces it ({@link commit} writes it otherwise). A
 *   timer writes it once `maxDelay` ms have passed since the oldest handled batch not yet submitted (a slow
 *   read, a handler retrying the next batch).
 * A failure (lease lost) is kept and rethrown to the worker.
 */
export class CoalescingCheckpointer {
  private pending: { etag: string; documents: number } | undefined;
  private deferred: { etag: string; documents: number } | undefined;
  private running: Promise<void> | undefined;
  private timer: AbortController | undefined;
  private failure: unknown;
  private readonly write: (etag: string) => Promise<void>;
  private readonly written: (etag: string, documents: number) => void;
  private readonly maxDelay: number;
  private readonly clock: Clock;

  constructor(o: CoalescingCheckpointerOptions) {
    this.write = o.write;
    this.written = o.written;
    this.maxDelay = o.maxDelay ?? 0;
    this.clock = o.clock ?? systemClock;
  }

  /** Writes `etag` now (or after the write in flight, unless a newer one replaces it first). */
  submit(etag: string, documents: number): void {
    const held = this.deferred?.documents ?? 0;
    this.deferred = undefined;
    this.stopTimer();
    this.pending = { etag, documents: (this.pending?.documents ?? 0) + held + documents };
    this.running ??= this.drain();
  }

  /**
   * Holds a handled batch's checkpoint: a later {@link defer} or {@link submit} replaces it; {@link commit},
   * {@link flush} or the `maxDelay` timer writes it. Returns true when it was submitted at once (maxDelay 0).
   */
  defer(etag: string, documents: number): boolean {
    if (this.maxDelay === 0) {
      this.submit(etag, documents);
      return true;
    }
    if (this.deferred) {
      this.deferred = { etag, documents: this.deferred.documents + documents };
      return false;
    }
    this.deferred = { etag, documents };
    const timer = new AbortController();
    this.timer = timer;
    void this.clock.sleep(this.maxDelay, timer.signal).then(() => {
      if (timer.signal.aborted) return;
      this.timer = undefined;
      this.commit();
    });
    return false;
  }

  private stopTimer(): void {
    this.timer?.abort();
    this.timer = undefined;
  }

  /** The documents of the handled batches whose checkpoint is held (not yet submitted). */
  get heldDocuments(): number {
    return this.deferred?.documents ?? 0;
  }

  /** Writes the held checkpoint, if any. */
  commit(): void {
    const d = this.deferred;
    if (d) this.submit(d.etag, 0);
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending && this.failure === undefined) {
        const next = this.pending;
        this.pending = undefined;
        await this.write(next.etag);
        this.written(next.etag, next.documents);
      }
    } catch (e) {
      this.failure = e;
      this.pending = undefined;
    } finally {
      this.running = undefined;
    }
  }

  throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Drops the held checkpoint and its timer without writing (the worker ends without a lease to write). */
  close(): void {
    this.deferred = undefined;
    this.stopTimer();
  }

  /** Writes the held checkpoint and waits until everything submitted is written (or throws what failed). */
  async flush(): Promise<void> {
    if (this.failure === undefined) this.commit();
    await this.running;
    this.throwIfFailed();
  }
}
