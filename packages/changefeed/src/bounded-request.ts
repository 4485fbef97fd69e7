import type { Clock } from "@cosmos-feed/core/clock";
import { CosmosFeedError } from "@cosmos-feed/core/errors";

/** A processor request (a feed read, a lease write) got no answer within requestTimeout: retryable (408). */
export class RequestTimeoutError extends CosmosFeedError {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
  ) {
    super(`${what} got no answer within requestTimeout (${timeoutMs} ms) and was given up.`, {
      statusCode: 408,
      code: "RequestTimeout",
    });
  }
}

/** The request was given up because its caller's signal fired (the lease was lost, the processor stops). */
export class RequestAbortedError extends CosmosFeedError {
  constructor(readonly what: string) {
    super(`${what} was abandoned: the lease closed or the processor stopped.`, {
      statusCode: 499,
      code: "RequestAborted",
    });
  }
}

/**
 * True when `e` is a request given up because `signal` fired (the processor stops, the lease closed): the caller asked
 * for it, so it is not reported as a failure.
 */
export function abandonedBy(signal: AbortSignal | undefined, e: unknown): boolean {
  return e instanceof RequestAbortedError && signal?.aborted === true;
}

/**
 * Runs one request raced against `timeoutMs` on `clock` and against `signal`, as .NET's processor races each
 * read against its RequestTimeout: a request that never answers cannot hold its caller (a partition worker, a
 * lease write) for good. On timeout or abort the request's own signal fires too (pass it to the SDK where the
 * call takes one); its late answer, if any, is dropped. Rejects with {@link RequestTimeoutError} (retryable) or
 * {@link RequestAbortedError}.
 */
export async function boundedRequest<T>(
  clock: Clock,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  what: string,
  request: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (signal?.aborted) throw new RequestAbortedError(what);
  const settled = new AbortController();
  const requestSignal = signal ? AbortSignal.any([signal, settled.signal]) : settled.signal;
  const limit = new Promise<never>((_, reject) => {
    void clock.sleep(timeoutMs, requestSignal).then(() => {
      // The request answered first: the timer was only cleared.
      if (settled.signal.aborted) return;
      reject(signal?.aborted ? new RequestAbortedError(what) : new RequestTimeoutError(what, timeoutMs));
    });
  });
  try {
    return await Promise.race([request(requestSignal), limit]);
  } catch (e) {
    // The caller gave up: whatever the request itself answered to its fired signal (the SDK's AbortError comes
    // before the timer's rejection), the caller learns that it was abandoned.
    if (signal?.aborted && !(e instanceof RequestAbortedError)) throw new RequestAbortedError(what);
    throw e;
  } finally {
    settled.abort(SETTLED);
  }
}

/**
 * The reason a bounded request's own signal fires once the race is over: one shared value, because abort() without
 * a reason builds a DOMException (with its stack) per request, 5 % of the CPU of a fleet simulation's profile.
 */
const SETTLED = new DOMException("The bounded request is over.", "AbortError");
