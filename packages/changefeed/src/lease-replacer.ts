import type { Container } from "@azure/cosmos";
import type { Clock } from "@cosmos-feed/core/clock";
import { abandonedBy, boundedRequest } from "./bounded-request.js";
import { type Lease, newLease, REPLACES_PROPERTY } from "./leases/lease.js";
import type { LeaseStore } from "./leases/store.js";

export interface LeaseReplacerOptions {
  store: LeaseStore;
  monitored: Container;
  me: string;
  clock: Clock;
  /** Longest wait for one request's answer (ms); see ChangeFeedDefaults.requestTimeout. */
  requestTimeout: number;
  /** Called with every lease created or deleted here (keeps the lease view current). */
  created: (lease: Lease) => void;
  deleted: (lease: Lease) => void;
}

/** What became of a lease whose range is gone. */
export type Replacement =
  | { kind: "split"; parent: Lease; children: Lease[] }
  | { kind: "merged"; parent: Lease; successor: Lease }
  /** The parent is no longer this host's (or no longer exists): someone else replaces it. */
  | { kind: "lost" }
  /** Given up because the processor stops (not an error): the parent is left for the next owner to replace. */
  | { kind: "stopped" };

/**
 * The lease's range split, or its partition was merged away (.NET's table, change-feed-leases.md §4.10):
 * after a split, a lease per child range carrying the parent's last checkpoint (version 0 per child
 * partition, or version-1 EPK tiles for an EPK lease); after a merge of a version-0 lease's partition, one
 * version-1 lease of the same EPK range with the same checkpoint. The new leases are owned by this host; the
 * old lease is deleted. Each request is bounded by requestTimeout and ended by `signal` (the processor stops):
 * given up half-way, the parent lease is still there (deleted last), so the next owner replaces it again.
 */
export class LeaseReplacer {
  constructor(private readonly o: LeaseReplacerOptions) {}

  async replace(lease: Lease, signal?: AbortSignal): Promise<Replacement> {
    try {
      return await this.replaceBounded(lease, signal);
    } catch (e) {
      if (abandonedBy(signal, e)) return { kind: "stopped" };
      throw e;
    }
  }

  private async replaceBounded(lease: Lease, signal: AbortSignal | undefined): Promise<Replacement> {
    const { store, me } = this.o;
    const bounded = <T>(what: string, request: (s: AbortSignal) => Promise<T>) =>
      boundedRequest(this.o.clock, this.o.requestTimeout, signal, `split replacement: ${what}`, request);
    const parent = await bounded("lease read", (s) => store.read(lease, s));
    if (!parent || parent.owner !== me) return { kind: "lost" };
    const range = parent.feedRange ?? { min: "", max: "FF" };
    const { resources: all } = await bounded("partition key ranges read", (s) =>
      this.o.monitored.readPartitionKeyRanges({ abortSignal: s }).fetchAll(),
    );
    const children = all
      .filter(
        (r) =>
          r.minInclusive < range.max &&
          (range.max === "FF" || r.maxExclusive > range.min) &&
          r.maxExclusive > range.min,
      )
      .sort((a, b) => (a.minInclusive < b.minInclusive ? -1 : 1));
    if (children.length === 0) throw new Error(`No partition key range overlaps lease ${parent.leaseToken}.`);
    const merged = parent.version === 0 && children.length === 1;
    if (merged && children[0].id === parent.leaseToken) {
      throw new Error(
        `Lease ${parent.leaseToken} was reported gone but its partition key range still exists.`,
      );
    }
    const make = (r: { id?: string; min: string; max: string }) =>
      newLease(
        store.prefix,
        store.layout,
        r,
        parent.continuationToken,
        parent.mode,
        { ...parent.properties, [REPLACES_PROPERTY]: parent.leaseToken },
        parent,
      );
    const created: Lease[] = [];
    for (let i = 0; i < children.length; i++) {
      const r = children[i];
      const child = merged
        ? make({ min: range.min, max: range.max })
        : parent.version === 0
          ? make({ id: r.id, min: r.minInclusive, max: r.maxExclusive })
          : make({
              min: i === 0 ? range.min : r.minInclusive,
              max: i === children.length - 1 ? range.max : r.maxExclusive,
            });
      child.owner = me;
      const c = await bounded("lease create", (s) => store.create(child, s));
      if (c) {
        created.push(c);
        this.o.created(c);
      }
    }
    await bounded("lease delete", (s) => store.delete(parent, s));
    this.o.deleted(parent);
    if (merged && created.length === 1) return { kind: "merged", parent, successor: created[0] };
    return { kind: "split", parent, children: created };
  }
}
