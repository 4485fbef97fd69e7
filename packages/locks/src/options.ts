import type { Container } from "@azure/cosmos";
import type { Clock } from "@cosmos-feed/core/clock";
import type { OccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";

/**
 * Timing of the TTL lock, each named once: seconds where Cosmos counts seconds (ttl), milliseconds elsewhere.
 * No app setting reads these (the lock is a library): callers pass LockClientOptions.
 */
export const LockDefaults = {
  /** Lock document TTL (s): how long a crashed holder blocks others. */
  ttlSeconds: 10,
  /** Subtracted from the TTL for the holder's own deadline (ms): `_ts` is whole seconds (1000) plus safety (500). */
  safetyMarginMs: 1_500,
  /**
   * Takeover of an expired-but-unpurged lock waits this much past the TTL during which this host saw the same
   * version unchanged, on its own monotonic clock (clock rate drift, the read in flight); waiter tickets count
   * as live this much past their expiry (ms).
   */
  clockSkewAllowanceMs: 1_000,
  /** Fast-path retries (a waiter not yet queued) start at this delay (ms); doubles per attempt. */
  minRetryDelayMs: 50,
  /** Longest wait between two looks at the lock or the queue (ms). */
  maxRetryDelayMs: 1_000,
  /** The head of the waiter queue (and the next in line) looks at the lock this often (ms, jittered ±50 %). */
  headPollMs: 5,
  /**
   * A waiter at queue position p ≥ 2 (head = 0) re-reads the queue every (p − 1) × this (ms, jittered ±50 %,
   * at most maxRetryDelayMs); position 1 re-reads it every headPollMs.
   */
  queuePollMs: 5,
  /** A waiter's ticket lapses this long after its last refresh (ms): how long a dead waiter can hold up the queue. */
  ticketLifetimeMs: 5_000,
} as const;

/**
 * The real clock for locks: the library's Clock (packages/core/src/clock.ts, client-go's clock.Clock) with
 * unref'd timers, so a held lock's deadline and renewal never keep a process alive by themselves.
 */
export const systemLockClock: Clock = {
  now: () => Date.now(),
  monotonicNow: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, Math.max(0, ms));
      timer.unref?.();
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    }),
};

/** Options of a `LockClient`: the container, the holder's name, TTL and timings (ms). */
export interface LockClientOptions {
  /** The lock container: partition key /id, TTL on (defaultTtl set, e.g. -1). */
  container: Container;
  /** This holder's name (default: a random UUID). */
  owner?: string;
  /** Default LockDefaults.ttlSeconds. Whole seconds ≥ 1. */
  ttlSeconds?: number;
  /** Default LockDefaults.safetyMarginMs; at least 1000 (the service's `_ts` is whole seconds). */
  safetyMarginMs?: number;
  /** Default LockDefaults.clockSkewAllowanceMs; positive. */
  clockSkewAllowanceMs?: number;
  /** How often a held lock is renewed (ms). Default: a third of the TTL. */
  renewIntervalMs?: number;
  /** A waiter's ticket lifetime (ms). Default LockDefaults.ticketLifetimeMs. */
  ticketLifetimeMs?: number;
  /**
   * Check once, before the first acquisition, that the container has TTL on (else LockContainerError).
   * Default true; false only for containers whose expired locks are taken over without purging (tests).
   */
  checkContainerTtl?: boolean;
  /** For the waiter queue's optimistic writes (default: the shared policy). */
  retryPolicy?: OccRetryPolicy;
  /** Wall time for `_ts` and tickets, monotonic time for deadlines and waits (default: systemLockClock). */
  clock?: Clock;
  /** Uniform [0, 1) for jitter. Default Math.random. */
  random?: () => number;
}

/** Options of `LockClient.acquire`. */
export interface AcquireOptions {
  /** Wait up to this long for a held lock (ms, finite, ≥ 0); 0 = try once (the HTTP fast path, no queue). */
  waitMs?: number;
  /** Stops waiting: acquire() then rejects with an AbortError and leaves the queue. */
  signal?: AbortSignal;
  /** Renew automatically until released (default true). */
  autoRenew?: boolean;
}

/** Options of `LockClient.tryAcquire`: one attempt, no wait. */
export interface TryAcquireOptions extends Omit<AcquireOptions, "waitMs"> {
  /** Set by acquire(): the waiter ticket this attempt serves, recorded in the lock document. */
  ticketId?: string;
}

/** A finite number > 0 (or ≥ 0 with `allowZero`), else a RangeError naming the knob and its unit. */
export function checkDuration(
  name: string,
  value: unknown,
  options: { allowZero?: boolean; min?: number } = {},
) {
  const ok =
    typeof value === "number" &&
    Number.isFinite(value) &&
    (options.allowZero ? value >= 0 : value > 0) &&
    (options.min === undefined || value >= options.min);
  if (!ok) {
    const range = options.min !== undefined ? `≥ ${options.min}` : options.allowZero ? "≥ 0" : "> 0";
    throw new RangeError(`${name} must be a finite number of milliseconds ${range}; got ${String(value)}.`);
  }
  return value as number;
}
