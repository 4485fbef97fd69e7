import { isAvailable, type Lease } from "../leases/lease.js";

/** Decides which leases this host should try to take on a balancing round. Pluggable. */
export interface LoadBalancingStrategy {
  /**
   * Which leases this host should try to acquire on this round.
   * @param allLeases - every lease of the processor, as just read
   * @param me - this host's instance name
   * @param nowMs - current time (ms since epoch)
   * @returns leases to acquire (each acquire is a conditional write, so a wrong pick only costs a 412)
   */
  selectLeasesToTake(allLeases: readonly Lease[], me: string, nowMs: number): Lease[];
}

/**
 * .NET's EqualPartitionsBalancingStrategy (change-feed-leases.md §4.4): target = ceil(leases / live owners);
 * take available (unowned or expired) leases first, up to what this host lacks; otherwise steal one lease
 * from the busiest owner when that owner has more than its share.
 *
 * Unlike .NET, which always takes the first available lease and the busiest owner's first lease, the pick
 * among equals is random (the lease, and the owner among those tied for busiest): hosts deciding from the same
 * lease list would otherwise all go for the same lease, and all but one lose the race (a 412 and a wasted round
 * each), which slows a cold start of many hosts, or all steal from the same owner at once.
 */
export class EqualPartitionsBalancingStrategy implements LoadBalancingStrategy {
  constructor(
    private readonly leaseExpirationMs: number,
    /** Picks among equals; a test can pass `() => 0` to get .NET's "first one" choice. */
    private readonly random: () => number = Math.random,
  ) {}

  /**
   * Available leases first, up to this host's share; else one lease stolen from the busiest owner above its
   * share.
   */
  selectLeasesToTake(allLeases: readonly Lease[], me: string, nowMs: number): Lease[] {
    const available: Lease[] = [];
    const workerCount = new Map<string, number>();
    const seenTokens = new Set<string>();
    for (const lease of allLeases) {
      if (seenTokens.has(lease.leaseToken)) continue; // never act on a duplicate token
      seenTokens.add(lease.leaseToken);
      if (isAvailable(lease, nowMs, this.leaseExpirationMs)) available.push(lease);
      else workerCount.set(lease.owner as string, (workerCount.get(lease.owner as string) ?? 0) + 1);
    }
    if (!workerCount.has(me)) workerCount.set(me, 0);
    const leaseCount = seenTokens.size;
    const workers = workerCount.size;
    const target = leaseCount > workers ? Math.ceil(leaseCount / workers) : 1;
    const mine = workerCount.get(me) ?? 0;
    const need = target - mine;
    if (need <= 0) return [];
    if (available.length > 0) {
      // A random rotation of the list: a contiguous run from a random start.
      const start = Math.floor(this.random() * available.length);
      const rotated = [...available.slice(start), ...available.slice(0, start)];
      return rotated.slice(0, need);
    }
    // The busiest owner, picked at random among those tied for it: hosts deciding from the same view would otherwise
    // all steal from the same owner at once, leave it far below its share, and it would steal back (thrashing that
    // grows with the fleet: measured by `npm run bench:fleet`). With `random` 0, the first one, as .NET.
    let busiestCount = 0;
    const tied: string[] = [];
    for (const [owner, count] of workerCount) {
      if (owner === me) continue;
      if (count > busiestCount) {
        busiestCount = count;
        tied.length = 0;
      }
      if (count === busiestCount) tied.push(owner);
    }
    if (tied.length === 0) return [];
    const busiest = tied[Math.floor(this.random() * tied.length)];
    const shouldSteal = need === 1 ? busiestCount > target : busiestCount >= target;
    if (!shouldSteal) return [];
    const candidates = allLeases.filter(
      (l) => l.owner !== null && l.owner.toLowerCase() === busiest.toLowerCase(),
    );
    if (candidates.length === 0) return [];
    return [candidates[Math.floor(this.random() * candidates.length)]];
  }
}
