import { createClientLogger } from "@azure/logger";
import { InvalidLockNameError, LockHeldError, LockLostError } from "./errors.js";
import type { LockHandle } from "./handle.js";
import type { LockClient } from "./lock.js";
import { validateLockName } from "./names.js";

const logger = createClientLogger("cosmos-feed-locks");

/** A transport-neutral HTTP response (runtime/ adapts it to the Functions host or the dev host). */
export interface GuardedResponse {
  /** The HTTP status. */
  status: number;
  /** Response headers (`Retry-After` on a 409 or 503). */
  headers?: Record<string, string>;
  /** The response body. */
  body?: unknown;
  /**
   * The handler committed its work in one atomic, conditional write after its last look at the signal: its answer
   * stands even when the lock was lost after that write (answering LockLost would deny a write that happened).
   */
  committed?: boolean;
}

/** Options of `guardWithLock`: how long to wait for the lock and how to name it. */
export interface LockGuardOptions {
  /** How long a request waits for a held lock before answering contention (ms). Default 0. */
  waitMs?: number;
  /**
   * 409 Conflict (default) or 503 Service Unavailable with code LockContention: Azure SDK clients only retry
   * 408/429/5xx, so callers through them need 503 (ARO-HCP learned this the hard way). Nothing else.
   */
  contentionStatus?: 409 | 503;
  /** The request's own cancellation (client went away). */
  signal?: AbortSignal;
}

/**
 * Runs a mutating request under the lock `name`. Contention → 409/503 + Retry-After (seconds, rounded up).
 * An invalid lock name (it usually comes from the URL) → 400 InvalidLockName. The handler gets an AbortSignal
 * that fires if the lock is lost mid-request; it must write nothing more, and the request then answers 503
 * LockLost — unless the handler's response says `committed` (its one atomic write happened before the loss). A release that fails after the handler finished is logged, and the handler's response stands:
 * the work is committed, and the lock lapses by its TTL.
 */
export async function guardWithLock(
  locks: LockClient,
  name: string,
  handler: (signal: AbortSignal, lock: LockHandle) => Promise<GuardedResponse>,
  options: LockGuardOptions = {},
): Promise<GuardedResponse> {
  const status = options.contentionStatus ?? 409;
  if (status !== 409 && status !== 503) {
    throw new RangeError(`contentionStatus must be 409 or 503; got ${String(status)}.`);
  }
  try {
    validateLockName(name);
  } catch (e) {
    if (!(e instanceof InvalidLockNameError)) throw e;
    return { status: 400, body: { error: { code: e.code, message: e.message } } };
  }
  let lock: LockHandle;
  try {
    lock = await locks.acquire(name, { waitMs: options.waitMs ?? 0, signal: options.signal });
  } catch (e) {
    if (!(e instanceof LockHeldError)) throw e;
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
  let response: GuardedResponse;
  try {
    response = await handler(signal, lock);
    if (
      !response.committed &&
      lock.signal.aborted &&
      lock.signal.reason instanceof LockLostError &&
      lock.signal.reason.reason !== "released"
    ) {
      response = lockLost(name);
    }
  } catch (e) {
    await releaseQuietly(lock);
    if (lock.signal.reason instanceof LockLostError && lock.signal.reason.reason !== "released") {
      return lockLost(name);
    }
    throw e;
  }
  await releaseQuietly(lock);
  return response;
}

async function releaseQuietly(lock: LockHandle): Promise<void> {
  try {
    await lock.release();
  } catch (e) {
    logger.warning(
      `Releasing lock '${lock.name}' failed after the request finished; it lapses by its TTL: ${String(e)}`,
    );
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
