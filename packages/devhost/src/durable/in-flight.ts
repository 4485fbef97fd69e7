import { systemClock } from "@cosmos-feed/core/clock";

/**
 * The orchestration work items a dispatcher runs, as its stop sees them: a graceful stop gives those in flight a
 * bound (DURABLE_STOP_WORK_ITEMS_MS) to end, then cuts the rest — it stops waiting for them, as DurableTask.Core's
 * WorkItemDispatcher.StopAsync stops waiting for its work items after its retries, and the cut ones leave their
 * inputs in the store for the next host (or this one after a restart). A cut work item keeps running in the
 * background (an orchestrator invocation cannot be recalled) but must commit nothing: it asks `cut` first.
 */
export class InFlightWorkItems {
  private readonly running = new Set<Promise<void>>();
  private readonly cutting = new AbortController();
  private readonly cutSignal: Promise<"cut">;

  constructor() {
    const signal = this.cutting.signal;
    this.cutSignal = new Promise((resolve) => signal.addEventListener("abort", () => resolve("cut")));
  }

  /** The stop's bound passed (or the hub was abandoned): no work item may commit any more. */
  get cut(): boolean {
    return this.cutting.signal.aborted;
  }

  get size(): number {
    return this.running.size;
  }

  /**
   * Runs a work item: "ended" once it has (its failure is thrown), "cut" when the stop cuts it first — the caller
   * moves on, the work item's own outcome is dropped.
   */
  run(work: Promise<void>): Promise<"ended" | "cut"> {
    const tracked = work.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
    return Promise.race([work.then(() => "ended" as const), this.cutSignal]);
  }

  /** Waits up to `boundMs` (real time) for the work items in flight to end, then cuts the rest; how many were cut. */
  async drain(boundMs: number): Promise<number> {
    const done = new AbortController();
    const all = Promise.allSettled([...this.running]).then(() => done.abort());
    await Promise.race([all, systemClock.sleep(boundMs, done.signal)]);
    const left = this.running.size;
    this.cutAll();
    return left;
  }

  /** Cuts every work item at once (a crash: nothing is waited for). */
  cutAll(): void {
    this.cutting.abort();
  }
}
