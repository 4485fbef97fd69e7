import type { Lease } from "./lease.js";
import type { LeaseFeed, LeaseStore } from "./store.js";

/**
 * This host's copy of every lease of the prefix: listed once, then kept current by the lease container's own
 * change feed (and by this host's own writes). Balancing rounds read it instead of querying the container.
 *
 * Deletes do not appear in a latest-version feed: a lease deleted by a split stays here until someone tries
 * to take it (404 → forget). Copies are ordered by their LSN, so a feed page read before one of our writes
 * cannot roll the write back.
 */
export class LeaseView {
  private readonly byId = new Map<string, Lease>();
  private feed: LeaseFeed | undefined;

  constructor(private readonly store: LeaseStore) {}

  /**
   * Lists every lease and follows the feed from just before the listing, so no change falls in between.
   * Returns every lease.
   */
  async load(): Promise<Lease[]> {
    const feed = this.store.openChangeFeed();
    await feed.readChanges(); // pins the feed's start before the listing
    const all = await this.store.listAll();
    this.byId.clear();
    for (const l of all) this.byId.set(l.id, l);
    this.feed = feed;
    return all;
  }

  /**
   * Reads what changed since the last refresh (one request when nothing did) and returns the changed leases.
   * After a failure the next call lists everything again.
   */
  async refresh(): Promise<Lease[]> {
    if (!this.feed) return this.load();
    try {
      const changed = await this.feed.readChanges();
      return changed.filter((l) => this.apply(l));
    } catch (e) {
      this.feed = undefined;
      throw e;
    }
  }

  /** A refresh was given up in flight (timed out): its feed may still move, so the next refresh lists again. */
  dropFeed(): void {
    this.feed = undefined;
  }

  /** Records a copy (ours after a write, or from the feed) unless a newer copy is known. True when recorded. */
  apply(lease: Lease): boolean {
    const known = this.byId.get(lease.id);
    if (known?.lsn !== undefined && lease.lsn !== undefined && lease.lsn < known.lsn) return false;
    this.byId.set(lease.id, lease);
    return true;
  }

  forget(lease: Pick<Lease, "id">): void {
    this.byId.delete(lease.id);
  }

  get(id: string): Lease | undefined {
    return this.byId.get(id);
  }

  leases(): Lease[] {
    return [...this.byId.values()];
  }
}
