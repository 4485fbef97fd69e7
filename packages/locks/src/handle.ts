import type { Container, ItemDefinition } from "@azure/cosmos";
import type { Clock } from "@cosmos-feed/core/clock";
import { NotFoundError, PreconditionFailedError } from "@cosmos-feed/core/cosmos/errors";
import { deleteIfMatch, replaceIfMatch, type Stored } from "@cosmos-feed/core/cosmos/occ";
import { LockLostError, type LockLostReason } from "./errors.js";

/** The stored lock document. Partition key: /id (the lock name). */
export interface LockDocument extends ItemDefinition {
  /** The lock's name. */
  id: string;
  /** The holder's name (LockClientOptions.owner). */
  owner: string;
  /** Item TTL (s); the container must have TTL on (defaultTtl set, e.g. -1). */
  ttl: number;
  /** When this acquisition happened (ISO 8601, the holder's clock). */
  acquiredAt: string;
  /** The waiter ticket this acquisition served (queued acquisitions only): the next in line reads it. */
  ticket?: string;
}

/** When a lock document's TTL runs out (ms since epoch): its last write (`_ts`, s) plus its `ttl` (s). */
export function lockExpiresAtMs(ts: number, ttlSeconds: number): number {
  return (ts + ttlSeconds) * 1000;
}

/** What a handle needs from its client. */
export interface LockHandleContext {
  /** The lock container. */
  container: Container;
  /** The lock documents' TTL (s). */
  ttlSeconds: number;
  /** The holder stops acting this long before its lock could expire (ms). */
  safetyMarginMs: number;
  /** How often a held lock is renewed (ms). */
  renewIntervalMs: number;
  /** The clock deadlines and renewals run on. */
  clock: Clock;
}

/** What fenced writes need of a lock: its token, and a check that it is still held right now. */
export interface FencingLock {
  /** The lock's name. */
  readonly name: string;
  /** The acquisition's fencing token: strictly increasing per lock name. */
  readonly fencingToken: number;
  /** Throws LockLostError unless the holder's validity window is still open (on the local monotonic clock). */
  assertHeld(): void;
}

/** A held lock. Its `signal` fires before anyone else could acquire it; `release()` (or dispose) gives it up. */
export class LockHandle implements AsyncDisposable, FencingLock {
  private readonly controller = new AbortController();
  /** Aborting one cancels that pending wait (the clock only offers abortable sleeps). */
  private deadlineTimer: AbortController | undefined;
  private renewTimer: AbortController | undefined;
  private renewing: Promise<void> | undefined;
  private released = false;
  /** Monotonic time (clock.monotonicNow() ms) until which this holder may act: the validity window's end. */
  validUntil = 0;

  constructor(
    private readonly ctx: LockHandleContext,
    /** The lock's name (the lock document's id). */
    readonly name: string,
    /** Strictly increases with every acquisition of this lock name (the acquiring write's LSN). */
    readonly fencingToken: number,
    private doc: Stored<LockDocument>,
    sentAt: number,
    autoRenew: boolean,
  ) {
    this.extendDeadline(sentAt);
    if (autoRenew) this.scheduleRenew();
  }

  /** The holder's name. */
  get owner(): string {
    return this.doc.owner;
  }

  /** The lock document's etag as last written by this holder. */
  get etag(): string {
    return this.doc._etag;
  }

  /** Aborts (reason: LockLostError) when the lock lapses, is taken, or is released. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Throws LockLostError unless still held. Reads the clock rather than trusting the deadline timer: after a
   * process pause (GC, VM freeze, SIGSTOP) the timer has not run yet, but the window is already over.
   */
  assertHeld(): void {
    if (!this.signal.aborted && this.ctx.clock.monotonicNow() >= this.validUntil) this.lose("expired");
    if (this.signal.aborted) throw this.signal.reason;
  }

  private extendDeadline(sentAt: number): void {
    // The service's expiry is (_ts + ttl) with _ts ≥ the request's send time, floored to a second.
    this.validUntil = sentAt + this.ctx.ttlSeconds * 1000 - this.ctx.safetyMarginMs;
    this.deadlineTimer?.abort();
    this.deadlineTimer = this.after(Math.max(0, this.validUntil - this.ctx.clock.monotonicNow()), () =>
      this.lose("expired"),
    );
  }

  private scheduleRenew(): void {
    this.renewTimer = this.after(this.ctx.renewIntervalMs, () => {
      this.renewing = this.renew()
        .catch(() => {
          // Lost: the signal has fired. Transient errors: retried below until the deadline passes.
        })
        .finally(() => {
          this.renewing = undefined;
          if (!this.signal.aborted) this.scheduleRenew();
        });
    });
  }

  /** Runs `callback` after `ms` on the injected clock unless the returned controller aborts first. */
  private after(ms: number, callback: () => void): AbortController {
    const cancel = new AbortController();
    void this.ctx.clock.sleep(ms, cancel.signal).then(() => {
      if (!cancel.signal.aborted) callback();
    });
    return cancel;
  }

  private lose(reason: LockLostReason): void {
    this.deadlineTimer?.abort();
    this.renewTimer?.abort();
    if (!this.controller.signal.aborted) this.controller.abort(new LockLostError(this.name, reason));
  }

  /**
   * Replace with If-Match (never upsert): 404 or 412 means lost, and nothing is recreated. Past the deadline
   * (even if the deadline timer has not fired yet) it reports the loss and writes nothing.
   */
  async renew(): Promise<void> {
    this.assertHeld();
    const sentAt = this.ctx.clock.monotonicNow();
    try {
      const res = await replaceIfMatch(
        this.ctx.container,
        this.name,
        this.name,
        {
          id: this.name,
          owner: this.doc.owner,
          ttl: this.doc.ttl,
          acquiredAt: this.doc.acquiredAt,
          ...(this.doc.ticket === undefined ? {} : { ticket: this.doc.ticket }),
        },
        this.doc._etag,
      );
      if (this.signal.aborted) return; // the deadline passed while renewing: stay lost
      this.doc = res.resource;
      this.extendDeadline(sentAt);
    } catch (e) {
      if (e instanceof NotFoundError) this.lose("deleted");
      else if (e instanceof PreconditionFailedError) this.lose("taken");
      throw this.signal.aborted ? this.signal.reason : e;
    }
  }

  /** Delete with If-Match: a stale holder can never delete someone else's lock. Idempotent. */
  async release(): Promise<boolean> {
    if (this.released) return false;
    this.released = true;
    const wasValid = !this.signal.aborted;
    this.renewTimer?.abort();
    await this.renewing;
    this.lose("released");
    if (!wasValid) return false;
    try {
      await deleteIfMatch(this.ctx.container, this.name, this.name, this.doc._etag);
      return true;
    } catch (e) {
      if (e instanceof NotFoundError || e instanceof PreconditionFailedError) return false;
      throw e;
    }
  }

  /** Releases the lock (`await using`); as `release()`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}
