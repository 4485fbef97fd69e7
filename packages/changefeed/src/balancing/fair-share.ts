import { isAvailable, type Lease } from "../leases/lease.js";
import type { LoadBalancingStrategy } from "./strategy.js";
import { supersededTokens } from "./superseded.js";

/** One host's place in a fair-share plan. */
export interface FairSharePlan {
  /** Every live owner in the view, plus this host. */
  hosts: number;
  /** Leases (distinct tokens) in the view. */
  leases: number;
  /** How many leases this host should hold. */
  target: number;
  /** How many it holds in the view. */
  mine: number;
  /** The leases the plan moves to this host (available first, then other hosts' excess). */
  mySlice: Lease[];
  /** Every lease the plan moves (available ones and every host's excess), the pool the slices are cut from. */
  pool: Lease[];
  /**
   * Where a host holding nothing takes its foothold from: the available leases, else every lease of a host that
   * holds more than ⌊L/W⌋ (at least 2), which can give one and keep its floor. Wider than the pool on purpose:
   * the newcomers do not see each other yet, and each would otherwise pick from the same few excess leases.
   */
  footholds: Lease[];
  /**
   * Nothing to do: no lease available and the counts settled (`isSettled`). The plan moves leases only while
   * some host is further off (then to the exact targets), so a balanced fleet stays put.
   */
  settled: boolean;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byToken = (a: Lease, b: Lease) => byName(a.leaseToken, b.leaseToken);

/**
 * The default strategy: every host computes the same plan from the same view, and takes its own part of it, so
 * a fleet rebalances in one round instead of one lease per host per round (.NET's), without two hosts going
 * for the same lease.
 *
 * The plan: with L leases over W hosts (the live owners, plus this host), each host should hold ⌊L/W⌋, and
 * L mod W of them one more — first those already holding more than ⌊L/W⌋ (they keep it, nothing moves),
 * then by name. Available leases (unowned or expired) and every host's excess over its target form a pool,
 * in a fixed order (available by token, then each host's excess by owner name and token); hosts short of their
 * target, ordered by name, take consecutive slices of it. Because the order puts the extra leases on hosts
 * that hold them and sorts the rest by name only, hosts that act on the plan one after another (each after
 * seeing the others' moves) cut the same slices as if they had acted at once.
 *
 * A host that holds nothing is invisible to the others (they count owners). Joining hosts that hold leases, it
 * first takes one lease at random, a foothold, and the balancer runs its next round soon after
 * (`leaseJoinSettleDelay`), on a refreshed view in which the other newcomers have footholds too; from then on
 * the slices are cut for everyone. When nobody holds a lease (a first start), it takes every lease, as .NET
 * does, so a lone host processes everything at once; hosts that started with it even out in the next round
 * (the balancer ends a round at the first lease another host took first: each starting host walks its own
 * stretch from its random start, not every lease).
 */
export class FairShareBalancingStrategy implements LoadBalancingStrategy {
  constructor(
    private readonly leaseExpirationMs: number,
    /** Picks a foothold; a test can pass `() => 0` to get the pool's first lease. */
    private readonly random: () => number = Math.random,
  ) {}

  /**
   * This host's part of the plan: nothing when settled or at its target; a foothold when it holds nothing while
   * others hold leases; every lease when nobody holds one; else its slice of the pool.
   */
  selectLeasesToTake(allLeases: readonly Lease[], me: string, nowMs: number): Lease[] {
    const plan = this.plan(allLeases, me, nowMs);
    if (plan.settled || plan.target <= plan.mine) return [];
    if (plan.mine > 0) return plan.mySlice;
    if (plan.hosts === 1) {
      // Nobody else holds a lease (a first start, or the whole app restarting): take everything, from a random
      // start, so that hosts starting together mostly take different leases; the next round evens them out.
      const start = Math.floor(this.random() * plan.pool.length);
      return [...plan.pool.slice(start), ...plan.pool.slice(0, start)];
    }
    const candidates = plan.footholds;
    return candidates.length === 0 ? [] : [candidates[Math.floor(this.random() * candidates.length)]];
  }

  /** The whole plan as this host sees it (exported for tests and the docs' figures). */
  plan(allLeases: readonly Lease[], me: string, nowMs: number): FairSharePlan {
    const available: Lease[] = [];
    const owned = new Map<string, Lease[]>([[me, []]]);
    // Already replaced by their split's children (and deleted, or about to be): neither counted nor taken.
    const seen = supersededTokens(allLeases);
    const superseded = seen.size;
    for (const lease of allLeases) {
      if (seen.has(lease.leaseToken)) continue; // never act on a duplicate token
      seen.add(lease.leaseToken);
      if (isAvailable(lease, nowMs, this.leaseExpirationMs)) available.push(lease);
      else {
        const owner = lease.owner as string;
        const list = owned.get(owner);
        if (list) list.push(lease);
        else owned.set(owner, [lease]);
      }
    }
    const leaseCount = seen.size - superseded;
    const targets = fairTargets(owned, leaseCount);
    const mine = (owned.get(me) as Lease[]).length;
    // The steady case, every round of every host: nothing to sort or cut.
    const counts = [...owned.values()].map((h) => h.length);
    const settled = available.length === 0 && isSettled(counts, leaseCount);
    if (settled) {
      const target = targets.get(me) as number;
      return {
        hosts: owned.size,
        leases: leaseCount,
        target,
        mine,
        mySlice: [],
        pool: [],
        footholds: [],
        settled,
      };
    }
    available.sort(byToken);
    const pool = [...available];
    const short: [string, number][] = [];
    for (const host of [...owned.keys()].sort(byName)) {
      const held = owned.get(host) as Lease[];
      const target = targets.get(host) as number;
      if (held.length > target) pool.push(...held.sort(byToken).slice(target));
      else if (held.length < target) short.push([host, target - held.length]);
    }
    const floor = Math.max(1, Math.floor(leaseCount / owned.size));
    const footholds =
      available.length > 0
        ? available
        : [...owned].flatMap(([host, held]) => (host !== me && held.length > floor ? held : []));
    let offset = 0;
    let mySlice: Lease[] = [];
    for (const [host, deficit] of short) {
      if (host === me) mySlice = pool.slice(offset, offset + deficit);
      offset += deficit;
    }
    return {
      hosts: owned.size,
      leases: leaseCount,
      target: targets.get(me) as number,
      mine,
      mySlice,
      pool,
      footholds,
      settled,
    };
  }
}

/**
 * Each host's target: ⌊L/W⌋, plus one for L mod W hosts — those holding more than ⌊L/W⌋ first, then by name
 * (never by count otherwise: a host catching up to ⌊L/W⌋ must not move ahead of others and change the plan).
 */
export function fairTargets(
  owned: ReadonlyMap<string, readonly Lease[]>,
  leases: number,
): Map<string, number> {
  const base = Math.floor(leases / owned.size);
  let extra = leases - base * owned.size;
  const order = [...owned.keys()].sort((a, b) => {
    const aAbove = (owned.get(a) as readonly Lease[]).length > base ? 0 : 1;
    const bAbove = (owned.get(b) as readonly Lease[]).length > base ? 0 : 1;
    return aAbove - bAbove || byName(a, b);
  });
  const targets = new Map<string, number>();
  for (const host of order) {
    targets.set(host, base + (extra > 0 ? 1 : 0));
    if (extra > 0) extra--;
  }
  return targets;
}

/**
 * Share below which one lease is too large a part of it to leave uneven: there the counts must differ by one at
 * most (the exact targets); from it on, every host within one lease of the fair share L/W is settled.
 */
export const EXACT_BELOW_SHARE = 4;

/**
 * Whether counts of leases per host need no move: each within one of the fair share L/W (e.g. 9 and 11 of a share
 * of 10 stay as they are, where moving one would only be churn), and below a share of {@link EXACT_BELOW_SHARE}
 * no two hosts more than one apart.
 */
export function isSettled(counts: readonly number[], leases: number): boolean {
  if (counts.length === 0) return true;
  const fair = leases / counts.length;
  if (fair < EXACT_BELOW_SHARE) return Math.max(...counts) - Math.min(...counts) <= 1;
  return counts.every((c) => Math.abs(c - fair) <= 1);
}
