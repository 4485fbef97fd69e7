import type { Container } from "@azure/cosmos";
import type { Clock } from "@cosmos-feed/core/clock";
import { forEachConcurrently } from "@cosmos-feed/core/concurrency";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { abandonedBy, boundedRequest } from "./bounded-request.js";
import { type EpkRange, type Lease, LeaseMode, newLease } from "./leases/lease.js";
import type { LeaseStore } from "./leases/store.js";
import { ChangeFeedDefaults, InvalidProcessorOptionsError } from "./options.js";

/** A partition key range as the service lists it. */
export interface PartitionKeyRangeBounds {
  id: string;
  minInclusive: string;
  maxExclusive: string;
}

/** The end of the EPK space ("FF" is above every effective partition key). */
const EPK_MAX = "FF";

function below(a: string, b: string): boolean {
  // EPK strings compare as strings ("" is the lowest); "FF" is the top however long the other side is.
  if (a === b) return false;
  if (a === EPK_MAX) return false;
  if (b === EPK_MAX) return true;
  return a < b;
}

/**
 * The parts of partition key range `r` that no lease covers. A version-0 lease covers the range whose id is
 * its token; any lease with a FeedRange covers that EPK range. Several leases may tile one range (EPK leases
 * after a merge), and a lease covering only part of it leaves the rest uncovered.
 */
export function uncoveredParts(r: PartitionKeyRangeBounds, leases: readonly Lease[]): EpkRange[] {
  if (leases.some((l) => l.version === 0 && l.leaseToken === r.id)) return [];
  const spans = leases
    .map((l) => l.feedRange)
    .filter(
      (f): f is EpkRange => f !== undefined && below(f.min, r.maxExclusive) && below(r.minInclusive, f.max),
    )
    .sort((a, b) => (below(a.min, b.min) ? -1 : below(b.min, a.min) ? 1 : 0));
  const gaps: EpkRange[] = [];
  let at = r.minInclusive;
  for (const s of spans) {
    if (below(at, s.min)) gaps.push({ min: at, max: s.min });
    if (below(at, s.max)) at = s.max;
    if (!below(at, r.maxExclusive)) return gaps;
  }
  if (below(at, r.maxExclusive)) gaps.push({ min: at, max: r.maxExclusive });
  return gaps;
}

export interface BootstrapperOptions {
  store: LeaseStore;
  monitored: Container;
  mode: LeaseMode;
  clock: Clock;
  /** Longest wait between attempts to take the `.lock` another host holds (ms). */
  retryDelay: number;
  /** Longest wait for one request's answer (ms); see ChangeFeedDefaults.requestTimeout. */
  requestTimeout: number;
}

/** The processor was stopped while it was still bootstrapping. */
export class BootstrapAbortedError extends CosmosFeedError {
  constructor() {
    super("The processor was stopped during bootstrap.");
  }
}

/**
 * .NET's bootstrap: unless `.info` exists, take `.lock`, create a lease for every part of a partition key
 * range that no lease covers, write `.info`, drop `.lock`. Refuses a change of mode for an existing prefix.
 * Every request is bounded by requestTimeout (a RequestTimeoutError fails the start, as .NET's bootstrap
 * fails StartAsync on an error) and ended by the start's signal (→ BootstrapAbortedError, not an error).
 */
export class Bootstrapper {
  constructor(private readonly o: BootstrapperOptions) {}

  async run(signal: AbortSignal): Promise<void> {
    try {
      await this.bootstrap(signal);
    } catch (e) {
      if (abandonedBy(signal, e)) throw new BootstrapAbortedError();
      throw e;
    }
  }

  /** One request, bounded; `signal` undefined: only by requestTimeout. */
  private bounded<T>(
    signal: AbortSignal | undefined,
    what: string,
    request: (s: AbortSignal) => Promise<T>,
  ): Promise<T> {
    return boundedRequest(this.o.clock, this.o.requestTimeout, signal, `bootstrap: ${what}`, request);
  }

  private async bootstrap(signal: AbortSignal): Promise<void> {
    const { store, mode } = this.o;
    const existing = await this.bounded(signal, "lease listing", (s) => store.listAll(s));
    if (existing.length > 0 && existing[0].mode !== mode) {
      throw new InvalidProcessorOptionsError(
        `Switching the change feed mode from '${existing[0].mode}' to '${mode}' is not allowed for the same lease prefix.`,
      );
    }
    while (!(await this.bounded(signal, ".info read", (s) => store.isInitialized(s)))) {
      if (signal.aborted) throw new BootstrapAbortedError();
      const lock = await this.bounded(signal, ".lock create", (s) => store.acquireInitLock(s));
      if (!lock) {
        await this.o.clock.sleep(Math.min(ChangeFeedDefaults.bootstrapRetryDelay, this.o.retryDelay), signal);
        if (signal.aborted) throw new BootstrapAbortedError();
        continue;
      }
      try {
        await this.createMissingLeases(signal);
        await this.bounded(signal, ".info create", (s) => store.markInitialized(s));
      } finally {
        // Not cut short by a stop: a lock left behind holds every host's bootstrap until its ttl.
        await this.bounded(undefined, ".lock delete", (s) => store.releaseInitLock(lock, s));
      }
    }
  }

  private async createMissingLeases(signal: AbortSignal): Promise<void> {
    const { store, mode } = this.o;
    const { resources: ranges } = await this.bounded(signal, "partition key ranges read", (s) =>
      this.o.monitored.readPartitionKeyRanges({ abortSignal: s }).fetchAll(),
    );
    const leases = await this.bounded(signal, "lease listing", (s) => store.listAll(s));
    const missing: Lease[] = [];
    for (const r of ranges) {
      for (const gap of uncoveredParts(r, leases)) {
        const whole = gap.min === r.minInclusive && gap.max === r.maxExclusive;
        missing.push(
          newLease(
            store.prefix,
            store.layout,
            whole ? { id: r.id, min: r.minInclusive, max: r.maxExclusive } : gap,
            null,
            mode,
          ),
        );
      }
    }
    await this.createAll(missing, signal);
  }

  /**
   * Creates the leases, ChangeFeedDefaults.bootstrapCreateConcurrency at a time (one at a time, 10,000 leases
   * took longer than the lock's 30 s ttl: other hosts then bootstrapped too). The first failure ends the creates
   * in flight and fails the bootstrap; the next start creates what is still missing.
   */
  private async createAll(missing: readonly Lease[], signal: AbortSignal): Promise<void> {
    const failed = new AbortController();
    const both = AbortSignal.any([signal, failed.signal]);
    await forEachConcurrently(missing, ChangeFeedDefaults.bootstrapCreateConcurrency, (lease) =>
      this.bounded(both, "lease create", (s) => this.o.store.create(lease, s)).then(
        () => undefined,
        (error: unknown) => {
          failed.abort();
          throw error;
        },
      ),
    );
  }
}

export { LeaseMode };
