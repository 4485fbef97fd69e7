import type { Container } from "@azure/cosmos";
import type { Clock } from "@cosmos-feed/core/clock";
import type { LoadBalancingStrategy } from "./balancing/strategy.js";
import { handedTo, stoppingHosts, watchParticipants } from "./balancing/watch-schedule.js";
import { abandonedBy, boundedRequest, RequestTimeoutError } from "./bounded-request.js";
import type { WatchSlots } from "./lease-watch.js";
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
   * The fleet signal, as the watch slots call for it: read every timed round (refresh the view when it moved),
   * raised after this host took leases. Without it (a test driving one balancer), nothing is signalled.
   */
  slots?: Pick<WatchSlots, "slotsLongerThan" | "lookAtFleetSignal" | "raiseFleetSignal">;
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
 * Runs the balancing strategy over the lease view (no request unless a lease is taken) and detects leases stolen
 * from this host: the timed rounds and their follow-ups, and the rounds the lease watch asks for (lease-watch.ts).
 */
export class LoadBalancer {
  /** Rounds run one at a time (the timer's and the watch's). */
  private chain: Promise<void> = Promise.resolve();
  /**
   * The last round changed this host's leases (it took a foothold, took or lost leases): follow up after
   * leaseJoinSettleDelay, on a refreshed view, while the fleet is moving.
   */
  private followUp = false;

  constructor(private readonly o: LoadBalancerOptions) {}

  /**
   * The leases as the balancer sees them: a lease handed to a successor on stop counts as the successor's
   * while the hand-off is fresh (one acquire interval) and the successor alive and not stopping itself, so
   * nobody else takes it and the successor does.
   */
  effectiveLeases(nowMs: number): Lease[] {
    const r = this.o.options;
    const leases = this.o.view.leases();
    // Only a live successor (one that owns a lease, or this host) holds a hand-off: after a whole-app shutdown
    // the leases are plainly available to whoever starts next. One that is stopping too (hosts stopping together
    // may pick each other before they see each other's releases) holds none either.
    const alive = new Set(
      watchParticipants(leases, r.instanceName, this.o.view.asOf(nowMs), r.leaseExpirationInterval),
    );
    for (const host of stoppingHosts(leases, nowMs, r.leaseAcquireInterval)) alive.delete(host);
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
    const { slots } = this.o;
    const moved = slots?.slotsLongerThan(this.o.options.leaseAcquireInterval)
      ? await slots.lookAtFleetSignal()
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
    if (took > 0 && !this.o.signal.aborted) await this.o.slots?.raiseFleetSignal();
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
