import { randomUUID } from "node:crypto";
import { createClientLogger } from "@azure/logger";
import type { Clock } from "@cosmos-feed/core/clock";
import { AlreadyExistsError, NotFoundError, PreconditionFailedError } from "@cosmos-feed/core/cosmos/errors";
import { createWithResult, deleteIfMatch, replaceIfMatch, type Stored } from "@cosmos-feed/core/cosmos/occ";
import { defaultOccRetryPolicy, type OccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";
import { sessionTokenLsn } from "@cosmos-feed/core/cosmos/session";
import { checkLockContainer } from "./container-check.js";
import { LockContainerError, LockHeldError } from "./errors.js";
import { type LockDocument, LockHandle, type LockHandleContext } from "./handle.js";
import { validateLockName } from "./names.js";
import { ObservedLockExpiry } from "./observed-expiry.js";
import {
  type AcquireOptions,
  checkDuration,
  type LockClientOptions,
  LockDefaults,
  systemLockClock,
  type TryAcquireOptions,
} from "./options.js";
import { LockQueue, type LockQueueDocument, type LockTicket } from "./queue.js";

const logger = createClientLogger("cosmos-feed-locks");

/** Attempts of tryAcquire's create → 409 → read → 404 (the holder released in between) loop. */
const VANISHED_HOLDER_ATTEMPTS = 3;

class HolderVanished extends Error {}

/**
 * TTL locks in a Cosmos container (the Cloud Distributed Lock pattern, corrected): acquire = create,
 * renew = Replace with If-Match, release = Delete with If-Match, takeover of an expired-but-unpurged lock by a
 * conditional replace, and a fencing token per acquisition. Waiters (`waitMs > 0`) queue in arrival order.
 */
export class LockClient implements LockHandleContext {
  /** The lock container. */
  readonly container: LockClientOptions["container"];
  /** This holder's name, stored in every lock it acquires. */
  readonly owner: string;
  /** The lock documents' TTL (s). */
  readonly ttlSeconds: number;
  /** A holder stops acting this long before its lock could expire (ms). */
  readonly safetyMarginMs: number;
  /** Allowance for the difference between this clock and the service's (ms). */
  readonly clockSkewAllowanceMs: number;
  /** How often a held lock is renewed (ms). */
  readonly renewIntervalMs: number;
  /** A waiter's ticket lifetime (ms). */
  readonly ticketLifetimeMs: number;
  /** Wall time for `_ts` and tickets, monotonic time for deadlines and waits. */
  readonly clock: Clock;
  private readonly random: () => number;
  private readonly retryPolicy: OccRetryPolicy;
  private readonly queue: LockQueue;
  private readonly expiry: ObservedLockExpiry;
  private containerChecked: Promise<void> | undefined;

  constructor(options: LockClientOptions) {
    this.container = options.container;
    this.owner = options.owner ?? randomUUID();
    this.ttlSeconds = options.ttlSeconds ?? LockDefaults.ttlSeconds;
    if (!Number.isInteger(this.ttlSeconds) || this.ttlSeconds < 1) {
      throw new RangeError(
        `ttlSeconds must be a positive whole number of seconds; got ${String(this.ttlSeconds)}.`,
      );
    }
    this.safetyMarginMs = checkDuration(
      "safetyMarginMs",
      options.safetyMarginMs ?? LockDefaults.safetyMarginMs,
      {
        min: 1000,
      },
    );
    this.clockSkewAllowanceMs = checkDuration(
      "clockSkewAllowanceMs",
      options.clockSkewAllowanceMs ?? LockDefaults.clockSkewAllowanceMs,
    );
    this.renewIntervalMs = checkDuration(
      "renewIntervalMs",
      options.renewIntervalMs ?? Math.floor((this.ttlSeconds * 1000) / 3),
    );
    this.ticketLifetimeMs = checkDuration(
      "ticketLifetimeMs",
      options.ticketLifetimeMs ?? LockDefaults.ticketLifetimeMs,
    );
    if (this.ttlSeconds * 1000 - this.safetyMarginMs <= this.renewIntervalMs) {
      throw new RangeError(
        `A ${this.ttlSeconds} s lock leaves no time to renew: ttl − safetyMargin (${this.ttlSeconds * 1000 - this.safetyMarginMs} ms) must exceed the renew interval (${this.renewIntervalMs} ms).`,
      );
    }
    this.clock = options.clock ?? systemLockClock;
    this.random = options.random ?? Math.random;
    this.retryPolicy = options.retryPolicy ?? defaultOccRetryPolicy;
    if (options.checkContainerTtl === false) this.containerChecked = Promise.resolve();
    this.expiry = new ObservedLockExpiry(this.clock, this.clockSkewAllowanceMs);
    this.queue = new LockQueue({
      container: this.container,
      retryPolicy: this.retryPolicy,
      ticketLifetimeMs: this.ticketLifetimeMs,
      clockSkewAllowanceMs: this.clockSkewAllowanceMs,
      wallNow: () => this.clock.now(),
    });
  }

  /**
   * Checks the lock container once: partition key /id and TTL on (without TTL a crashed holder's lock and a
   * dead waiter's queue are never purged). Called by the first acquisition; call it at start to fail early.
   */
  verifyContainer(): Promise<void> {
    this.containerChecked ??= checkLockContainer(this.container).catch((e: unknown) => {
      this.containerChecked = undefined; // a transient failure is checked again next time
      throw e;
    });
    return this.containerChecked;
  }

  /** One attempt: the lock, or LockHeldError with the time until the holder's lock expires. Never queues. */
  async tryAcquire(name: string, options: TryAcquireOptions = {}): Promise<LockHandle> {
    validateLockName(name);
    await this.verifyContainer();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.tryAcquireOnce(name, options);
      } catch (e) {
        // The holder released between our 409 and our read: try again, a bounded number of times.
        if (!(e instanceof HolderVanished)) throw e;
        if (attempt >= VANISHED_HOLDER_ATTEMPTS) throw new LockHeldError(name, undefined, 0);
      }
    }
  }

  private async tryAcquireOnce(name: string, options: TryAcquireOptions): Promise<LockHandle> {
    const body: LockDocument = {
      id: name,
      owner: this.owner,
      ttl: this.ttlSeconds,
      acquiredAt: new Date(this.clock.now()).toISOString(),
      ...(options.ticketId === undefined ? {} : { ticket: options.ticketId }),
    };
    const sentAt = this.clock.monotonicNow();
    try {
      const res = await createWithResult(this.container, body);
      this.expiry.forget(name);
      return await this.handle(name, res.resource, res.sessionToken, sentAt, options);
    } catch (e) {
      if (!(e instanceof AlreadyExistsError)) throw e;
    }
    // Held, or expired but not yet purged: read it to decide.
    const held = await this.readLock(name);
    if (!held) throw new HolderVanished();
    // Expired only once this host has seen this version unchanged for its TTL (never by comparing `_ts`).
    const remaining = this.expiry.remainingMs(name, held._etag, held.ttl ?? this.ttlSeconds);
    if (remaining > 0) throw new LockHeldError(name, held.owner, remaining);
    const takeoverSentAt = this.clock.monotonicNow();
    try {
      const res = await replaceIfMatch(this.container, name, name, body, held._etag);
      this.expiry.forget(name);
      return await this.handle(name, res.resource, res.sessionToken, takeoverSentAt, options);
    } catch (e) {
      if (e instanceof PreconditionFailedError || e instanceof NotFoundError)
        throw new LockHeldError(name, undefined, 0);
      throw e;
    }
  }

  /** Wraps a written lock document; if that fails, deletes the document so no orphan lock blocks others. */
  private async handle(
    name: string,
    doc: Stored<LockDocument>,
    sessionToken: string | undefined,
    sentAt: number,
    options: Omit<AcquireOptions, "waitMs">,
  ): Promise<LockHandle> {
    try {
      const token = sessionTokenLsn(sessionToken);
      if (token === undefined) {
        throw new LockContainerError(
          "The lock write returned no session token, so no fencing token can be derived.",
          500,
        );
      }
      return new LockHandle(this, name, token, doc, sentAt, options.autoRenew ?? true);
    } catch (e) {
      await deleteIfMatch(this.container, name, name, doc._etag).catch((cleanup: unknown) => {
        logger.warning(`Could not delete lock '${name}' after a failed acquisition: ${String(cleanup)}`);
      });
      throw e;
    }
  }

  /**
   * Acquires, waiting up to `waitMs`. `waitMs` 0 is one attempt (no queue: the HTTP fast path). Otherwise
   * the caller joins the lock's waiter queue unless the lock is free and nobody waits, and waiters are
   * served in arrival order: only the head of the queue tries the lock. LockHeldError when still held.
   */
  async acquire(name: string, options: AcquireOptions = {}): Promise<LockHandle> {
    const waitMs = checkDuration("waitMs", options.waitMs ?? 0, { allowZero: true });
    validateLockName(name);
    options.signal?.throwIfAborted();
    if (waitMs === 0) return this.tryAcquire(name, options);
    await this.verifyContainer();
    const giveUpAt = this.clock.monotonicNow() + waitMs;
    let lastHeld: LockHeldError | undefined;
    let queue: LockQueueDocument | undefined = await this.queue.read(name);
    if (this.queue.live(queue).length === 0) {
      try {
        return await this.tryAcquire(name, options);
      } catch (e) {
        if (!(e instanceof LockHeldError)) throw e;
        lastHeld = e;
      }
    }
    let ticket: LockTicket = this.queue.newTicket(randomUUID(), this.owner);
    let joined = false;
    let acquired: LockHandle | undefined;
    try {
      for (;;) {
        options.signal?.throwIfAborted();
        const live = this.queue.live(queue);
        let position = live.findIndex((t) => t.id === ticket.id);
        const needsRefresh = ticket.expiresAt - this.clock.now() < this.ticketLifetimeMs / 2;
        if (position < 0 || needsRefresh) {
          // Not (or no longer) in the queue, or our ticket is getting old: (re)join. A join that keeps losing
          // races is tried again on the next round.
          const rejoin = position < 0;
          ticket = this.queue.newTicket(ticket.id, this.owner);
          try {
            queue = rejoin
              ? await this.queue.join(name, ticket, options.signal)
              : await this.queue.refresh(name, ticket, options.signal);
            joined = true;
            position = this.queue.live(queue).findIndex((t) => t.id === ticket.id);
          } catch (e) {
            const lostRaces =
              e instanceof PreconditionFailedError ||
              e instanceof AlreadyExistsError ||
              e instanceof NotFoundError;
            if (!lostRaces) throw e;
          }
        }
        if (position === 0 || position === 1) {
          // Look before trying: a read is cheaper than a create that answers 409, so the head can look often.
          const holder = await this.readLock(name);
          // The head already holds the lock and is leaving the queue: the next in line is head now, without
          // waiting for that leave to be written.
          if (
            position === 1 &&
            holder?.ticket !== undefined &&
            holder.ticket === this.queue.live(queue)[0]?.id
          ) {
            position = 0;
          }
          if (position === 0) {
            const remaining = holder
              ? this.expiry.remainingMs(name, holder._etag, holder.ttl ?? this.ttlSeconds)
              : 0;
            if (holder && remaining > 0) {
              lastHeld = new LockHeldError(name, holder.owner, remaining);
            } else {
              try {
                acquired = await this.tryAcquire(name, { ...options, ticketId: ticket.id });
                return acquired;
              } catch (e) {
                if (!(e instanceof LockHeldError)) throw e;
                lastHeld = e;
              }
            }
          }
        }
        const left = giveUpAt - this.clock.monotonicNow();
        if (left <= 0) throw lastHeld ?? new LockHeldError(name, undefined, 0);
        // The head tries the lock often; the next in line looks at the queue as often, so that it notices at
        // once when the head got the lock and left; those further back look less often.
        const ceiling =
          position <= 1
            ? LockDefaults.headPollMs
            : Math.min(LockDefaults.maxRetryDelayMs, LockDefaults.queuePollMs * (position - 1));
        await this.sleep(Math.min(left, ceiling * (0.5 + this.random())), options.signal);
        queue = await this.queue.read(name);
      }
    } finally {
      if (joined) {
        // Leave the queue so the next waiter becomes head; on failure the ticket lapses by itself. With the
        // lock in hand this runs alongside the caller's critical section (the next waiter is promoted
        // meanwhile and is ready when the lock is released); a waiter that gave up leaves before returning.
        const leaving = this.queue.leave(name, ticket.id).catch((e: unknown) => {
          logger.warning(`Could not leave the queue of lock '${name}': ${String(e)}`);
        });
        if (!acquired) await leaving;
      }
    }
  }

  /** The lock document as it is now (one point read), or undefined when free. */
  private async readLock(name: string): Promise<Stored<LockDocument> | undefined> {
    const res = await this.container.item(name, name).read<LockDocument>();
    if (res.statusCode === 404 || !res.resource) {
      this.expiry.forget(name);
      return undefined;
    }
    return res.resource as Stored<LockDocument>;
  }

  /** Runs `fn` holding the lock; `fn` gets the lock's signal and must stop writing when it aborts. */
  async withLock<R>(
    name: string,
    fn: (signal: AbortSignal, lock: LockHandle) => Promise<R>,
    options: AcquireOptions = {},
  ): Promise<R> {
    const lock = await this.acquire(name, options);
    try {
      return await fn(lock.signal, lock);
    } finally {
      await lock.release();
    }
  }

  /** Sleeps on the injected clock, resolving early when `signal` aborts. */
  private sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.clock.sleep(ms, signal);
  }
}
