import type { Container } from "@azure/cosmos";
import type { Clock } from "@cosmos-feed/core/clock";
import type { ProcessorEvents } from "./events.js";
import { LeaseReplacer } from "./lease-replacer.js";
import type { Lease } from "./leases/lease.js";
import { releaseAs } from "./leases/mutations.js";
import { LeaseLostError, type LeaseStore } from "./leases/store.js";
import type { LeaseView } from "./leases/view.js";
import type { ResolvedOptions } from "./options.js";
import type { StartPosition } from "./processing/feed-reader.js";
import type { FeedPollWakeup } from "./processing/wakeup.js";
import type { ChangeFeedHandler } from "./processing/worker.js";
import { type LeaseClose, LeaseSupervisor } from "./supervisor.js";

export interface OwnedLeasesOptions<T> {
  options: ResolvedOptions;
  store: LeaseStore;
  view: LeaseView;
  monitored: Container;
  handler: ChangeFeedHandler<T>;
  startPosition: StartPosition;
  clock: Clock;
  events: ProcessorEvents;
  /** Shared by this host's workers: cuts their feed-poll waits short (processor.wake()). */
  wakeup?: FeedPollWakeup;
  /** Fires when the processor stops: ends a split's replacement in flight. */
  signal: AbortSignal;
  /** Tells the other hosts that the leases changed (a split's children exist): they rebalance at their next round. */
  changed?: () => Promise<void>;
}

/**
 * The leases this host processes: one {@link LeaseSupervisor} each, started when a lease is taken and
 * dropped once it has closed, with what its close means (a `lost` event, a split's replacement, a gone
 * container's lease given up and not taken again).
 */
export class OwnedLeases<T> {
  /** By lease token; a closing supervisor stays until it has ended, so its lease is not taken again meanwhile. */
  readonly byToken = new Map<string, LeaseSupervisor<T>>();
  /** Leases of a monitored container that is gone: not taken again by this host. */
  readonly excluded = new Set<string>();
  /** Set by closeAll(): a split handled meanwhile must not start its children after the processor stopped. */
  private closing = false;

  constructor(private readonly o: OwnedLeasesOptions<T>) {}

  /** Tokens processed here and not closing. */
  tokens(): string[] {
    return [...this.byToken.values()]
      .filter((s) => s.expectedOwner !== null && !s.closeReason)
      .map((s) => s.leaseToken);
  }

  /** Supervisors still processing their lease (not closing). */
  active(): LeaseSupervisor<T>[] {
    return [...this.byToken.values()].filter((s) => !s.closeReason);
  }

  /** Starts a supervisor for a lease just acquired or created here, unless one already runs for it. */
  supervise(lease: Lease, sentAt: number): void {
    // A split's children are created owned by this host before they are started here, so a balancing round in
    // between takes them too; a second worker would orphan the first (both deliver every change).
    if (this.closing || this.byToken.has(lease.leaseToken)) return;
    const { events, view } = this.o;
    const s = new LeaseSupervisor<T>({
      lease,
      acquireSentAt: sentAt,
      me: this.o.options.instanceName,
      store: this.o.store,
      monitored: this.o.monitored,
      handler: this.o.handler,
      options: this.o.options,
      startPosition: this.o.startPosition,
      clock: this.o.clock,
      wakeup: this.o.wakeup,
      workerEvents: {
        checkpointed: (token, etag, n) => events.fire("checkpointed", token, etag, n),
        handlerFailed: (token, error) => events.report(error, token),
        readFailed: (token, error) => events.report(error, token),
        deadLettered: (token, n) => events.fire("deadLettered", token, n),
      },
      written: (l) => view.apply(l),
      renewFailed: (token, error) => events.report(error, token),
    });
    this.byToken.set(lease.leaseToken, s);
    events.fire("acquired", lease.leaseToken);
    s.done
      .then((close) => this.closed(s, close))
      .catch((e: unknown) => events.report(e, s.leaseToken))
      .finally(() => this.forget(s));
  }

  /** Releases a lease (to `successor` as a hand-off hint): no more renewals; its worker goes on until closed. */
  async release(s: LeaseSupervisor<T>, successor: string | undefined): Promise<void> {
    try {
      await s.write(releaseAs(this.o.options.instanceName, successor), () => s.released());
      this.o.events.fire("released", s.leaseToken);
    } catch (e) {
      s.close("released");
      s.released();
      if (!(e instanceof LeaseLostError)) this.o.events.report(e, s.leaseToken);
    }
  }

  /** Closes every lease without releasing (abandon) and waits for them to end. */
  async closeAll(): Promise<void> {
    this.closing = true;
    const all = [...this.byToken.values()];
    for (const s of all) s.close("stopped");
    await Promise.allSettled(all.map((s) => s.done));
    this.byToken.clear();
  }

  /** What a closed lease means: report it, and replace a split lease. */
  private async closed(s: LeaseSupervisor<T>, close: LeaseClose): Promise<void> {
    const { events } = this.o;
    const token = s.leaseToken;
    switch (close.reason) {
      case "released":
      case "stopped":
        return;
      case "handler-failure":
        events.report(close.error, token);
        return;
      case "container-gone":
        this.excluded.add(token);
        events.report(close.error, token);
        events.fire("lost", token, close.reason);
        // As .NET: give the lease up, so whoever can still read the container may take it.
        await s.write(releaseAs(this.o.options.instanceName)).catch(() => undefined);
        return;
      case "split":
        return this.replace(s);
      default:
        events.fire("lost", token, close.reason);
    }
  }

  private async replace(s: LeaseSupervisor<T>): Promise<void> {
    const { events, view } = this.o;
    const token = s.leaseToken;
    const replacer = new LeaseReplacer({
      store: this.o.store,
      monitored: this.o.monitored,
      me: this.o.options.instanceName,
      clock: this.o.clock,
      requestTimeout: this.o.options.requestTimeout,
      created: (l) => view.apply(l),
      deleted: (l) => view.forget(l),
    });
    const sentAt = this.o.clock.monotonicNow();
    const done = await replacer.replace(s.lease, this.o.signal);
    // Only now: until the parent is gone, a balancing round must not see it as ours-but-idle and re-take it.
    this.forget(s);
    if (done.kind === "stopped") return;
    if (done.kind === "lost") return events.fire("lost", token, "gone");
    const successors = done.kind === "merged" ? [done.successor] : done.children;
    if (done.kind === "merged") events.fire("merged", token, done.successor.leaseToken);
    else
      events.fire(
        "split",
        token,
        successors.map((c) => c.leaseToken),
      );
    for (const c of successors) this.supervise(c, sentAt);
    await this.o.changed?.();
  }

  /** Drops a supervisor unless another one runs for its lease now. */
  private forget(s: LeaseSupervisor<T>): void {
    if (this.byToken.get(s.leaseToken) === s) this.byToken.delete(s.leaseToken);
  }
}
