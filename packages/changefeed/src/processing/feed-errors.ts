import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { CosmosFeedError } from "@cosmos-feed/core/errors";

/** The monitored container (or its database) no longer exists: reading its feed can never succeed again. */
export class MonitoredContainerGoneError extends CosmosFeedError {
  constructor(
    /** The lease whose feed read got the 404. */
    readonly leaseToken: string,
    cause: unknown,
  ) {
    super(`The monitored container is gone (404) while reading the change feed of lease ${leaseToken}.`, {
      statusCode: 404,
      code: "MonitoredContainerGone",
      cause,
    });
  }
}

/**
 * What a failed change feed read means for the lease (.NET's FeedProcessorCore table):
 * - `container-gone` (404): close the lease and say so, no retry;
 * - `split` (410): the range is gone, replace the lease by its children (or merge successor);
 * - `bad-continuation` (400): the stored position is refused; retrying at once cannot help, so back off;
 * - `transient` (429, 503, 408, timeouts, network errors, anything else): back off and read again.
 */
export type FeedReadFailure = "container-gone" | "split" | "bad-continuation" | "transient";

export function classifyFeedReadError(e: unknown): FeedReadFailure {
  switch (statusOf(e)) {
    case 404:
      return "container-gone";
    case 410:
      return "split";
    case 400:
      return "bad-continuation";
    default:
      return "transient";
  }
}

/** A wait in ms, when `v` is one (a number or a numeric header string, 0 or more). */
function waitMs(v: unknown): number | undefined {
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * The wait a 429 asks for (`x-ms-retry-after-ms`), if any: the SDK surfaces it as `retryAfterInMs`, but its change
 * feed iterator (ChangeFeedForEpkRange) rethrows a failed read as a new error carrying only `code` and `headers`,
 * so the header is read too.
 */
export function retryAfterMs(e: unknown): number | undefined {
  const err = e as { retryAfterInMs?: unknown; headers?: Record<string, unknown> } | null;
  return waitMs(err?.retryAfterInMs) ?? waitMs(err?.headers?.["x-ms-retry-after-ms"]);
}

/**
 * Bounded exponential backoff with jitter for failed feed reads: the first wait is `initialMs`, each failure
 * in a row doubles it up to `maxMs`; a successful read resets it. Half of each wait is random so workers that
 * fail together (a throttled account) do not retry in lockstep.
 */
export class FeedReadBackoff {
  private failures = 0;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** The wait before the next read after one more failure (at least what the service asked for). */
  next(serviceAskedMs?: number): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    const jittered = base / 2 + this.random() * (base / 2);
    return Math.max(jittered, serviceAskedMs ?? 0);
  }

  reset(): void {
    this.failures = 0;
  }
}
