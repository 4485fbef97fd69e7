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
  private fresh = Number.POSITIVE_INFINITY;

  /**
   * @param now - the processor's clock, to know how fresh the view is; without it the view counts as current
   *   (tests that drive the view by hand)
   */
  constructor(
    private readonly store: LeaseStore,
    private readonly now?: () => number,
  ) {}

  /**
   * The time (ms since epoch) up to which the view is known complete: when its last successful listing or feed
   * read was sent. A lease that does not look expired as of then may have expired since, or been renewed: expiry
   * is judged as of this time, never as of now (a view read long ago would make every lease look expired).
   */
  get freshAt(): number {
    return this.fresh;
  }

  /** `nowMs`, or the view's freshness if older: the time to judge expiry at. */
  asOf(nowMs: number): number {
    return Math.min(nowMs, this.fresh);
  }

  /**
   * Lists every lease and follows the feed from just before the listing, so no change falls in between.
   * Returns every lease.
   */
  async load(): Promise<Lease[]> {
    const sentAt = this.now?.();
    const feed = this.store.openChangeFeed();
    await feed.readChanges(); // pins the feed's start before the listing
    const all = await this.store.listAll();
    this.byId.clear();
    for (const l of all) this.byId.set(l.id, l);
    this.feed = feed;
    if (sentAt !== undefined) this.fresh = sentAt;
    return all;
  }

  /**
   * Reads what changed since the last refresh (one request when nothing did) and returns the changed leases.
   * After a failure the next call lists everything again.
   */
  async refresh(): Promise<Lease[]> {
    if (!this.feed) return this.load();
    try {
      const sentAt = this.now?.();
      const changed = await this.feed.readChanges();
      if (sentAt !== undefined) this.fresh = sentAt;
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
