import { setMaxListeners } from "node:events";
import type { Container } from "@azure/cosmos";
import { EqualPartitionsBalancingStrategy, type Lease, parseLease } from "@cosmos-feed/changefeed";
import type { HostClock } from "./sim-clock.js";

/**
 * A MODEL of the .NET change feed processor's lease handling, for comparison only (not .NET's code): its
 * documented loops (learn.microsoft.com/azure/cosmos-db/nosql/change-feed-processor, "Components of the change
 * feed processor" and "Dynamic scaling"; azure-cosmos-dotnet-v3's PartitionLoadBalancerCore, LeaseRenewerCore,
 * DocumentServiceLeaseManagerCosmos): every leaseAcquireInterval each host queries every lease and runs
 * EqualPartitionsBalancingStrategy (first available lease first, one steal from the busiest owner; here our
 * strategy class with its pick-among-equals fixed to the first, which is .NET's); each owned lease is renewed every
 * leaseRenewInterval by a read and a conditional replace; a graceful stop reads and releases each lease; a 412
 * re-reads and re-applies the change if the owner is still the one expected. Idle feeds, so no checkpoints. The
 * bootstrap is ours (the `.info`/`.lock` protocol is the same), run by the first host.
 */

export interface DotnetModelOptions {
  name: string;
  container: Container;
  clock: HostClock;
  prefix: string;
  renewMs: number;
  acquireMs: number;
  expirationMs: number;
  /** Called when this host starts believing it holds a lease. */
  acquired: (id: string) => void;
  /** Lease documents to create first (the host that won the bootstrap `.lock`), then `.info`. */
  bootstrap?: Record<string, unknown>[];
}

/** .NET's wait before trying the bootstrap `.lock` again (ms). */
const BOOTSTRAP_RETRY_MS = 15_000;

/** Thrown inside the model when a lease turns out not to be ours any more. */
class Lost extends Error {}

export class DotnetModelHost {
  /** Lease ids this host believes it holds. */
  readonly owned = new Set<string>();
  private readonly stopping = new AbortController();
  private readonly strategy: EqualPartitionsBalancingStrategy;
  private loops: Promise<void>[] = [];

  constructor(private readonly o: DotnetModelOptions) {
    // One listener per lease's renewal sleep: hundreds, by design.
    setMaxListeners(0, this.stopping.signal);
    this.strategy = new EqualPartitionsBalancingStrategy(o.expirationMs, () => 0);
  }

  get instanceName(): string {
    return this.o.name;
  }

  ownedLeaseIds(): string[] {
    return [...this.owned];
  }

  start(): void {
    this.loops.push(this.bootstrapThenBalance());
  }

  /** The first host creates the leases and `.info`; the others wait for `.info` (one read per retry). */
  private async bootstrapThenBalance(): Promise<void> {
    const info = `${this.o.prefix}.info`;
    const c = this.o.container;
    if (this.o.bootstrap) {
      for (const doc of this.o.bootstrap) await c.items.create(doc).catch(() => undefined);
      await c.items.create({ id: info }).catch(() => undefined);
    } else {
      while (!this.stopping.signal.aborted && (await c.item(info, info).read()).statusCode === 404) {
        await this.o.clock.sleep(BOOTSTRAP_RETRY_MS, this.stopping.signal);
      }
    }
    await this.balanceLoop();
  }

  /** A crash: the loops end, nothing is released. */
  async abandon(): Promise<void> {
    this.stopping.abort();
    this.owned.clear();
    await Promise.allSettled(this.loops);
  }

  /** A graceful stop: each lease read and released (Owner null), as .NET's ReleaseAsync. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled(this.loops);
    const ids = [...this.owned];
    this.owned.clear();
    await Promise.allSettled(
      ids.map((id) =>
        this.update(id, undefined, (l) => (l.Owner === this.o.name ? { ...l, Owner: null } : null)),
      ),
    );
  }

  private async balanceLoop(): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      await this.round().catch(() => undefined);
      await this.o.clock.sleep(this.o.acquireMs, signal);
    }
  }

  private async round(): Promise<void> {
    const it = this.o.container.items.query<Record<string, unknown>>({
      query: "SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)",
      parameters: [{ name: "@prefix", value: `${this.o.prefix}..` }],
    });
    const docs = (await it.fetchNext()).resources ?? [];
    const leases: Lease[] = docs.map((d) => parseLease(d));
    const now = this.o.clock.now();
    for (const l of this.strategy.selectLeasesToTake(leases, this.o.name, now)) {
      if (this.stopping.signal.aborted) return;
      const seen = l.owner;
      const doc = docs.find((d) => d.id === l.id) as Record<string, unknown>;
      const taken = await this.update(l.id, doc, (cur) =>
        cur.Owner === seen ? { ...cur, Owner: this.o.name } : null,
      );
      if (taken && !this.stopping.signal.aborted) {
        this.owned.add(l.id);
        this.o.acquired(l.id);
        this.loops.push(this.renewLoop(l.id));
      }
    }
  }

  /** A split lease replaced by its children, created owned by this host: it renews them from now on. */
  replaced(parentId: string, childIds: string[]): void {
    if (!this.owned.delete(parentId) || this.stopping.signal.aborted) return;
    for (const id of childIds) {
      this.owned.add(id);
      this.o.acquired(id);
      this.loops.push(this.renewLoop(id));
    }
  }

  private async renewLoop(id: string): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted && this.owned.has(id)) {
      await this.o.clock.sleep(this.o.renewMs, signal);
      if (signal.aborted || !this.owned.has(id)) return;
      // .NET reads the lease afresh, then replaces it if still ours.
      const ok = await this.update(id, undefined, (l) => (l.Owner === this.o.name ? l : null)).catch(
        () => true,
      );
      if (!ok) this.owned.delete(id);
    }
  }

  /**
   * Conditional update: from `known` (or a fresh read), `change` returns the new body or null (not ours: lost).
   * A 412 re-reads and tries again. Resolves true when written, false when lost or gone.
   */
  private async update(
    id: string,
    known: Record<string, unknown> | undefined,
    change: (l: Record<string, unknown>) => Record<string, unknown> | null,
  ): Promise<boolean> {
    let current = known;
    for (let attempt = 0; attempt < 10; attempt++) {
      if (!current) {
        const res = await this.o.container.item(id, id).read<Record<string, unknown>>();
        if (res.statusCode === 404 || !res.resource) return false;
        current = res.resource;
      }
      const next = change(current);
      if (!next) return false;
      try {
        await this.o.container
          .item(id, id)
          .replace(
            { ...next, timestamp: new Date(this.o.clock.now()).toISOString() },
            { accessCondition: { type: "IfMatch", condition: String(current._etag) } },
          );
        return true;
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code !== 412) return false;
        current = undefined;
      }
    }
    throw new Lost();
  }
}
