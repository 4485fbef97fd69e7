import type { Handoff } from "./types.js";

/** What a refresh saw of one lease. */
export interface ObservedLease {
  id: string;
  leaseToken: string;
  owner: string | null;
}

/**
 * Hand-offs as they happen: the owner of every lease of every trigger is remembered between refreshes, and a change
 * (A → B, A → none, none → B) is a hand-off at the time of the refresh that saw it. The first sight of a lease is
 * its baseline, not a hand-off. Pure apart from its memory; time comes from the caller.
 */
export class HandoffTracker {
  readonly #owners = new Map<string, string | null>();
  #recent: Handoff[] = [];

  constructor(private readonly keep: number) {}

  /** Records what one trigger's leases look like at `nowMs`; returns the hand-offs this refresh found. */
  observe(functionName: string, leases: readonly ObservedLease[], nowMs: number): Handoff[] {
    const found: Handoff[] = [];
    const at = new Date(nowMs).toISOString();
    for (const lease of leases) {
      const key = `${functionName}\u0000${lease.id}`;
      if (this.#owners.has(key)) {
        const before = this.#owners.get(key) ?? null;
        if (before !== lease.owner) {
          found.push({ at, functionName, leaseToken: lease.leaseToken, from: before, to: lease.owner });
        }
      }
      this.#owners.set(key, lease.owner);
    }
    if (found.length > 0) this.#recent = [...[...found].reverse(), ...this.#recent].slice(0, this.keep);
    return found;
  }

  /** Newest first, at most `keep`. */
  get recent(): Handoff[] {
    return [...this.#recent];
  }
}
