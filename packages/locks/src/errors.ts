import { CosmosFeedError } from "@cosmos-feed/core/errors";

/** The lock is held by someone else (409, code "LockHeld"). */
export class LockHeldError extends CosmosFeedError {
  /** Always 409. */
  declare readonly statusCode: number;
  constructor(
    /** The lock's name. */
    readonly lockName: string,
    /** The current holder's name, when the lock document was read. */
    readonly holder: string | undefined,
    /** Until the holder's lock expires unless renewed (ms, ≥ 0). */
    readonly retryAfterMs: number,
  ) {
    super(
      `Lock '${lockName}' is held${holder ? ` by ${holder}` : ""}; retry after ${Math.ceil(retryAfterMs / 1000)} s.`,
      { statusCode: 409 },
    );
  }

  /** For a Retry-After header: whole seconds, rounded up, at least 1. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.retryAfterMs / 1000));
  }
}

/** Why a holder no longer holds its lock. */
export type LockLostReason = "expired" | "taken" | "deleted" | "released";

/** This holder no longer holds the lock (code "LockLost"; 503 as the HTTP guard answers it). */
export class LockLostError extends CosmosFeedError {
  constructor(
    /** The lock's name. */
    readonly lockName: string,
    /** How it was lost: its TTL ran out, another holder took it over, it was deleted, or it was released. */
    readonly reason: LockLostReason,
  ) {
    super(`Lock '${lockName}' was lost (${reason}).`, { statusCode: 503 });
  }
}

/** A lock name the service cannot store as a document id, or a reserved one (400, code "InvalidLockName"). */
export class InvalidLockNameError extends CosmosFeedError {
  constructor(
    /** The name that was refused. */
    readonly lockName: unknown,
    reason: string,
  ) {
    super(`Lock name '${String(lockName)}' is invalid: ${reason}`, { statusCode: 400 });
  }
}

/** The lock container cannot serve locks (no TTL, wrong partition key, missing). */
export class LockContainerError extends CosmosFeedError {
  constructor(message: string, statusCode: number) {
    super(message, { statusCode });
  }
}
