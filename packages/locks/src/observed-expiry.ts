import type { Clock } from "@cosmos-feed/core/clock";

/** One version of a lock document, and when this host first saw it (its own monotonic clock). */
interface Sighting {
  etag: string;
  at: number;
}

/**
 * When a lock held by someone else may be taken over, decided without comparing two machines' clocks (as
 * client-go's leader election does with its observedRecord / observedTime): a version of the lock document
 * (its `_etag`) counts as expired once this host has seen it unchanged for its TTL (plus an allowance for
 * clock rate drift and the read in flight) by this host's own monotonic clock. The first sighting is recorded
 * when the read answered, which is after the holder's write landed and so after the holder's deadline counts
 * from; every renewal is a new etag and starts the count again. The service's `_ts` is never compared with
 * the local wall clock, so a taker whose clock runs fast cannot take a lock its holder still believes valid.
 */
export class ObservedLockExpiry {
  private readonly seen = new Map<string, Sighting>();

  constructor(
    private readonly clock: Clock,
    private readonly allowanceMs: number,
  ) {}

  /**
   * Records `etag` as seen now unless it is the version already being watched, and returns how long (ms) until
   * this host may take it over: 0 once it has stayed unchanged for `ttlSeconds` + the allowance.
   */
  remainingMs(name: string, etag: string, ttlSeconds: number): number {
    const now = this.clock.monotonicNow();
    let sighting = this.seen.get(name);
    if (sighting?.etag !== etag) {
      sighting = { etag, at: now };
      this.seen.set(name, sighting);
    }
    // Elapsed first, then the difference: `at + window - now` in floating point can land a hair above the window
    // (4000.0000000009 ms), which a caller rounding up to seconds turns into one second more.
    return Math.max(0, ttlSeconds * 1000 + this.allowanceMs - (now - sighting.at));
  }

  /** The lock was taken, released or purged: the next version is watched from scratch. */
  forget(name: string): void {
    this.seen.delete(name);
  }
}
