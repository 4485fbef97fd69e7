import { PreconditionFailedError } from "./errors.js";

/**
 * The one optimistic-concurrency retry policy: the lease store, updateItem, the fenced writes, work-item
 * claims and the lock's 409→404 race all retry through it. Each knob is named here once.
 */
export const OccRetryDefaults = {
  /** Attempts (the first try included) before the caller's "gave up" error. */
  maxAttempts: 10,
  /** Backoff ceiling after the first lost race (ms); doubles per attempt, with full jitter. */
  baseDelayMs: 5,
  /** Largest backoff ceiling (ms). */
  maxDelayMs: 500,
} as const;

/** Options of an `OccRetryPolicy`; each number defaults to `OccRetryDefaults`'. */
export interface OccRetryPolicyOptions {
  /** Attempts, the first included, before giving up (default 10). */
  maxAttempts?: number;
  /** Backoff ceiling after the first lost race (ms, default 5); doubles per attempt, with full jitter. */
  baseDelayMs?: number;
  /** Largest backoff ceiling (ms, default 500). */
  maxDelayMs?: number;
  /** Uniform [0, 1) source for the jitter (tests inject a fixed one). Default Math.random. */
  random?: () => number;
  /** Waits `ms`; resolves early when `signal` aborts (tests inject a recorder). Default: a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Options of one `OccRetryPolicy.run`. */
export interface OccRunOptions {
  /** Stops retrying: the wait between attempts ends early and no further attempt starts. */
  signal?: AbortSignal;
  /** Which errors mean "lost the race, try again". Default: PreconditionFailedError (412). */
  isRetryable?: (e: unknown) => boolean;
  /** The error to throw when the last attempt lost too (default: that last error). */
  onExhausted?: (attempts: number, lastError: unknown) => unknown;
}

/** Sleeps, resolving early on abort; never leaves a listener on the caller's signal. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Returns `value` if it is a positive, finite number; otherwise throws a RangeError naming `name` and `unit`.
 */
export function requirePositiveFinite(name: string, value: number, unit = "ms"): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive, finite number of ${unit}; got ${String(value)}.`);
  }
  return value;
}

/** Bounded attempts, full-jitter exponential backoff between them. */
export class OccRetryPolicy {
  /** Attempts, the first included, before the caller's "gave up" error. */
  readonly maxAttempts: number;
  /** Backoff ceiling after the first lost race (ms); doubles per attempt, with full jitter. */
  readonly baseDelayMs: number;
  /** Largest backoff ceiling (ms). */
  readonly maxDelayMs: number;
  private readonly random: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: OccRetryPolicyOptions = {}) {
    this.maxAttempts = options.maxAttempts ?? OccRetryDefaults.maxAttempts;
    this.baseDelayMs = options.baseDelayMs ?? OccRetryDefaults.baseDelayMs;
    this.maxDelayMs = options.maxDelayMs ?? OccRetryDefaults.maxDelayMs;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? abortableSleep;
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a whole number ≥ 1; got ${String(this.maxAttempts)}.`);
    }
    requirePositiveFinite("baseDelayMs", this.baseDelayMs);
    requirePositiveFinite("maxDelayMs", this.maxDelayMs);
    if (this.maxDelayMs < this.baseDelayMs) {
      throw new RangeError(`maxDelayMs (${this.maxDelayMs}) must be ≥ baseDelayMs (${this.baseDelayMs}).`);
    }
  }

  /** The same policy (same randomness and sleep) with other limits. */
  with(overrides: Omit<OccRetryPolicyOptions, "random" | "sleep">): OccRetryPolicy {
    return new OccRetryPolicy({
      maxAttempts: overrides.maxAttempts ?? this.maxAttempts,
      baseDelayMs: overrides.baseDelayMs ?? this.baseDelayMs,
      maxDelayMs: overrides.maxDelayMs ?? this.maxDelayMs,
      random: this.random,
      sleep: this.sleep,
    });
  }

  /** The wait after losing attempt `attempt` (1-based): uniform in [0, min(max, base·2^(attempt−1))). */
  backoffMs(attempt: number): number {
    const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(attempt - 1, 30));
    return this.random() * ceiling;
  }

  /**
   * Runs `operation(attempt)` until it returns, throws a non-retryable error, or `maxAttempts` attempts lost.
   * Full jitter: contenders that collided spread out instead of colliding again.
   */
  async run<T>(operation: (attempt: number) => Promise<T>, options: OccRunOptions = {}): Promise<T> {
    const retryable = options.isRetryable ?? ((e: unknown) => e instanceof PreconditionFailedError);
    let lastError: unknown;
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      options.signal?.throwIfAborted();
      try {
        return await operation(attempt);
      } catch (e) {
        if (!retryable(e)) throw e;
        lastError = e;
      }
      if (attempt < this.maxAttempts) await this.sleep(this.backoffMs(attempt), options.signal);
    }
    throw options.onExhausted ? options.onExhausted(this.maxAttempts, lastError) : lastError;
  }
}

/** The policy every optimistic-concurrency loop uses unless given another. */
export const defaultOccRetryPolicy = new OccRetryPolicy();
