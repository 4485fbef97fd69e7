import type { Clock } from "@cosmos-feed/core/clock";
import { CosmosFeedError } from "@cosmos-feed/core/errors";

/**
 * A function's `retry` as the Functions host applies it to triggers (Cosmos DB, timer, Event Hubs, Kafka):
 * the failed execution is invoked again, up to `maxRetryCount` more times (-1 = forever), waiting between attempts.
 *
 * - fixedDelay: `delayInterval` between every attempt.
 * - exponentialBackoff (WebJobs RandomizedExponentialBackoffStrategy with delta = minimumInterval): the first retry
 *   waits `minimumInterval`, retry n (n ≥ 2) waits minimumInterval + r·2^(n−2)·minimumInterval with r uniform in
 *   [0.8, 1.2], never more than `maximumInterval`.
 */
export type RetryPolicy =
  | { strategy: "fixedDelay"; maxRetryCount: number; delayMs: number }
  | { strategy: "exponentialBackoff"; maxRetryCount: number; minimumMs: number; maximumMs: number };

/** Bad `retry` options: the host refuses such a function at load. */
export class RetryOptionsError extends CosmosFeedError {
  constructor(message: string) {
    super(message, { statusCode: 400 });
  }
}

/**
 * A duration as any layer may pass it: a number of ms (the v4 `retry` option), `{hours, minutes, seconds,
 * milliseconds}` (the v4 `Duration`), `{seconds, nanos}` (what @azure/functions hands the worker: toRpcDuration rounds
 * to whole seconds), or a .NET TimeSpan string `[d.]hh:mm:ss[.fff]` (function.json).
 */
export function durationToMs(value: unknown, what: string): number {
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return value;
  if (typeof value === "string") {
    const ms = parseTimeSpan(value);
    if (ms !== undefined) return ms;
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const num = (k: string): number => {
      const v = o[k];
      if (v === undefined || v === null) return 0;
      const n = typeof v === "string" ? Number(v) : v;
      if (typeof n !== "number" || !Number.isFinite(n))
        throw new RetryOptionsError(`${what}.${k} is not a number.`);
      return n;
    };
    const ms =
      num("hours") * 3_600_000 +
      num("minutes") * 60_000 +
      num("seconds") * 1000 +
      num("milliseconds") +
      num("nanos") / 1e6;
    if (ms >= 0) return ms;
  }
  throw new RetryOptionsError(
    `${what} must be a number of milliseconds, a Duration ({ seconds: 5 }) or a TimeSpan ('00:00:05'); got ${JSON.stringify(value)}.`,
  );
}

/** `[-][d.]hh:mm[:ss[.fffffff]]` (.NET TimeSpan.Parse for the forms function.json uses) → ms; undefined if not one. */
export function parseTimeSpan(text: string): number | undefined {
  const m = /^\s*(?:(\d+)\.)?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7}))?)?\s*$/.exec(text);
  if (!m) return undefined;
  const [, d, h, min, s, frac] = m;
  const hours = Number(h);
  const minutes = Number(min);
  const seconds = Number(s ?? 0);
  if (hours > 23 || minutes > 59 || seconds > 59) return undefined;
  const fraction = frac ? Number(`0.${frac}`) * 1000 : 0;
  return Number(d ?? 0) * 86_400_000 + hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + fraction;
}

/**
 * Reads a function's retry options in any of the shapes they arrive in: the v4 `retry` option
 * (`strategy`, durations in ms or Duration objects) or the worker metadata's `retryOptions` (`retryStrategy`,
 * `{seconds}` durations). Undefined when there is none.
 */
export function parseRetryOptions(raw: unknown): RetryPolicy | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== "object" || Array.isArray(raw)) throw new RetryOptionsError("retry must be an object.");
  const o = raw as Record<string, unknown>;
  const strategy = o.strategy ?? o.retryStrategy;
  const count = typeof o.maxRetryCount === "string" ? Number(o.maxRetryCount) : o.maxRetryCount;
  if (typeof count !== "number" || !Number.isInteger(count) || count < -1) {
    throw new RetryOptionsError(
      `retry.maxRetryCount must be an integer ≥ -1 (-1 retries forever); got ${JSON.stringify(o.maxRetryCount)}.`,
    );
  }
  if (strategy === "fixedDelay") {
    if (o.delayInterval === undefined || o.delayInterval === null) {
      throw new RetryOptionsError("retry.delayInterval is required with strategy 'fixedDelay'.");
    }
    return { strategy, maxRetryCount: count, delayMs: durationToMs(o.delayInterval, "retry.delayInterval") };
  }
  if (strategy === "exponentialBackoff") {
    if (o.minimumInterval === undefined || o.maximumInterval === undefined) {
      throw new RetryOptionsError(
        "retry.minimumInterval and retry.maximumInterval are required with strategy 'exponentialBackoff'.",
      );
    }
    const minimumMs = durationToMs(o.minimumInterval, "retry.minimumInterval");
    const maximumMs = durationToMs(o.maximumInterval, "retry.maximumInterval");
    if (minimumMs > maximumMs) {
      throw new RetryOptionsError(
        `retry.minimumInterval (${minimumMs} ms) must not be greater than retry.maximumInterval (${maximumMs} ms).`,
      );
    }
    return { strategy, maxRetryCount: count, minimumMs, maximumMs };
  }
  throw new RetryOptionsError(
    `retry.strategy must be 'fixedDelay' or 'exponentialBackoff'; got ${JSON.stringify(strategy)}.`,
  );
}

/** The delays of a policy: call next() before each retry (1st retry, 2nd, …). */
export class RetryDelays {
  private current = -1;
  private exponent = 0;
  constructor(
    private readonly policy: RetryPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  next(): number {
    const p = this.policy;
    if (p.strategy === "fixedDelay") return p.delayMs;
    if (this.current === p.maximumMs) return this.current;
    let interval = p.minimumMs;
    if (this.exponent > 0) {
      const r = 0.8 + this.random() * 0.4;
      interval += r * 2 ** (this.exponent - 1) * p.minimumMs;
    }
    if (interval < p.maximumMs) {
      this.current = interval;
      this.exponent++;
    } else this.current = p.maximumMs;
    return this.current;
  }
}

/** What an attempt is told (the worker's RetryContext: retryCount 0 on the first execution). */
export interface RetryContext {
  retryCount: number;
  /** -1 = unlimited; 0 when the function has no retry policy. */
  maxRetryCount: number;
  /** The previous attempt's error (absent on the first). */
  lastError?: unknown;
}

export interface RunWithRetryOptions<T> {
  policy: RetryPolicy | undefined;
  attempt(context: RetryContext): Promise<T>;
  clock: Clock;
  /** Stops retrying (the host is stopping): the last error is thrown instead of waiting. */
  signal?: AbortSignal;
  /** Called before each wait, with the host's log line. */
  onRetry?(info: { delayMs: number; nextAttempt: number; maxRetryCount: number; error: unknown }): void;
  random?: () => number;
}

/** The outcome after the policy ran out: success with the value, or failure with the last error. */
export type RetryOutcome<T> =
  | { ok: true; value: T; attempts: number }
  | { ok: false; error: unknown; attempts: number; aborted: boolean };

/** Runs `attempt` under the policy (as the host's FunctionExecutor retry loop). Never throws. */
export async function runWithRetry<T>(o: RunWithRetryOptions<T>): Promise<RetryOutcome<T>> {
  const max = o.policy?.maxRetryCount ?? 0;
  const delays = o.policy ? new RetryDelays(o.policy, o.random) : undefined;
  let lastError: unknown;
  for (let retryCount = 0; ; retryCount++) {
    try {
      const value = await o.attempt({
        retryCount,
        maxRetryCount: max,
        ...(retryCount > 0 ? { lastError } : {}),
      });
      return { ok: true, value, attempts: retryCount + 1 };
    } catch (e) {
      lastError = e;
    }
    const more = delays !== undefined && (max === -1 || retryCount < max);
    if (!more || o.signal?.aborted) {
      return { ok: false, error: lastError, attempts: retryCount + 1, aborted: o.signal?.aborted ?? false };
    }
    const delayMs = delays.next();
    o.onRetry?.({ delayMs, nextAttempt: retryCount + 1, maxRetryCount: max, error: lastError });
    await o.clock.sleep(delayMs, o.signal);
    if (o.signal?.aborted) return { ok: false, error: lastError, attempts: retryCount + 1, aborted: true };
  }
}

/** `00:00:05` style, as the host writes delays in its logs. */
export function formatTimeSpan(ms: number): string {
  const total = Math.round(ms);
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = Math.floor((total % 60_000) / 1000);
  const frac = total % 1000;
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(h)}:${pad(m)}:${pad(s)}${frac ? `.${String(frac).padStart(3, "0")}` : ""}`;
}
