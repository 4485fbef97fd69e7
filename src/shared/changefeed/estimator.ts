import type { Container } from "@azure/cosmos";
import { sessionTokenLsn } from "../cosmos/session.js";
import { type Lease, UnsupportedLeaseError } from "./leases/lease.js";
import { openLeaseStore } from "./leases/open.js";
import { LeaseOperationCounters } from "./leases/store.js";
import { LeaseFeedReader } from "./processing/feed-reader.js";

export interface LeaseLag {
  leaseToken: string;
  /** Changes not yet processed (as .NET estimates it: session LSN − first pending change's LSN + 1). */
  estimatedLag: number;
  /** The lease's Owner (null when unowned). */
  owner: string | null;
}

export interface EstimatorOptions {
  monitoredContainer: Container;
  leaseContainer: Container;
  leaseContainerPrefix?: string;
  /**
   * The account endpoint whose host goes into the lease prefix, as the .NET / Functions hosts are configured
   * (e.g. `https://myaccount.documents.azure.com/`). Default: the endpoint the monitored container's client was
   * created with. Never the regional endpoint the client writes to.
   */
  accountEndpoint?: string;
}

/**
 * Per-lease lag and owner, computed the way .NET's ChangeFeedEstimator does: a lease without a continuation
 * reports 1; otherwise one change (maxItemCount 1) is read from its continuation and the lag is the
 * range's session LSN minus that change's `_lsn`, plus one (0 when nothing is pending). Never writes leases.
 * A Java lease is estimated from the etag inside its state; a lease this library cannot read from throws
 * UnsupportedLeaseError (as .NET's estimator fails on a continuation it cannot send).
 */
export async function estimateLag(options: EstimatorOptions): Promise<LeaseLag[]> {
  const store = await openLeaseStore({
    monitored: options.monitoredContainer,
    leaseContainer: options.leaseContainer,
    processorName: options.leaseContainerPrefix ?? "",
    counters: new LeaseOperationCounters(),
    accountEndpoint: options.accountEndpoint,
    // The estimator only reads leases: a lease container without TTL is no hazard to it.
    requireTtl: false,
  });
  const leases = await store.listAll();
  return Promise.all(leases.map((lease) => estimateLeaseLag(options.monitoredContainer, lease)));
}

/**
 * One lease's lag, as {@link estimateLag} computes it, for a lease already read (e.g. by a tool that listed the
 * lease container itself and should not list it again).
 */
export async function estimateLeaseLag(monitoredContainer: Container, lease: Lease): Promise<LeaseLag> {
  const base = { leaseToken: lease.leaseToken, owner: lease.owner };
  if (lease.shape?.unsupported) throw new UnsupportedLeaseError(lease.id, lease.shape.unsupported);
  if (!lease.continuationToken || !lease.feedRange) return { ...base, estimatedLag: 1 };
  const reader = new LeaseFeedReader<{ _lsn?: number }>({
    container: monitoredContainer,
    range: lease.feedRange,
    continuation: lease.continuationToken,
    start: { kind: "now" },
    maxItemCount: 1,
  });
  const page = await reader.next();
  if (page.kind === "gone") return { ...base, estimatedLag: 1 };
  const sessionLsn = sessionTokenLsn(page.sessionToken);
  if (sessionLsn === undefined) return { ...base, estimatedLag: 1 };
  const firstLsn = page.kind === "changes" ? page.items[0]?._lsn : undefined;
  const last = firstLsn !== undefined ? firstLsn - 1 : sessionLsn;
  if (last < 0) return { ...base, estimatedLag: 1 };
  return { ...base, estimatedLag: Math.max(0, sessionLsn - last) };
}
