import type { Container } from "@azure/cosmos";
import { type Lease, newLease } from "./leases/lease.js";
import type { LeaseStore } from "./leases/store.js";

export interface LeaseReplacerOptions {
  store: LeaseStore;
  monitored: Container;
  me: string;
  /** Called with every lease created or deleted here (keeps the lease view current). */
  created: (lease: Lease) => void;
  deleted: (lease: Lease) => void;
}

/** What became of a lease whose range is gone. */
export type Replacement =
  | { kind: "split"; parent: Lease; children: Lease[] }
  | { kind: "merged"; parent: Lease; successor: Lease }
  /** The parent is no longer this host's (or no longer exists): someone else replaces it. */
  | { kind: "lost" };

/**
 * The lease's range split, or its partition was merged away (.NET's table, change-feed-leases.md §4.10):
 * after a split, a lease per child range carrying the parent's last checkpoint (version 0 per child
 * partition, or version-1 EPK tiles for an EPK lease); after a merge of a version-0 lease's partition, one
 * version-1 lease of the same EPK range with the same checkpoint. The new leases are owned by this host; the
 * old lease is deleted.
 */
export class LeaseReplacer {
  constructor(private readonly o: LeaseReplacerOptions) {}

  async replace(lease: Lease): Promise<Replacement> {
    const { store, me } = this.o;
    const parent = await store.read(lease);
    if (!parent || parent.owner !== me) return { kind: "lost" };
    const range = parent.feedRange ?? { min: "", max: "FF" };
    const { resources: all } = await this.o.monitored.readPartitionKeyRanges().fetchAll();
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
        parent.properties,
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
      const c = await store.create(child);
      if (c) {
        created.push(c);
        this.o.created(c);
      }
    }
    await store.delete(parent);
    this.o.deleted(parent);
    if (merged && created.length === 1) return { kind: "merged", parent, successor: created[0] };
    return { kind: "split", parent, children: created };
  }
}
