/**
 * A fake lease store held in memory, for the fake-clock unit tests of the balancer and the hand-off planner
 * (the real LeaseStore over the SDK and the emulator is exercised by the integration tests). It keeps what
 * those roles rely on: conditional updates by etag that re-apply the mutation to the current copy, timestamps
 * from the injected clock, a change feed of updated leases, listing.
 */

import type { Lease } from "../../packages/changefeed/src/leases/lease.js";
import type { LeaseFeed, LeaseStore } from "../../packages/changefeed/src/leases/store.js";
import type { FakeClock } from "../../packages/core/src/clock.js";

export class InMemoryLeaseStoreFake {
  readonly prefix = "p";
  readonly layout = "id" as const;
  private readonly docs = new Map<string, Lease>();
  private seq = 0;
  private readonly changes: { seq: number; lease: Lease }[] = [];
  writes: { id: string; owner: string | null; at: number }[] = [];

  constructor(private readonly clock: FakeClock) {}

  /** Puts a lease as another host would have written it (default: now). */
  put(lease: Lease, timestampMs = this.clock.now()): Lease {
    const stored = { ...lease, timestampMs, etag: `"${++this.seq}"`, lsn: this.seq };
    this.docs.set(lease.id, stored);
    this.changes.push({ seq: this.seq, lease: stored });
    return stored;
  }

  get(id: string): Lease | undefined {
    return this.docs.get(id);
  }

  async listAll(): Promise<Lease[]> {
    return [...this.docs.values()];
  }

  openChangeFeed(): LeaseFeed {
    let from = this.seq;
    return {
      readChanges: async () => {
        const out = this.changes.filter((c) => c.seq > from).map((c) => c.lease);
        from = this.seq;
        return out;
      },
    };
  }

  async read(lease: Pick<Lease, "id">): Promise<Lease | undefined> {
    return this.docs.get(lease.id);
  }

  async update(_cached: Lease, mutate: (current: Lease) => Lease): Promise<Lease> {
    const current = this.docs.get(_cached.id);
    if (!current) throw new Error(`no lease ${_cached.id}`);
    const next = this.put(mutate(current));
    this.writes.push({ id: next.id, owner: next.owner, at: this.clock.now() });
    return next;
  }

  /** Typed as the real store for the roles under test (they use only the members above). */
  asStore(): LeaseStore {
    return this as unknown as LeaseStore;
  }
}
