/**
 * Checkpoints off the read path: at most one lease write in flight per lease; while it runs, later etags
 * replace each other (only the newest matters), so a fast feed costs fewer lease writes, never a stale one.
 * A failure (lease lost) is kept and rethrown to the worker.
 */
export class CoalescingCheckpointer {
  private pending: { etag: string; documents: number } | undefined;
  private running: Promise<void> | undefined;
  private failure: unknown;

  constructor(
    private readonly write: (etag: string) => Promise<void>,
    private readonly written: (etag: string, documents: number) => void,
  ) {}

  submit(etag: string, documents: number): void {
    this.pending = { etag, documents: (this.pending?.documents ?? 0) + documents };
    this.running ??= this.drain();
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

  /** Waits until everything submitted is written (or throws what failed). */
  async flush(): Promise<void> {
    await this.running;
    this.throwIfFailed();
  }
}
