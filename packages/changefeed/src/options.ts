import type { Container } from "@azure/cosmos";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import type { LoadBalancingStrategy } from "./balancing/strategy.js";

export type { LoadBalancingStrategy } from "./balancing/strategy.js";
export type { JavaChangeFeedState } from "./leases/java-state.js";
export type { EpkRange, Lease, LeaseMode, LeaseVersion } from "./leases/lease.js";
export type { LeaseShape } from "./leases/shape.js";

/**
 * Timing defaults, in milliseconds, with the Azure Functions Cosmos DB trigger's names (and .NET's values), and the
 * two counts (the estimator's retries, the bootstrap's concurrent creates). Each is declared here once.
 */
export const ChangeFeedDefaults = {
  /** How often a host checks the leases it owns and renews those that are due (ms). */
  leaseRenewInterval: 17_000,
  /** How often a host runs a balancing round: read all leases, take available ones, steal if unbalanced (ms). */
  leaseAcquireInterval: 13_000,
  /** A lease whose owner has not written it for this long is available to others (ms). */
  leaseExpirationInterval: 60_000,
  /** Wait after a change feed read found nothing new (ms). */
  feedPollDelay: 5_000,
  /** First retry delay of a failed batch; doubles up to maxRetryDelay (ms). */
  retryInitialDelay: 1_000,
  /** Longest wait between retries of a failed batch (ms). */
  retryMaxDelay: 30_000,
  /**
   * Longest wait between attempts to take the bootstrap lock held by another host (ms); .NET uses 15 s. The
   * processor waits leaseJoinSettleDelay (2 s) when that is shorter.
   */
  bootstrapRetryDelay: 15_000,
  /**
   * Lease documents the bootstrap creates at once (a count, not a time): 10,000 leases one at a time outlast the
   * bootstrap lock's 30 s ttl.
   */
  bootstrapCreateConcurrency: 25,
  /**
   * Watch slot: hosts take turns reading the lease container's change feed, one host per slot, so released
   * leases are noticed within about one slot and the container is read once per slot in total (ms).
   */
  leaseWatchInterval: 1_000,
  /**
   * A host that held no lease takes one (a foothold: until then the others do not count it) and runs its next
   * balancing round this long after, on a refreshed view in which hosts starting with it have footholds too; that
   * round takes its whole fair share (balancing/fair-share.ts). Also the follow-up after a round that took or lost
   * leases or found a lease another host took first, the first start's delay before a lone host takes its other
   * leases, and how often a host waiting on another host's bootstrap (its `.lock`) checks again
   * (ms). Option: `leaseJoinSettleDelay`.
   */
  leaseJoinSettleDelay: 2_000,
  /** A stopping host releases a successor's leases this long before the successor's watch slot (ms). */
  handoffLead: 150,
  /** On stop, how often a draining host checks whether a successor took its released leases (ms). */
  handoffCheckInterval: 250,
  /**
   * Local lease deadline: a host that has not written a lease for (leaseExpirationInterval − this margin), by
   * its own monotonic clock, stops processing it (the handler's signal fires) before other hosts may take it.
   * The margin covers clock drift between hosts and the time a write spends in flight (ms). Default 5 s, but
   * at most a tenth of leaseExpirationInterval. App setting: `leaseSafetyMargin`.
   */
  leaseSafetyMargin: 5_000,
  /**
   * Checkpoint coalescing: the next page is read while the handler runs, and when it brings changes the
   * handled batch's checkpoint is held and replaced by the next batch's, for at most this long since the
   * oldest batch not yet checkpointed (ms). A batch is still checkpointed as soon as the feed has nothing
   * new, a read fails, the lease splits or the processor stops. After a crash, at most this long of handled
   * pages (plus the batch in flight) is delivered again. 0 = every batch's checkpoint is written when it is
   * handled (one lease write per page). App setting: `maxCheckpointDelay`.
   */
  maxCheckpointDelay: 1_000,
  /** First wait after a failed change feed read (429, 503, timeout, refused continuation); doubles per failure (ms). */
  feedReadRetryInitialDelay: 1_000,
  /** Longest wait between failed change feed reads (ms). */
  feedReadRetryMaxDelay: 30_000,
  /**
   * Longest wait for one request of the processor (feed read; lease write, acquire or re-read after a 412; lease
   * feed read, the watch's and the hand-off's; the bootstrap's, a split replacement's and stop()'s last releases): unanswered by then, it is given
   * up as a 408 (and retried where it can be), so none can hold a worker, a balancing round, start() or stop() for
   * good (.NET races reads
   * against RequestTimeout). It bounds the whole SDK call, 429 retries included (≤ 30 s, the SDK's
   * maxWaitTimeInSeconds): 30 s + .NET's 6 s, so throttling is never taken for a hang (ms). Option: `requestTimeout`.
   */
  requestTimeout: 36_000,
  /**
   * Retries of one lease's feed read in a lag estimate (a count, not ms) when it timed out or was throttled (408,
   * 429, 449, 503): the read is sent again after feedReadRetryInitialDelay, doubling up to feedReadRetryMaxDelay
   * (at least a 429's retry-after), this many times; only then does the lease's estimate fail, with a
   * LeaseLagReadError naming the lease. Estimator option: `readRetries`.
   */
  estimateReadRetries: 3,
} as const;

/**
 * What the processor does when the handler throws: retry the batch, or dead-letter it after some attempts
 * (delays in ms).
 */
export type ErrorPolicy =
  | {
      /** Retry the failed batch with exponential backoff until it succeeds (per-key order is kept). */
      kind: "retry";
      initialDelay?: number;
      maxDelay?: number;
    }
  | {
      /** After `maxAttempts` failed deliveries, write each document of the batch to `container` and move on. */
      kind: "deadLetter";
      container: Container;
      maxAttempts: number;
      initialDelay?: number;
      maxDelay?: number;
    };

/** Options of `createChangeFeedProcessor`: the containers, lease naming, timings (ms) and policies. */
export interface ChangeFeedProcessorOptions {
  /** The container whose change feed is processed. */
  monitoredContainer: Container;
  /** The lease container (partition key /id or /partitionKey; TTL on, so the bootstrap lock expires). */
  leaseContainer: Container;
  /** Lease id prefix, like the trigger's `leaseContainerPrefix` (.NET's processorName). Default "". */
  leaseContainerPrefix?: string;
  /**
   * The account endpoint whose host goes into every lease id (`<prefix><host>_<db rid>_<container rid>..`), as
   * .NET and the Functions trigger take it from the endpoint their client is configured with, e.g.
   * `https://myaccount.documents.azure.com/`. Default: the endpoint the monitored container's CosmosClient was
   * created with (never the regional endpoint it writes to, which changes after a failover). Set it when this
   * client uses another name for the account than the .NET hosts (a custom domain, a private endpoint alias).
   */
  accountEndpoint?: string;
  /**
   * Refuse to start when the lease container has TTL off (no `defaultTtl`): the bootstrap lock `<prefix>.lock`
   * is written with a 30 s ttl, and without TTL a host that crashes while bootstrapping leaves it forever, so
   * every host waits on it. Default true. Set false only for a lease container another tool created without
   * TTL that you cannot change (then delete a stale `.lock` by hand).
   */
  checkLeaseContainerTtl?: boolean;
  /** This host's name, stored as the lease Owner. Default: a random UUID per start (as the Functions host). */
  instanceName?: string;
  /** See ChangeFeedDefaults.leaseRenewInterval (ms). */
  leaseRenewInterval?: number;
  /** See ChangeFeedDefaults.leaseAcquireInterval (ms). */
  leaseAcquireInterval?: number;
  /** See ChangeFeedDefaults.leaseExpirationInterval (ms). */
  leaseExpirationInterval?: number;
  /** See ChangeFeedDefaults.leaseSafetyMargin (ms). */
  leaseSafetyMargin?: number;
  /** See ChangeFeedDefaults.feedPollDelay (ms). */
  feedPollDelay?: number;
  /**
   * Shortest time between the starts of two reads of one lease's feed (ms); 0 (the default) reads again as soon
   * as a page is handled. For a consumer that learns of most changes another way and reads the feed as a backstop
   * (the dev host's durable task hub): changes are then read in fewer, fuller pages.
   */
  minReadInterval?: number;
  /** See ChangeFeedDefaults.maxCheckpointDelay (ms); 0 writes a checkpoint per batch. */
  maxCheckpointDelay?: number;
  /** See ChangeFeedDefaults.requestTimeout (ms). */
  requestTimeout?: number;
  /**
   * Hosts take turns reading the lease container's change feed, one per slot of this length (ms), so a lease
   * released by a stopping host is taken by its successor within about one slot; the container is read about
   * once per slot in total, whatever the number of hosts. A host alone reads it every leaseAcquireInterval.
   * 0 = no watch: every host reads it once per leaseAcquireInterval (the cost of .NET's listing). Default 1000.
   */
  leaseWatchInterval?: number;
  /** See ChangeFeedDefaults.leaseJoinSettleDelay (ms; at most leaseAcquireInterval). */
  leaseJoinSettleDelay?: number;
  /**
   * Page size of change feed reads (documents per handler call). Default: the service's (100 on the emulator). A
   * page never splits one transaction's changes (they share an LSN), so a handler call may get more.
   */
  maxItemsPerInvocation?: number;
  /** For leases without a continuation: start from the beginning of the feed. */
  startFromBeginning?: boolean;
  /** For leases without a continuation: start from this time. Not with startFromBeginning. */
  startFromTime?: Date | string;
  /** Latest version (default) or all versions and deletes. */
  mode?: "latestVersion" | "allVersionsAndDeletes";
  /** What to do when the handler fails. Default: retry with backoff. */
  errorPolicy?: ErrorPolicy;
  /** Replaces the fair-share strategy (FairShareBalancingStrategy; .NET's is EqualPartitionsBalancingStrategy). */
  balancingStrategy?: LoadBalancingStrategy;
  /**
   * On stop, keep processing released leases until another host takes them (or this many ms pass), so the
   * feed never pauses during a rolling deploy. 0 = release and stop at once. Default: leaseAcquireInterval + 2 s.
   */
  handoffTimeout?: number;
}

/** The processor's options with every default applied and checked (`resolveOptions`); times in ms. */
export interface ResolvedOptions {
  /** The lease id prefix (`leaseContainerPrefix`). */
  prefix: string;
  /** This host's name, stored as the lease Owner. */
  instanceName: string;
  /** Lease renewal interval (ms). */
  leaseRenewInterval: number;
  /** Balancing round interval (ms). */
  leaseAcquireInterval: number;
  /** Lease expiration interval (ms). */
  leaseExpirationInterval: number;
  /** Local lease deadline margin (ms), at most a tenth of leaseExpirationInterval. */
  leaseSafetyMargin: number;
  /** Wait after a feed read found nothing new (ms). */
  feedPollDelay: number;
  /** Shortest time between two reads of one lease's feed (ms); 0 = none. */
  minReadInterval: number;
  /** Checkpoint coalescing (ms); 0 = a checkpoint per batch. */
  maxCheckpointDelay: number;
  /** Longest wait for one request (ms). */
  requestTimeout: number;
  /** Lease watch slot (ms); 0 = no watch. */
  leaseWatchInterval: number;
  /** Wait after a foothold before the round that takes the full share (ms). */
  leaseJoinSettleDelay: number;
  /** Documents per page; undefined = the service's page size. */
  maxItemsPerInvocation: number | undefined;
  /** Leases without a continuation start from the beginning of the feed. */
  startFromBeginning: boolean;
  /** Leases without a continuation start from this time. */
  startFromTime: Date | undefined;
  /** True for all versions and deletes. */
  allVersions: boolean;
  /** What to do when the handler fails. */
  errorPolicy: ErrorPolicy;
  /** Hand-off wait on stop (ms); 0 = release and stop at once. */
  handoffTimeout: number;
}

/** Thrown at start for options that cannot work together. */
export class InvalidProcessorOptionsError extends CosmosFeedError {
  constructor(message: string) {
    super(message, { statusCode: 400 });
  }
}

/**
 * How old (ms since its last write) an owned lease gets before it is renewed: the first whole number of renew
 * intervals at which fewer than two renew intervals remain before it would expire (so a failed renewal still
 * gets a second chance), at least one renew interval. With the defaults 34 s: an idle lease costs one write per
 * 34 s, not a read and a write per 17 s as in .NET.
 */
export function renewDue(renewInterval: number, expirationInterval: number): number {
  const steps = Math.max(1, Math.ceil((expirationInterval - 2 * renewInterval) / renewInterval));
  return steps * renewInterval;
}

function positiveMs(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw new InvalidProcessorOptionsError(
      `${name} must be a positive number of milliseconds; got ${String(value)}.`,
    );
  }
  return v;
}

/**
 * Applies the defaults and checks `o`; throws InvalidProcessorOptionsError for values that cannot work
 * (non-positive intervals, a safety margin too large, both start options). `randomName` names the host when
 * `instanceName` is not set.
 */
export function resolveOptions(o: ChangeFeedProcessorOptions, randomName: () => string): ResolvedOptions {
  const renew = positiveMs("leaseRenewInterval", o.leaseRenewInterval, ChangeFeedDefaults.leaseRenewInterval);
  const acquire = positiveMs(
    "leaseAcquireInterval",
    o.leaseAcquireInterval,
    ChangeFeedDefaults.leaseAcquireInterval,
  );
  const expiration = positiveMs(
    "leaseExpirationInterval",
    o.leaseExpirationInterval,
    ChangeFeedDefaults.leaseExpirationInterval,
  );
  const poll = positiveMs("feedPollDelay", o.feedPollDelay, ChangeFeedDefaults.feedPollDelay);
  const requestTimeout = positiveMs("requestTimeout", o.requestTimeout, ChangeFeedDefaults.requestTimeout);
  const minRead = o.minReadInterval ?? 0;
  if (!Number.isFinite(minRead) || minRead < 0) {
    throw new InvalidProcessorOptionsError(`minReadInterval must be 0 or more milliseconds; got ${minRead}.`);
  }
  if (renew >= expiration) {
    throw new InvalidProcessorOptionsError(
      `leaseRenewInterval (${renew} ms) must be shorter than leaseExpirationInterval (${expiration} ms), or leases expire while owned.`,
    );
  }
  if (2 * renew > expiration) {
    throw new InvalidProcessorOptionsError(
      `leaseExpirationInterval (${expiration} ms) must be at least twice leaseRenewInterval (${renew} ms), so a failed renewal can be retried before the lease expires.`,
    );
  }
  const margin = positiveMs(
    "leaseSafetyMargin",
    o.leaseSafetyMargin,
    Math.min(ChangeFeedDefaults.leaseSafetyMargin, expiration / 10),
  );
  if (margin >= expiration - renewDue(renew, expiration)) {
    throw new InvalidProcessorOptionsError(
      `leaseSafetyMargin (${margin} ms) must be shorter than leaseExpirationInterval − the renewal age (${expiration - renewDue(renew, expiration)} ms), or a lease is given up before it is renewed.`,
    );
  }
  if (o.startFromBeginning && o.startFromTime !== undefined) {
    throw new InvalidProcessorOptionsError("Set startFromBeginning or startFromTime, not both.");
  }
  let startFromTime: Date | undefined;
  if (o.startFromTime !== undefined) {
    startFromTime = o.startFromTime instanceof Date ? o.startFromTime : new Date(o.startFromTime);
    if (Number.isNaN(startFromTime.getTime())) {
      throw new InvalidProcessorOptionsError(
        `startFromTime '${String(o.startFromTime)}' is not a valid date.`,
      );
    }
  }
  const max = o.maxItemsPerInvocation;
  if (max !== undefined && (!Number.isInteger(max) || max <= 0)) {
    throw new InvalidProcessorOptionsError(`maxItemsPerInvocation must be a positive integer; got ${max}.`);
  }
  const mode = o.mode ?? "latestVersion";
  if (mode !== "latestVersion" && mode !== "allVersionsAndDeletes") {
    throw new InvalidProcessorOptionsError(
      `mode must be 'latestVersion' or 'allVersionsAndDeletes'; got '${mode}'.`,
    );
  }
  if (mode === "allVersionsAndDeletes" && o.startFromBeginning) {
    throw new InvalidProcessorOptionsError("All-versions-and-deletes mode cannot start from the beginning.");
  }
  const policy = o.errorPolicy ?? { kind: "retry" };
  if (policy.kind === "deadLetter" && (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1)) {
    throw new InvalidProcessorOptionsError("errorPolicy.maxAttempts must be a positive integer.");
  }
  const prefix = o.leaseContainerPrefix ?? "";
  if (/[/\\?#]/.test(prefix)) {
    throw new InvalidProcessorOptionsError(
      `leaseContainerPrefix '${prefix}' must not contain '/', '\\', '?' or '#'.`,
    );
  }
  const watch = o.leaseWatchInterval ?? ChangeFeedDefaults.leaseWatchInterval;
  if (typeof watch !== "number" || !Number.isFinite(watch) || watch < 0) {
    throw new InvalidProcessorOptionsError(
      `leaseWatchInterval must be 0 (off) or a positive number of milliseconds; got ${String(o.leaseWatchInterval)}.`,
    );
  }
  const settle = positiveMs(
    "leaseJoinSettleDelay",
    o.leaseJoinSettleDelay,
    Math.min(ChangeFeedDefaults.leaseJoinSettleDelay, acquire),
  );
  const checkpointDelay = o.maxCheckpointDelay ?? ChangeFeedDefaults.maxCheckpointDelay;
  if (typeof checkpointDelay !== "number" || !Number.isFinite(checkpointDelay) || checkpointDelay < 0) {
    throw new InvalidProcessorOptionsError(
      `maxCheckpointDelay must be 0 (a checkpoint per batch) or a positive number of milliseconds; got ${String(o.maxCheckpointDelay)}.`,
    );
  }
  const handoff = o.handoffTimeout ?? acquire + 2_000;
  if (!Number.isFinite(handoff) || handoff < 0) {
    throw new InvalidProcessorOptionsError(`handoffTimeout must be 0 or more milliseconds; got ${handoff}.`);
  }
  return {
    prefix,
    instanceName: o.instanceName ?? randomName(),
    leaseRenewInterval: renew,
    leaseAcquireInterval: acquire,
    leaseExpirationInterval: expiration,
    leaseSafetyMargin: margin,
    feedPollDelay: poll,
    minReadInterval: minRead,
    maxCheckpointDelay: checkpointDelay,
    requestTimeout,
    leaseWatchInterval: watch,
    leaseJoinSettleDelay: settle,
    maxItemsPerInvocation: max,
    startFromBeginning: o.startFromBeginning ?? false,
    startFromTime,
    allVersions: mode === "allVersionsAndDeletes",
    errorPolicy: policy,
    handoffTimeout: handoff,
  };
}
