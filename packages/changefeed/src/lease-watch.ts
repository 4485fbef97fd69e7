import type { Clock } from "@cosmos-feed/core/clock";
import type { FleetSignal } from "./balancing/fleet-signal.js";
import { supersededTokens } from "./balancing/superseded.js";
import {
  nextSlotStart,
  slotOwner,
  type WatchSchedule,
  watchParticipants,
} from "./balancing/watch-schedule.js";
import { isAvailable, type Lease } from "./leases/lease.js";
import type { LeaseView } from "./leases/view.js";
import type { ResolvedOptions } from "./options.js";

export interface WatchSlotsOptions {
  options: ResolvedOptions;
  view: LeaseView;
  clock: Clock;
  /**
   * Read every timed round, raised on an event, where the slots call for it. Without it (a test driving one
   * balancer), nothing is signalled.
   */
  fleet?: Pick<FleetSignal, "look" | "raise">;
}

/**
 * Whose turn it is to read the lease feed (wall-clock slots shared by the hosts the view shows alive, see
 * balancing/watch-schedule.ts), and so whether the fleet signal is needed: where a host's slots are further apart
 * than a round, an event reaches the others through the signal instead. Used by the balancer's rounds, the watch,
 * the hand-off planner and the processor: it depends on none of them.
 */
export class WatchSlots {
  constructor(private readonly o: WatchSlotsOptions) {}

  watchSchedule(nowMs: number): WatchSchedule {
    const r = this.o.options;
    const asOf = this.o.view.asOf(nowMs);
    return {
      participants: watchParticipants(this.o.view.leases(), r.instanceName, asOf, r.leaseExpirationInterval),
      watchSlot: r.leaseWatchInterval,
    };
  }

  /**
   * True when this host's watch reads are further apart than `ms` (N hosts × leaseWatchInterval). Only then does a
   * host read the fleet signal (at more than a balancing round apart, its view could miss an event for longer than
   * a round); in a smaller fleet, or with the watch off or alone (a read every round), the watch is enough.
   */
  slotsLongerThan(ms: number): boolean {
    const r = this.o.options;
    if (r.leaseWatchInterval === 0) return false;
    return this.watchSchedule(this.o.clock.now()).participants.length * r.leaseWatchInterval > ms;
  }

  /**
   * Reads the fleet signal: true when it moved (see FleetSignal.look). The caller reads it only where
   * `slotsLongerThan` a round; without a signal, false.
   */
  lookAtFleetSignal(): Promise<boolean> {
    return this.o.fleet ? this.o.fleet.look() : Promise.resolve(false);
  }

  /**
   * Raises the fleet signal when anyone may be reading it: hosts' views of the fleet size differ a little, so it is
   * raised from half the size at which it is read.
   */
  raiseFleetSignal(signal?: AbortSignal): Promise<void> {
    if (!this.o.fleet || !this.slotsLongerThan(this.o.options.leaseAcquireInterval / 2))
      return Promise.resolve();
    return this.o.fleet.raise(signal);
  }
}

export interface LeaseWatchOptions {
  options: ResolvedOptions;
  view: LeaseView;
  clock: Clock;
  slots: Pick<WatchSlots, "watchSchedule" | "raiseFleetSignal">;
  /** The balancer: one balancing round (resolving with the leases it took), and its bounded lease-feed read. */
  rounds: { balance(): Promise<number>; refreshView(): Promise<Lease[]> };
}

/**
 * The lease watch: this host's reads of the lease container's feed, one in each of its slots (planned again when
 * the view's participants change), and what a read found (a released lease, a newly expired one: balanced at
 * once, and signalled to the fleet when nobody took it).
 */
export class LeaseWatch {
  /** The slot start the watch sleeps until (undefined: no slot, a read every leaseAcquireInterval). */
  private plannedSlot: number | undefined;
  /** The participants the planned slot was chosen among (one string, to compare with the view's later). */
  private plannedAmong = "";
  /** The view's freshness when the slot was planned: an unchanged one has the same participants. */
  private plannedAtFresh = Number.NaN;
  /** Ends the watch's sleep early, while it sleeps (see replan). */
  private wakeEarly: (() => void) | undefined;
  /** Tokens available (as of the view's freshness) at the last watch read: a new one is news for everyone. */
  private availableAtLastWatch = new Set<string>();

  constructor(private readonly o: LeaseWatchOptions) {}

  /**
   * This host's next watch read: its own slot among the participants (every N × leaseWatchInterval for N hosts:
   * one read per slot in the whole fleet; what happens in between reaches this host through the fleet signal,
   * read every round). Alone, or with the watch off, every leaseAcquireInterval.
   */
  nextWatchAt(nowMs: number): number {
    const r = this.o.options;
    const latest = nowMs + r.leaseAcquireInterval;
    this.plannedSlot = undefined;
    if (r.leaseWatchInterval === 0) return latest;
    const schedule = this.o.slots.watchSchedule(nowMs);
    this.plannedAmong = schedule.participants.join("\n");
    this.plannedAtFresh = this.o.view.freshAt;
    if (schedule.participants.length < 2) return latest;
    const at = nextSlotStart(schedule, r.instanceName, nowMs);
    this.plannedSlot = at;
    return at ?? latest;
  }

  /**
   * Sleeps until this host's next slot (`nextWatchAt`). True when the slot has come; false when `signal` ended the
   * sleep, or a re-plan did (the caller then plans again from the view as it is).
   */
  async untilNextSlot(signal: AbortSignal): Promise<boolean> {
    const woken = new AbortController();
    const wake = () => woken.abort();
    signal.addEventListener("abort", wake, { once: true });
    this.wakeEarly = wake;
    try {
      const now = this.o.clock.now();
      await this.o.clock.sleep(this.nextWatchAt(now) - now, woken.signal);
      return !woken.signal.aborted;
    } finally {
      signal.removeEventListener("abort", wake);
      this.wakeEarly = undefined;
    }
  }

  /**
   * Called after the view was refreshed outside the watch (a balancing round's read on a fleet signal): when the
   * participants changed since the sleeping watch planned its slot, it wakes and plans again. Without this, a host
   * keeps the slot it planned from a view of the fleet before a scale-out or a cold start (up to N slots away)
   * while the others already count it among more or fewer participants: for up to N slots, the fleet's slots
   * overlap (the lease feed read twice) or go unread.
   */
  replan(): void {
    if (!this.wakeEarly || this.o.options.leaseWatchInterval === 0) return;
    if (this.o.view.freshAt === this.plannedAtFresh) return;
    const now = this.o.clock.now();
    if (this.o.slots.watchSchedule(now).participants.join("\n") !== this.plannedAmong) this.wakeEarly();
  }

  /**
   * The watch's tick, at the time `nextWatchAt` gave: reads the lease feed, unless the slot it was planned for
   * is no longer this host's in the view (other hosts' leases came into it since: a host plans its first slot
   * from the view it started with, in which most of a starting fleet owns nothing yet). The slot is then another
   * host's, and the next one is planned from the view as it is now: one read per slot in the fleet, not two.
   */
  async watchTick(): Promise<void> {
    const planned = this.plannedSlot;
    if (planned !== undefined && !this.ownsSlot(planned)) return;
    await this.watchRead();
  }

  /** Whether the slot starting at `slotStart` is this host's by the current view (alone: always). */
  private ownsSlot(slotStart: number): boolean {
    const schedule = this.o.slots.watchSchedule(this.o.clock.now());
    if (schedule.participants.length < 2) return true;
    return slotOwner(schedule, slotStart) === this.o.options.instanceName;
  }

  /**
   * The watch's read: refreshes the view, balances when a lease was released or newly found expired, and raises
   * the fleet signal for an expiry nobody else may have seen yet (this host read the feed in its slot, alone).
   */
  async watchRead(): Promise<void> {
    const changed = await this.o.rounds.refreshView();
    const now = this.o.clock.now();
    const asOf = this.o.view.asOf(now);
    const expiry = this.o.options.leaseExpirationInterval;
    const leases = this.o.view.leases();
    // A split's parent, once its children tile its range, is deleted (or left over): forgotten once it looks
    // available, so that neither this host nor its news count it. (The round's strategy works the superseded set
    // out again: a pluggable, public interface given the leases alone, on the view as the round finds it.)
    const superseded = supersededTokens(leases);
    const available = new Set<string>();
    for (const l of leases) {
      if (!isAvailable(l, asOf, expiry)) continue;
      if (superseded.has(l.leaseToken)) this.o.view.forget(l);
      else available.add(l.leaseToken);
    }
    const news = [...available].some((t) => !this.availableAtLastWatch.has(t));
    this.availableAtLastWatch = available;
    const released = changed.some((l) => l.owner === null);
    if (!released && !news) return;
    const took = await this.o.rounds.balance();
    if (news && took === 0) await this.o.slots.raiseFleetSignal();
  }
}
