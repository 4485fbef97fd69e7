import { type LockClient, type LockHandle, LockHeldError, LockLostError } from "./lock.js";

/** A transport-neutral HTTP response (runtime/ adapts it to the Functions host or the dev host). */
export interface GuardedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface LockGuardOptions {
  /** How long a request waits for a held lock before answering contention (ms). Default 0. */
  waitMs?: number;
  /**
   * 409 Conflict (default) or 503 Service Unavailable with code LockContention: Azure SDK clients only retry
   * 408/429/5xx, so callers through them need 503 (ARO-HCP learned this the hard way).
   */
  contentionStatus?: 409 | 503;
  /** The request's own cancellation (client went away). */
  signal?: AbortSignal;
}

/**
 * Runs a mutating request under the lock `name`. Contention → 409/503 + Retry-After (seconds, rounded up).
 * The handler gets an AbortSignal that fires if the lock is lost mid-request; it must write nothing more, and
 * the request then answers 503 LockLost.
 */
export async function guardWithLock(
  locks: LockClient,
  name: string,
  handler: (signal: AbortSignal, lock: LockHandle) => Promise<GuardedResponse>,
  options: LockGuardOptions = {},
): Promise<GuardedResponse> {
  let lock: LockHandle;
  try {
    lock = await locks.acquire(name, { waitMs: options.waitMs ?? 0, signal: options.signal });
  } catch (e) {
    if (!(e instanceof LockHeldError)) throw e;
    const status = options.contentionStatus ?? 409;
    return {
      status,
      headers: { "Retry-After": String(e.retryAfterSeconds) },
      body: {
        error: {
          code: status === 503 ? "LockContention" : "Conflict",
          message: `Another request is changing '${name}'; retry after ${e.retryAfterSeconds} s.`,
        },
      },
    };
  }
  const signal = options.signal ? AbortSignal.any([lock.signal, options.signal]) : lock.signal;
  try {
    const response = await handler(signal, lock);
    if (
      lock.signal.aborted &&
      lock.signal.reason instanceof LockLostError &&
      lock.signal.reason.reason !== "released"
    ) {
      return lockLost(name);
    }
    return response;
  } catch (e) {
    if (lock.signal.aborted) return lockLost(name);
    throw e;
  } finally {
    await lock.release();
  }
}

function lockLost(name: string): GuardedResponse {
  return {
    status: 503,
    headers: { "Retry-After": "1" },
    body: {
      error: {
        code: "LockLost",
        message: `The lock on '${name}' was lost during the request; nothing more was written. Retry.`,
      },
    },
  };
}
