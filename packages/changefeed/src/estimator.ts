import type { Container } from "@azure/cosmos";
import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import { sessionTokenLsn } from "@cosmos-feed/core/cosmos/session";
import { boundedRequest, RequestAbortedError } from "./bounded-request.js";
import { readRetriesOf, readWithRetries } from "./estimate-retry.js";
import { type Lease, UnsupportedLeaseError } from "./leases/lease.js";
import { openLeaseStore } from "./leases/open.js";
import { LeaseOperationCounters } from "./leases/store.js";
import { ChangeFeedDefaults, InvalidProcessorOptionsError } from "./options.js";
import { LeaseFeedReader } from "./processing/feed-reader.js";

/** One lease's estimated backlog. */
export interface LeaseLag {
  /** The lease's token: a partition key range id (version 0) or an EPK range "min-max" (version 1). */
  leaseToken: string;
  /** Changes not yet processed (as .NET estimates it: session LSN − first pending change's LSN + 1). */
  estimatedLag: number;
  /** The lease's Owner (null when unowned). */
  owner: string | null;
}

/** What `estimateLag` and `estimateLeaseLag` read: the monitored container and the processor's leases. */
export interface EstimatorOptions {
  /** The container whose change feed the processor reads. */
  monitoredContainer: Container;
  /** The processor's lease container. */
  leaseContainer: Container;
  /** The processor's lease id prefix (the trigger's `leaseContainerPrefix`). Default "". */
  leaseContainerPrefix?: string;
  /**
   * The account endpoint whose host goes into the lease prefix, as the .NET / Functions hosts are configured
   * (e.g. `https://myaccount.documents.azure.com/`). Default: the endpoint the monitored container's client was
   * created with. Never the regional endpoint the client writes to.
   */
  accountEndpoint?: string;
  /**
   * Longest wait for each request (ms): a feed read unanswered by then is retried (`readRetries`); the container and
   * lease listing reads fail the estimate with a 408. Default: the processor's.
   */
  requestTimeout?: number;
  /**
   * Retries of a lease's feed read that timed out or was throttled (408, 429, 449, 503), with backoff; then that
   * lease's estimate fails with a LeaseLagReadError. Default ChangeFeedDefaults.estimateReadRetries (3).
   */
  readRetries?: number;
  /** Ends the estimate's requests (the estimate then fails with RequestAbortedError). */
  abortSignal?: AbortSignal;
}

/**
 * Feed reads of one estimate in flight at once. Sent all together, 10,000 leases' reads queued behind each other
 * past the default requestTimeout (36 s) on a 2-core machine with the emulator (bench:fleet -- --estimator,
 * docs/bench-fleet.md); 64 at a time, the estimate took 11 s.
 */
export const ESTIMATE_CONCURRENCY = 64;

/** One lease whose lag could not be estimated (see {@link estimateLagSettled}). */
export interface LeaseLagFailure {
  /** The lease's token. */
  leaseToken: string;
  /** The lease's Owner (null when unowned). */
  owner: string | null;
  /**
   * Why: a LeaseLagReadError after the retries of a timed-out or throttled read, an UnsupportedLeaseError, or the
   * read's own error (e.g. a 403).
   */
  error: Error;
}

/** What {@link estimateLagSettled} returns: the leases estimated and those that could not be, each once. */
export interface LagEstimate {
  /** The leases estimated, in lease listing order. */
  lags: LeaseLag[];
  /** The leases not estimated, in lease listing order; empty when every lease was. */
  failed: LeaseLagFailure[];
}

/** `map` over `items` with at most `limit` calls pending, results in order; fails as soon as one call fails. */
async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  map: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await map(items[i]);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** How each estimator request is bounded and retried (the clock: tests inject a FakeClock). */
export type EstimatorBounds = Pick<EstimatorOptions, "requestTimeout" | "abortSignal" | "readRetries"> & {
  clock?: Clock;
};

function timeoutOf(b: EstimatorBounds): number {
  const timeout = b.requestTimeout ?? ChangeFeedDefaults.requestTimeout;
  if (!Number.isFinite(timeout) || timeout <= 0)
    throw new InvalidProcessorOptionsError(
      `requestTimeout must be a positive number of milliseconds; got ${String(b.requestTimeout)}.`,
    );
  return timeout;
}

function bounded<T>(b: EstimatorBounds, what: string, request: (s: AbortSignal) => Promise<T>): Promise<T> {
  return boundedRequest(
    b.clock ?? systemClock,
    timeoutOf(b),
    b.abortSignal,
    `lag estimate: ${what}`,
    request,
  );
}

/** The monitored container's leases, listed once (bounded by requestTimeout). */
async function listLeases(options: EstimatorOptions & EstimatorBounds): Promise<Lease[]> {
  // Bad options fail before any request is sent.
  timeoutOf(options);
  readRetriesOf(options.readRetries);
  const opening = openLeaseStore({
    monitored: options.monitoredContainer,
    leaseContainer: options.leaseContainer,
    processorName: options.leaseContainerPrefix ?? "",
    counters: new LeaseOperationCounters(),
    accountEndpoint: options.accountEndpoint,
    // The estimator only reads leases: a lease container without TTL is no hazard to it.
    requireTtl: false,
  });
  // (Opening reads both containers' definitions and takes no signal: a late answer is only dropped.)
  opening.catch(() => undefined); // rejected after a give-up: dropped, never unhandled
  const store = await bounded(options, "container reads", () => opening);
  return bounded(options, "lease listing", (s) => store.listAll(s));
}

/**
 * Per-lease lag and owner, computed the way .NET's ChangeFeedEstimator does: a lease without a continuation
 * reports 1; otherwise one change (maxItemCount 1) is read from its continuation and the lag is the
 * range's session LSN minus that change's `_lsn`, plus one (0 when nothing is pending). Never writes leases.
 * A Java lease is estimated from the etag inside its state; a lease this library cannot read from throws
 * UnsupportedLeaseError (as .NET's estimator fails on a continuation it cannot send). One feed read per lease,
 * at most ESTIMATE_CONCURRENCY in flight; a read that timed out or was throttled is sent again (`readRetries`).
 * The first lease that still cannot be read fails the whole estimate (a LeaseLagReadError naming it);
 * {@link estimateLagSettled} returns the other leases' lags instead.
 */
export async function estimateLag(options: EstimatorOptions & EstimatorBounds): Promise<LeaseLag[]> {
  const leases = await listLeases(options);
  return mapBounded(leases, ESTIMATE_CONCURRENCY, (lease) =>
    estimateLeaseLag(options.monitoredContainer, lease, options),
  );
}

/**
 * {@link estimateLag} that never fails the whole estimate for one lease: every lease is read (each with its
 * retries), and those that could not be estimated are listed in `failed` with their error. It still rejects
 * when the leases cannot be listed (the lease container's reads) or `abortSignal` fires.
 */
export async function estimateLagSettled(options: EstimatorOptions & EstimatorBounds): Promise<LagEstimate> {
  const leases = await listLeases(options);
  const outcomes = await mapBounded(leases, ESTIMATE_CONCURRENCY, (lease) =>
    estimateLeaseLag(options.monitoredContainer, lease, options).then(
      (lag): LeaseLag | LeaseLagFailure => lag,
      (error: unknown): LeaseLagFailure => {
        // The caller stopped the estimate: it ends as a whole.
        if (error instanceof RequestAbortedError) throw error;
        const e = error instanceof Error ? error : new Error(String(error));
        return { leaseToken: lease.leaseToken, owner: lease.owner, error: e };
      },
    ),
  );
  const estimate: LagEstimate = { lags: [], failed: [] };
  for (const o of outcomes) {
    if ("error" in o) estimate.failed.push(o);
    else estimate.lags.push(o);
  }
  return estimate;
}

/**
 * One lease's lag, as {@link estimateLag} computes it, for a lease already read (e.g. by a tool that listed the
 * lease container itself and should not list it again).
 */
export async function estimateLeaseLag(
  monitoredContainer: Container,
  lease: Lease,
  bounds: EstimatorBounds = {},
): Promise<LeaseLag> {
  const retries = readRetriesOf(bounds.readRetries);
  const base = { leaseToken: lease.leaseToken, owner: lease.owner };
  if (lease.shape?.unsupported) throw new UnsupportedLeaseError(lease.id, lease.shape.unsupported);
  if (!lease.continuationToken || !lease.feedRange) return { ...base, estimatedLag: 1 };
  const range = lease.feedRange;
  const continuation = lease.continuationToken;
  const page = await readWithRetries(lease, retries, bounds.clock ?? systemClock, bounds.abortSignal, () => {
    // A reader (an SDK iterator) per attempt: a timed-out attempt's late answer lands in its own, dropped.
    const reader = new LeaseFeedReader<{ _lsn?: number }>({
      container: monitoredContainer,
      range,
      continuation,
      start: { kind: "now" },
      maxItemCount: 1,
    });
    // (The SDK's change feed iterator takes no signal: a late answer is only dropped.)
    return bounded(bounds, `feed read of lease ${lease.leaseToken}`, () => reader.next());
  });
  if (page.kind === "gone") return { ...base, estimatedLag: 1 };
  const sessionLsn = sessionTokenLsn(page.sessionToken);
  if (sessionLsn === undefined) return { ...base, estimatedLag: 1 };
  const firstLsn = page.kind === "changes" ? page.items[0]?._lsn : undefined;
  const last = firstLsn !== undefined ? firstLsn - 1 : sessionLsn;
  if (last < 0) return { ...base, estimatedLag: 1 };
  return { ...base, estimatedLag: Math.max(0, sessionLsn - last) };
}
