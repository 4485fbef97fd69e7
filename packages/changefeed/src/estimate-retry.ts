import type { Clock } from "@cosmos-feed/core/clock";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { RequestAbortedError } from "./bounded-request.js";
import { ChangeFeedDefaults, InvalidProcessorOptionsError } from "./options.js";
import { FeedReadBackoff, retryAfterMs } from "./processing/feed-errors.js";

/**
 * Statuses after which the same read can answer: timed out (408: ours after requestTimeout, or the service's),
 * throttled (429, after the SDK's own retries), a conflicting write in flight (449), unavailable (503).
 */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 429, 449, 503]);

/** The HTTP status of an SDK error (numeric `code`) or of one of ours (`statusCode`). */
function statusOfAny(e: unknown): number | undefined {
  return statusOf(e) ?? (e instanceof CosmosFeedError ? e.statusCode : undefined);
}

/** True when reading the lease's feed again can succeed: see RETRYABLE_STATUSES; the SDK's own TimeoutError too. */
export function retryableEstimateError(e: unknown): boolean {
  const status = statusOfAny(e);
  if (status !== undefined) return RETRYABLE_STATUSES.has(status);
  // The SDK's connectionPolicy.requestTimeout gives up with code "TimeoutError" (a string, no status).
  return (e as { code?: unknown } | null)?.code === "TimeoutError";
}

/**
 * One lease's feed read in a lag estimate timed out or was throttled on every attempt (1 + readRetries): the
 * estimate of this lease failed. `statusCode` is the last attempt's (408, 429, 449 or 503); `cause` its error.
 */
export class LeaseLagReadError extends CosmosFeedError {
  constructor(
    /** The lease whose feed could not be read. */
    readonly leaseToken: string,
    /** The lease document's id. */
    readonly leaseId: string,
    /** Attempts made, the first included. */
    readonly attempts: number,
    cause: unknown,
  ) {
    const status = statusOfAny(cause);
    super(
      `lag estimate: the feed read of lease ${leaseToken} (${leaseId}) failed ${attempts} time(s)` +
        `${status === undefined ? "" : `, last with status ${status}`}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { statusCode: status ?? 408, code: "LeaseLagReadFailed", cause },
    );
  }
}

/** The estimator's `readRetries` option, checked: a whole number of retries, 0 or more. */
export function readRetriesOf(retries: number | undefined): number {
  const n = retries ?? ChangeFeedDefaults.estimateReadRetries;
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidProcessorOptionsError(
      `readRetries must be a whole number of retries, 0 or more; got ${String(retries)}.`,
    );
  return n;
}

/**
 * Runs `read` (one lease's bounded feed read; a new reader each attempt, so a timed-out read's late answer moves
 * nothing) until it answers, retrying a retryable failure `retries` times after a backoff on `clock`
 * (feedReadRetryInitialDelay doubling up to feedReadRetryMaxDelay, at least a 429's retry-after). Another failure
 * is thrown as it is; the last retryable one as a {@link LeaseLagReadError}; `signal` ends a backoff with a
 * RequestAbortedError.
 */
export async function readWithRetries<T>(
  lease: { leaseToken: string; id: string },
  retries: number,
  clock: Clock,
  signal: AbortSignal | undefined,
  read: () => Promise<T>,
): Promise<T> {
  const backoff = new FeedReadBackoff(
    ChangeFeedDefaults.feedReadRetryInitialDelay,
    ChangeFeedDefaults.feedReadRetryMaxDelay,
  );
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (e) {
      if (!retryableEstimateError(e)) throw e;
      if (attempt > retries) throw new LeaseLagReadError(lease.leaseToken, lease.id, attempt, e);
      await clock.sleep(backoff.next(retryAfterMs(e)), signal);
      if (signal?.aborted) throw new RequestAbortedError("lag estimate: feed read");
    }
  }
}
