import type { Clock } from "@cosmos-feed/core/clock";
import { errorMessage } from "../errorMessage.js";
import type { TaskHubBackend } from "./backend.js";
import type { ActivityDoc } from "./documents.js";
import { activityResultEvent } from "./engine.js";
import type { ActivityInvoker, FailureDetails, HistoryEvent } from "./types.js";

/**
 * The activity worker of one host (docs/durable-design.md, "Activities"): its own queue and concurrency limit,
 * apart from orchestrations and from the change feed — a slow or hung activity holds one of its slots and nothing
 * else. A work item runs on the host that claimed it (`lockedBy` / `lockedUntil` on the document, renewed while it
 * runs); the host whose commit scheduled it claims it in that commit. The result goes to the dispatcher as an event
 * for the instance's next work item, which deletes the activity document in its commit (recorded once).
 */

export interface ActivityWorkerOptions {
  backend: TaskHubBackend;
  clock: Clock;
  /** This host's claim name (unique per process). */
  owner: string;
  lockMs: number;
  maxConcurrent: number;
  maxPayloadBytes: number;
  invoke: ActivityInvoker;
  /** Hands the result on; the dispatcher calls `settled` once its commit stored it (or gave it up). */
  completed: (doc: ActivityDoc, event: HistoryEvent) => void;
  log: (level: "debug" | "warning" | "error", message: string) => void;
}

export class ActivityWorker {
  /** Activities queued, running, or whose result waits for its commit, by `<pk>/<id>`. */
  private readonly held = new Set<string>();
  private readonly queue: ActivityDoc[] = [];
  private active = 0;
  private stopped = false;
  private readonly running = new Set<Promise<void>>();
  private readonly rechecks = new Set<string>();
  /** Activities held per instance under its claim (no document). */
  private readonly claimed = new Map<string, number>();
  private readonly stopping = new AbortController();

  constructor(private readonly o: ActivityWorkerOptions) {}

  private key(doc: ActivityDoc) {
    return `${doc.pk}/${doc.id}`;
  }

  /** An activity this host's own commit scheduled (already claimed by it). */
  offerClaimed(doc: ActivityDoc): void {
    const key = this.key(doc);
    if (this.stopped || this.held.has(key)) return;
    this.held.add(key);
    if (doc.virtual) {
      const id = doc.item.instanceId;
      this.claimed.set(id, (this.claimed.get(id) ?? 0) + 1);
    }
    this.queue.push(doc);
    this.pump();
  }

  /** An activity the feed or the pending-work scan found: claimed here unless another live host holds it. */
  async offerStored(doc: ActivityDoc): Promise<void> {
    const key = this.key(doc);
    if (this.stopped) return;
    const what = `Activity '${doc.item.name}' of '${doc.item.instanceId}' (${doc.id})`;
    if (this.held.has(key)) {
      this.o.log("debug", `${what} runs here already: the stored copy is left to that run.`);
      return;
    }
    const now = this.o.clock.now();
    if (doc.lockedUntil !== undefined && doc.lockedUntil >= now) {
      this.o.log(
        "debug",
        `${what} is claimed by ${doc.lockedBy} until ${new Date(doc.lockedUntil).toISOString()}.`,
      );
      this.recheckWhenExpired(doc, doc.lockedUntil - now);
      return;
    }
    this.held.add(key);
    try {
      const claimed = await this.o.backend.claimActivityWorkItem(doc, this.o.owner, now + this.o.lockMs);
      if (!claimed) {
        this.held.delete(key);
        return;
      }
      this.queue.push(claimed);
      this.pump();
    } catch (e) {
      this.held.delete(key);
      throw e;
    }
  }

  /**
   * A claim seen valid is looked at again when it expires: a live holder has renewed it by then (the claim then
   * fails on its etag, and the renewed document comes by the feed), a dead one has not, and its work runs here.
   */
  private recheckWhenExpired(doc: ActivityDoc, inMs: number): void {
    const key = this.key(doc);
    if (this.rechecks.has(key)) return;
    this.rechecks.add(key);
    void this.o.clock.sleep(inMs + 1, this.stopping.signal).then(async () => {
      this.rechecks.delete(key);
      if (this.stopped) return;
      await this.offerStored({ ...doc, lockedUntil: undefined }).catch((e: unknown) =>
        this.o.log(
          "warning",
          `Activity '${doc.item.name}': claiming it after its claim expired: ${String(e)}`,
        ),
      );
    });
  }

  /** The result's commit is done (stored, found recorded already, or given up): the key may be offered again. */
  settled(pk: string, id: string): void {
    this.held.delete(`${pk}/${id}`);
  }

  /** Instances with activities this host holds under their instance's claim (the hub renews those claims). */
  claimedInstances(): string[] {
    return [...this.claimed.keys()];
  }

  private unclaim(doc: ActivityDoc) {
    if (!doc.virtual) return;
    const id = doc.item.instanceId;
    const n = (this.claimed.get(id) ?? 1) - 1;
    if (n <= 0) this.claimed.delete(id);
    else this.claimed.set(id, n);
  }

  get pending(): number {
    return this.queue.length + this.active;
  }

  /** Stops taking work; waits for running activities to hand their results on. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.queue.length = 0;
    await Promise.allSettled([...this.running]);
  }

  private pump() {
    while (!this.stopped && this.active < this.o.maxConcurrent && this.queue.length > 0) {
      const doc = this.queue.shift() as ActivityDoc;
      this.active++;
      const run = this.run(doc).finally(() => {
        this.active--;
        this.running.delete(run);
        this.pump();
      });
      this.running.add(run);
    }
  }

  private async run(doc: ActivityDoc): Promise<void> {
    // A stored work item's own claim is renewed here; a claimed one's by the hub, on its instance (no controller:
    // its abort() made an exception object per activity).
    const renewing = doc.virtual ? undefined : new AbortController();
    const renew = renewing ? this.renewWhileRunning(doc, renewing.signal) : undefined;
    try {
      const outcome = await this.o.invoke(doc.item).catch((e: unknown): { failure: FailureDetails } => ({
        failure: { ErrorType: "Error", ErrorMessage: errorMessage(e) },
      }));
      const event = activityResultEvent(
        doc.item,
        outcome,
        new Date(this.o.clock.now()),
        this.o.maxPayloadBytes,
      );
      this.o.completed(doc, event);
    } finally {
      this.unclaim(doc);
      if (renewing) {
        renewing.abort();
        await renew;
      }
    }
  }

  /** Keeps the claim while the activity runs longer than half its lock. */
  private async renewWhileRunning(doc: ActivityDoc, signal: AbortSignal): Promise<void> {
    let current = doc;
    while (!signal.aborted) {
      await this.o.clock.sleep(this.o.lockMs / 2, signal);
      if (signal.aborted) return;
      try {
        const renewed = await this.o.backend.claimActivityWorkItem(
          current,
          this.o.owner,
          this.o.clock.now() + this.o.lockMs,
        );
        if (!renewed) {
          this.o.log(
            "warning",
            `Activity '${doc.item.name}' of '${doc.item.instanceId}': its claim was taken over.`,
          );
          return;
        }
        current = renewed;
      } catch (e) {
        this.o.log("warning", `Activity '${doc.item.name}': renewing its claim failed: ${String(e)}`);
      }
    }
  }
}
