import type { Clock } from "@cosmos-feed/core/clock";
import { assignSuccessors, nextSlotStart, stoppingHosts } from "./balancing/watch-schedule.js";
import { RequestAbortedError } from "./bounded-request.js";
import type { WatchSlots } from "./lease-watch.js";
import { isAvailable, type Lease } from "./leases/lease.js";
import type { LeaseView } from "./leases/view.js";
import type { LoadBalancer } from "./load-balancer.js";
import { ChangeFeedDefaults, type ResolvedOptions } from "./options.js";

/** A lease being handed off: its current copy, and whether this host still processes it. */
export interface HandoffEntry {
  readonly lease: Lease;
  readonly signal: AbortSignal;
}

/** When to release which leases to which successor. */
export interface HandoffBatch<E extends HandoffEntry> {
  successor: string;
  /** Wall-clock time (ms since the epoch) to release at. */
  at: number;
  /** Released now rather than just before the successor's watch slot (too far off): the fleet signal tells it. */
  untimed: boolean;
  leases: E[];
}

export interface HandoffPlannerOptions {
  options: ResolvedOptions;
  view: LeaseView;
  /** The leases as the balancer sees them, and its bounded lease-feed read. */
  balancer: Pick<LoadBalancer, "effectiveLeases" | "refreshView">;
  /** Whose watch slot comes when (and who is alive). */
  slots: Pick<WatchSlots, "watchSchedule">;
  clock: Clock;
}

/**
 * A stopping host's hand-off: successors for its leases (fewest leases first, so the survivors end up
 * balanced) released just before each successor's watch slot, then processing the released leases until each
 * is taken (or the handoff timeout passes, or nobody else is alive), so the feed does not pause.
 */
export class HandoffPlanner {
  constructor(private readonly o: HandoffPlannerOptions) {}

  /**
   * The whole hand-off: release each successor's share at its time (all at once when `signal` fires), then
   * keep the released leases flowing until they are taken. Entries whose lease was taken are closed.
   */
  async handOff<E extends HandoffEntry & { close(reason: "released"): void }>(
    entries: E[],
    release: (entry: E, successor: string) => Promise<void>,
    signal: AbortSignal,
    released: () => Promise<void> = async () => undefined,
  ): Promise<void> {
    const plan = await this.plan(entries, signal);
    const releasing: Promise<void>[] = [];
    // Leases released without waiting for their successor's slot (those batches come first: `at` is now): once they
    // are all released, the fleet signal tells the successors, which take them at their next round.
    const untimed: Promise<void>[] = [];
    const signalUntimed = () => {
      if (untimed.length > 0) releasing.push(Promise.all(untimed.splice(0)).then(released));
    };
    for (const batch of plan) {
      if (!batch.untimed) signalUntimed();
      if (!(await this.waitFor(batch, signal))) break;
      const batchReleased = Promise.all(batch.leases.map((e) => release(e, batch.successor))).then(
        () => undefined,
      );
      (batch.untimed ? untimed : releasing).push(batchReleased);
    }
    signalUntimed();
    await Promise.all(releasing);
    if (plan.length > 0) await this.drainUntilTaken(entries, (e) => e.close("released"), signal);
  }

  /** Batches in release order; empty when no other host is alive. */
  async plan<E extends HandoffEntry>(entries: E[], signal?: AbortSignal): Promise<HandoffBatch<E>[]> {
    const { options: r, balancer, slots, clock } = this.o;
    const me = r.instanceName;
    await this.refresh(signal);
    const now = clock.now();
    const counts = new Map<string, number>();
    // Hosts seen releasing their own leases are stopping too: a successor must be one that stays (one that has
    // released part of its leases would otherwise look the least loaded).
    const stopping = stoppingHosts(this.o.view.leases(), now, r.leaseAcquireInterval);
    for (const l of balancer.effectiveLeases(now)) {
      if (
        l.owner !== null &&
        l.owner !== me &&
        !stopping.has(l.owner) &&
        !isAvailable(l, now, r.leaseExpirationInterval)
      ) {
        counts.set(l.owner, (counts.get(l.owner) ?? 0) + 1);
      }
    }
    const byId = new Map(entries.map((e) => [e.lease.id, e]));
    const assignment = assignSuccessors(
      entries.map((e) => e.lease),
      counts,
      me,
    );
    const schedule = slots.watchSchedule(now);
    const lead = Math.min(ChangeFeedDefaults.handoffLead, r.leaseWatchInterval / 4);
    // Where the fleet's slots are further apart than a round, every host reads the fleet signal each round: all is
    // released now and the signal raised. Timing a release to a successor's slot there would rely on a schedule
    // that the stop itself changes (hosts stopping together shift every later host's slots), and a successor that
    // does not read in the slot planned for it would see its leases only once the hand-off went stale.
    const signalled = schedule.participants.length * r.leaseWatchInterval > r.leaseAcquireInterval;
    const batches = [...assignment].map(([successor, leases]) => {
      // Otherwise every slot comes within N × leaseWatchInterval ≤ a round: each successor's share is released
      // just before its next one (a successor that is no participant has none: released now).
      const slot =
        r.leaseWatchInterval > 0 && !signalled ? nextSlotStart(schedule, successor, now + lead) : undefined;
      return {
        successor,
        at: slot !== undefined ? slot - lead : now,
        untimed: slot === undefined,
        leases: leases.map((l) => byId.get(l.id) as E),
      };
    });
    return batches.sort((a, b) => a.at - b.at);
  }

  /**
   * Reads the lease feed; a failure leaves the view as it was. Bounded by requestTimeout and `signal`: a read that
   * never answers would hold stop() for good. One given up in flight may still move the feed, so the next refresh
   * lists every lease again.
   */
  private async refresh(signal: AbortSignal | undefined): Promise<void> {
    // The balancer's bounded read (a timeout drops the feed); one cut short by the stop's signal drops it too.
    await this.o.balancer.refreshView(signal).catch((e: unknown) => {
      if (e instanceof RequestAbortedError) this.o.view.dropFeed();
    });
  }

  /** Waits until `batch.at` (false when `signal` fired first: release everything now). */
  async waitFor(batch: { at: number }, signal: AbortSignal): Promise<boolean> {
    await this.o.clock.sleep(batch.at - this.o.clock.now(), signal);
    return !signal.aborted;
  }

  /**
   * Calls `taken(entry)` for each entry once another host took its lease (or it stopped here), until all are,
   * the handoff timeout passes, no other live host is left (a whole-app shutdown does not wait), or `signal`.
   */
  async drainUntilTaken<E extends HandoffEntry>(
    entries: E[],
    taken: (entry: E) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const { options: r, view, slots, clock } = this.o;
    const deadline = clock.now() + r.handoffTimeout;
    const pending = new Set(entries.filter((e) => !e.signal.aborted));
    while (pending.size > 0 && clock.now() < deadline && !signal.aborted) {
      await clock.sleep(ChangeFeedDefaults.handoffCheckInterval, signal);
      if (signal.aborted) break;
      await this.refresh(signal);
      if (slots.watchSchedule(clock.now()).participants.length < 2) break;
      for (const e of [...pending]) {
        const current = view.get(e.lease.id);
        if (!current || current.owner !== null || e.signal.aborted) {
          taken(e);
          pending.delete(e);
        }
      }
    }
  }
}
