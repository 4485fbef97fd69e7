import type { Container } from "@azure/cosmos";
import type { Clock } from "@cosmos-feed/core/clock";
import type { FleetSignal } from "./balancing/fleet-signal.js";
import type { LoadBalancingStrategy } from "./balancing/strategy.js";
import { supersededTokens } from "./balancing/superseded.js";
import {
  handedTo,
  nextSlotStart,
  type WatchSchedule,
  watchParticipants,
} from "./balancing/watch-schedule.js";
import { abandonedBy, boundedRequest, RequestTimeoutError } from "./bounded-request.js";
import { isAvailable, type Lease } from "./leases/lease.js";
import { acquireAs } from "./leases/mutations.js";
import { LeaseLostError, type LeaseStore } from "./leases/store.js";
import type { LeaseView } from "./leases/view.js";
import type { ResolvedOptions } from "./options.js";

/** What the balancer needs to know about a lease this host runs. */
export interface RunningLease {
  readonly expectedOwner: string | null;
}

export interface LoadBalancerOptions {
  options: ResolvedOptions;
  strategy: LoadBalancingStrategy;
  store: LeaseStore;
  view: LeaseView;
  monitored: Container;
  clock: Clock;
  /**
   * Read every timed round (refresh the view when it moved); raised after this host took leases. Without it (a
   * test driving one balancer), nothing is signalled.
   */
  fleet?: Pick<FleetSignal, "look" | "raise">;
  /** The leases this host runs, by token. */
  running: ReadonlyMap<string, RunningLease>;
  /** Starts processing a lease just acquired (`sentAt`: monotonic time the acquiring write was sent). */
  takeOver: (lease: Lease, sentAt: number) => void;
  /** Another host owns a lease this host runs: stop it. */
  stolen: (leaseToken: string) => void;
  /** Tokens this host must not take (e.g. their monitored container is gone). */
  excluded: ReadonlySet<string>;
  report: (error: unknown, leaseToken: string | undefined) => void;
  signal: AbortSignal;
}

/**
 * Runs the balancing strategy over the lease view (no request unless a lease is taken), detects leases stolen
 * from this host, and knows the watch schedule (whose turn it is to read the lease container's feed).
 */
export class LoadBalancer {
  /** Rounds run one at a time (the timer's and the watch's). */
  private chain: Promise<void> = Promise.resolve();
  /**
   * The last round changed this host's leases (it took a foothold, took or lost leases): follow up after
   * leaseJoinSettleDelay, on a refreshed view, while the fleet is moving.
   */
  private followUp = false;
  /** The slot start the watch sleeps until (undefined: no slot, a read every leaseAcquireInterval). */
  private plannedSlot: number | undefined;
  /** Tokens available (as of the view's freshness) at the last watch read: a new one is news for everyone. */
  private availableAtLastWatch = new Set<string>();

  constructor(private readonly o: LoadBalancerOptions) {}

  watchSchedule(nowMs: number): WatchSchedule {
    const r = this.o.options;
    const asOf = this.o.view.asOf(nowMs);
    return {
      participants: watchParticipants(this.o.view.leases(), r.instanceName, asOf, r.leaseExpirationInterval),
      watchSlot: r.leaseWatchInterval,
    };
  }

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
    const schedule = this.watchSchedule(nowMs);
    if (schedule.participants.length < 2) return latest;
    const at = nextSlotStart(schedule, r.instanceName, nowMs);
    this.plannedSlot = at;
    return at ?? latest;
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
    const { participants, watchSlot } = this.watchSchedule(this.o.clock.now());
    if (participants.length < 2) return true;
    return (
      participants[Math.round(slotStart / watchSlot) % participants.length] === this.o.options.instanceName
    );
  }

  /**
   * The watch's read: refreshes the view, balances when a lease was released or newly found expired, and raises
   * the fleet signal for an expiry nobody else may have seen yet (this host read the feed in its slot, alone).
   */
  async watchRead(): Promise<void> {
    const changed = await this.refreshView();
    const now = this.o.clock.now();
    const asOf = this.o.view.asOf(now);
    const expiry = this.o.options.leaseExpirationInterval;
    const leases = this.o.view.leases();
    // A split's parent, once its children tile its range, is deleted (or left over): forgotten once it looks
    // available, so that neither this host nor its news count it.
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
    const took = await this.balance();
    if (news && took === 0) await this.raiseFleetSignal();
  }

  /**
   * The leases as the balancer sees them: a lease handed to a successor on stop counts as the successor's
   * while the hand-off is fresh (one acquire interval) and the successor alive, so nobody else takes it and
   * the successor does.
   */
  effectiveLeases(nowMs: number): Lease[] {
    const r = this.o.options;
    const leases = this.o.view.leases();
    // Only a live successor (one that owns a lease, or this host) holds a hand-off: after a whole-app shutdown
    // the leases are plainly available to whoever starts next.
    const alive = new Set(
      watchParticipants(leases, r.instanceName, this.o.view.asOf(nowMs), r.leaseExpirationInterval),
    );
    return leases.map((l) => {
      const to = handedTo(l, nowMs, r.leaseAcquireInterval);
      return to && alive.has(to) ? { ...l, owner: to } : l;
    });
  }

  /**
   * Wait before the next timed round: leaseAcquireInterval, or leaseJoinSettleDelay after a round that changed
   * this host's leases. After a foothold: until this host holds a lease the others do not count it, and neither
   * does it count the other newcomers; after the settle delay their footholds are in the lease feed, and the
   * follow-up round takes this host's full share. After taking or losing leases: other hosts acted on the same
   * event from views of their own, and a shortfall they left is made up within seconds, not a round.
   */
  nextRoundDelay(): number {
    const r = this.o.options;
    return this.followUp ? Math.min(r.leaseJoinSettleDelay, r.leaseAcquireInterval) : r.leaseAcquireInterval;
  }

  /**
   * The timed round: reads the fleet signal and refreshes the view when it moved (or after a foothold: the other
   * newcomers' footholds are in the feed by now), then balances.
   */
  async timedRound(): Promise<void> {
    const moved = this.slotsLongerThan(this.o.options.leaseAcquireInterval)
      ? ((await this.o.fleet?.look()) ?? false)
      : false;
    if (moved || this.followUp) await this.refreshView();
    await this.balance();
  }

  /**
   * Reads the lease feed into the view (bounded: a read that never answers would stop this host noticing
   * released leases; one given up in flight may still move the feed, so the next refresh lists again). Returns
   * the leases that changed.
   */
  async refreshView(signal: AbortSignal | undefined = this.o.signal): Promise<Lease[]> {
    const { view, clock, options } = this.o;
    return boundedRequest(clock, options.requestTimeout, signal, "lease feed read", () =>
      view.refresh(),
    ).catch((e: unknown) => {
      if (e instanceof RequestTimeoutError) view.dropFeed();
      throw e;
    });
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
   * Raises the fleet signal when anyone may be reading it: hosts' views of the fleet size differ a little, so it is
   * raised from half the size at which it is read.
   */
  raiseFleetSignal(signal?: AbortSignal): Promise<void> {
    if (!this.o.fleet || !this.slotsLongerThan(this.o.options.leaseAcquireInterval / 2))
      return Promise.resolve();
    return this.o.fleet.raise(signal);
  }

  /** One balancing round, after the previous one; resolves with the number of leases it took. */
  balance(): Promise<number> {
    const run = this.chain.then(() => this.round());
    this.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Resolves once the running round (if any) is over. */
  idle(): Promise<void> {
    return this.chain;
  }

  /** One round: notices steals, then takes what the strategy picks; raises the fleet signal when it took any. */
  private async round(): Promise<number> {
    const { view, running, options, excluded } = this.o;
    const me = options.instanceName;
    const now = this.o.clock.now();
    // Expiry as of the view's freshness: between two reads of the lease feed, a lease not renewed in the view may
    // have been renewed in the container.
    const asOf = view.asOf(now);
    const all = this.effectiveLeases(now).filter((l) => !excluded.has(l.leaseToken));
    const snapshot = view.leases();
    const decidedOn = new Map(snapshot.map((l) => [l.id, l]));
    const byToken = new Map(snapshot.map((l) => [l.leaseToken, l]));
    let lost = 0;
    for (const [token, r] of running) {
      const seen = byToken.get(token);
      if (r.expectedOwner === me && seen && seen.owner !== me) {
        this.o.stolen(token);
        lost++;
      }
    }
    // Leases the view says are this host's but that do not run here: handed to it, or left from before.
    const toTake = all.filter((l) => l.owner === me && !running.has(l.leaseToken));
    const holdsNothing = running.size === 0 && toTake.length === 0;
    for (const l of this.o.strategy.selectLeasesToTake(all, me, asOf)) {
      if (!running.has(l.leaseToken) && !toTake.includes(l)) toTake.push(l);
    }
    let took = 0;
    let raced = false;
    for (const l of toTake) {
      if (this.o.signal.aborted) break;
      const outcome = await this.take(decidedOn.get(l.id) ?? l, asOf);
      if (outcome === "took") took++;
      // Another host got there first: the view the rest was decided on is behind too (on a first start, the
      // leases further on are that host's, taken from its own random start). Re-plan soon on a fresh view.
      if (outcome === "raced") {
        raced = true;
        break;
      }
    }
    this.followUp = (holdsNothing && toTake.length > 0) || took > 0 || lost > 0 || raced;
    if (took > 0 && !this.o.signal.aborted) await this.raiseFleetSignal();
    return took;
  }

  /**
   * Acquires one lease the round decided on (as of `asOf`): "took" when this host now holds it, "raced" when the
   * service's copy has another owner than the decision saw (or was renewed by its owner), else "skipped".
   */
  private async take(decided: Lease, asOf: number): Promise<"took" | "raced" | "skipped"> {
    const { store, view, options } = this.o;
    const me = options.instanceName;
    const expiry = options.leaseExpirationInterval;
    const stored = view.get(decided.id) ?? decided;
    // A lease-feed read during this round moved the view on (a host back from a pause refreshes a view older than
    // the renewals): act only if the lease is still what the decision was made on, or the fresh copy's etag would
    // let the write through and take a lease its owner had just renewed.
    if (
      stored.etag !== decided.etag &&
      (stored.owner !== decided.owner ||
        (isAvailable(decided, asOf, expiry) && !isAvailable(stored, view.asOf(this.o.clock.now()), expiry)))
    )
      return "skipped";
    // Taken because its owner looks expired in the view: only if the service's copy is expired too.
    const expiredOwner =
      stored.owner !== null && isAvailable(stored, asOf, expiry)
        ? { nowMs: () => this.o.clock.now(), expirationMs: expiry }
        : undefined;
    try {
      const ranged = stored.feedRange ? stored : await this.withFeedRange(stored);
      const sentAt = this.o.clock.monotonicNow();
      // Bounded: an acquire that never answers would stall every later round of this host.
      const acquired = await boundedRequest(
        this.o.clock,
        options.requestTimeout,
        this.o.signal,
        "lease acquire",
        (s) => store.update(ranged, acquireAs(stored.owner, me, expiredOwner), s),
      );
      view.apply(acquired);
      this.o.takeOver(acquired, sentAt);
      return "took";
    } catch (e) {
      // The processor stops: the acquire was given up on purpose, not a failure.
      if (abandonedBy(this.o.signal, e)) return "skipped";
      if (!(e instanceof LeaseLostError)) this.o.report(e, decided.leaseToken);
      else if (e.reason === "gone") view.forget(stored);
      else if (e.reason === "stolen") return "raced";
      return "skipped";
    }
  }

  /** A lease without FeedRange (V2-library era): look its partition key range up by id, as .NET does on acquire. */
  private async withFeedRange(lease: Lease): Promise<Lease> {
    const { resources } = await boundedRequest(
      this.o.clock,
      this.o.options.requestTimeout,
      this.o.signal,
      "partition key ranges read",
      (s) => this.o.monitored.readPartitionKeyRanges({ abortSignal: s }).fetchAll(),
    );
    const r = resources.find((x) => x.id === lease.leaseToken);
    if (!r)
      throw new Error(`Lease ${lease.leaseToken} has no FeedRange and no partition key range has that id.`);
    return { ...lease, feedRange: { min: r.minInclusive, max: r.maxExclusive } };
  }
}
