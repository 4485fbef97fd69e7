import { randomUUID } from "node:crypto";
import type { Container, ItemDefinition } from "@azure/cosmos";
import { AlreadyExistsError, NotFoundError, PreconditionFailedError } from "../cosmos/errors.js";
import { createWithResult, deleteIfMatch, replaceIfMatch, type Stored } from "../cosmos/occ.js";
import { sessionTokenLsn } from "../cosmos/session.js";

/**
 * Timing of the TTL lock. Seconds where Cosmos counts seconds (ttl), milliseconds elsewhere.
 * Named once here; settings.ts maps them to environment variables.
 */
export const LockDefaults = {
  /** Lock document TTL (s): how long a crashed holder blocks others. */
  ttlSeconds: 10,
  /** Subtracted from the TTL for the holder's own deadline (ms): `_ts` is whole seconds (1000) plus safety (500). */
  safetyMarginMs: 1_500,
  /** Takeover of an expired-but-unpurged lock waits this much past `_ts + ttl` on the local clock (ms). */
  clockSkewAllowanceMs: 1_000,
  /** First wait between attempts while waiting for a held lock (ms); doubles per attempt. */
  minRetryDelayMs: 50,
  /** Longest wait between attempts while waiting for a held lock (ms). */
  maxRetryDelayMs: 1_000,
} as const;

/** The stored lock document. Partition key: /id (the lock name). */
export interface LockDocument extends ItemDefinition {
  id: string;
  owner: string;
  /** Item TTL (s); the container must have TTL on (defaultTtl set, e.g. -1). */
  ttl: number;
  acquiredAt: string;
}

/** The lock is held by someone else. */
export class LockHeldError extends Error {
  readonly statusCode = 409;
  constructor(
    readonly lockName: string,
    readonly holder: string | undefined,
    /** Until the holder's lock expires unless renewed (ms, ≥ 0). */
    readonly retryAfterMs: number,
  ) {
    super(
      `Lock '${lockName}' is held${holder ? ` by ${holder}` : ""}; retry after ${Math.ceil(retryAfterMs / 1000)} s.`,
    );
    this.name = "LockHeldError";
  }

  /** For a Retry-After header: whole seconds, rounded up, at least 1. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.retryAfterMs / 1000));
  }
}

/** This holder no longer holds the lock (it lapsed, was taken over or deleted). */
export class LockLostError extends Error {
  constructor(
    readonly lockName: string,
    readonly reason: "expired" | "taken" | "deleted" | "released",
  ) {
    super(`Lock '${lockName}' was lost (${reason}).`);
    this.name = "LockLostError";
  }
}

export interface LockClientOptions {
  /** The lock container: partition key /id, TTL on. */
  container: Container;
  /** This holder's name (default: a random UUID). */
  owner?: string;
  ttlSeconds?: number;
  safetyMarginMs?: number;
  clockSkewAllowanceMs?: number;
  /** How often a held lock is renewed (ms). Default: a third of the TTL. */
  renewIntervalMs?: number;
}

export interface AcquireOptions {
  /** Wait up to this long for a held lock (ms); 0 = try once. */
  waitMs?: number;
  signal?: AbortSignal;
  /** Renew automatically until released (default true). */
  autoRenew?: boolean;
}

const monotonicNow = (): number => performance.now();

/** A held lock. Its `signal` fires before anyone else could acquire it; `release()` (or dispose) gives it up. */
export class LockHandle implements AsyncDisposable {
  private readonly controller = new AbortController();
  private deadlineTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private released = false;

  constructor(
    private readonly client: LockClient,
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

  get owner(): string {
    return this.doc.owner;
  }

  get etag(): string {
    return this.doc._etag;
  }

  /** Aborts (reason: LockLostError) when the lock lapses, is taken, or is released. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Monotonic time (performance.now() ms) until which this holder may act: the validity window's end. */
  validUntil = 0;

  private extendDeadline(sentAt: number): void {
    // The service's expiry is (_ts + ttl) with _ts ≥ the request's send time, floored to a second.
    this.validUntil = sentAt + this.client.ttlSeconds * 1000 - this.client.safetyMarginMs;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(
      () => this.lose("expired"),
      Math.max(0, this.validUntil - monotonicNow()),
    );
    this.deadlineTimer.unref?.();
  }

  private scheduleRenew(): void {
    this.renewTimer = setTimeout(() => {
      this.renewing = this.renew()
        .catch(() => {
          // Lost: the signal has fired. Transient errors: retried below until the deadline passes.
        })
        .finally(() => {
          this.renewing = undefined;
          if (!this.signal.aborted) this.scheduleRenew();
        });
    }, this.client.renewIntervalMs);
    this.renewTimer.unref?.();
  }

  private lose(reason: LockLostError["reason"]): void {
    clearTimeout(this.deadlineTimer);
    clearTimeout(this.renewTimer);
    if (!this.controller.signal.aborted) this.controller.abort(new LockLostError(this.name, reason));
  }

  /** Replace with If-Match (never upsert): 404 or 412 means lost, and nothing is recreated. */
  async renew(): Promise<void> {
    if (this.signal.aborted) throw this.signal.reason;
    const sentAt = monotonicNow();
    try {
      const res = await replaceIfMatch(
        this.client.container,
        this.name,
        this.name,
        { id: this.name, owner: this.doc.owner, ttl: this.doc.ttl, acquiredAt: this.doc.acquiredAt },
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
    clearTimeout(this.renewTimer);
    await this.renewing;
    this.lose("released");
    if (!wasValid) return false;
    try {
      await deleteIfMatch(this.client.container, this.name, this.name, this.doc._etag);
      return true;
    } catch (e) {
      if (e instanceof NotFoundError || e instanceof PreconditionFailedError) return false;
      throw e;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}

/** Sleeps, resolving early when `signal` aborts; never leaves a listener behind on the caller's signal. */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/**
 * TTL locks in a Cosmos container (the Cloud Distributed Lock pattern, corrected): acquire = create,
 * renew = Replace with If-Match, release = Delete with If-Match, takeover of an expired-but-unpurged lock by a
 * conditional replace, and a fencing token per acquisition.
 */
export class LockClient {
  readonly container: Container;
  readonly owner: string;
  readonly ttlSeconds: number;
  readonly safetyMarginMs: number;
  readonly clockSkewAllowanceMs: number;
  readonly renewIntervalMs: number;

  constructor(options: LockClientOptions) {
    this.container = options.container;
    this.owner = options.owner ?? randomUUID();
    this.ttlSeconds = options.ttlSeconds ?? LockDefaults.ttlSeconds;
    this.safetyMarginMs = options.safetyMarginMs ?? LockDefaults.safetyMarginMs;
    this.clockSkewAllowanceMs = options.clockSkewAllowanceMs ?? LockDefaults.clockSkewAllowanceMs;
    this.renewIntervalMs = options.renewIntervalMs ?? Math.floor((this.ttlSeconds * 1000) / 3);
    if (!Number.isInteger(this.ttlSeconds) || this.ttlSeconds < 1) {
      throw new RangeError(`ttlSeconds must be a positive whole number of seconds; got ${this.ttlSeconds}.`);
    }
    if (this.ttlSeconds * 1000 - this.safetyMarginMs <= this.renewIntervalMs) {
      throw new RangeError(
        `A ${this.ttlSeconds} s lock leaves no time to renew: ttl − safetyMargin (${this.ttlSeconds * 1000 - this.safetyMarginMs} ms) must exceed the renew interval (${this.renewIntervalMs} ms).`,
      );
    }
  }

  /** One attempt: the lock, or LockHeldError with the time until the holder's lock expires. */
  async tryAcquire(name: string, options: Omit<AcquireOptions, "waitMs"> = {}): Promise<LockHandle> {
    validateLockName(name);
    const body: LockDocument = {
      id: name,
      owner: this.owner,
      ttl: this.ttlSeconds,
      acquiredAt: new Date().toISOString(),
    };
    const sentAt = monotonicNow();
    try {
      const res = await createWithResult(this.container, body);
      return this.handle(name, res.resource, res.sessionToken, sentAt, options);
    } catch (e) {
      if (!(e instanceof AlreadyExistsError)) throw e;
    }
    // Held, or expired but not yet purged: read it to decide.
    const current = await this.container.item(name, name).read<LockDocument>();
    if (current.statusCode === 404 || !current.resource) return this.tryAcquire(name, options);
    const held = current.resource as Stored<LockDocument>;
    const expiresAtMs = (held._ts + (held.ttl ?? this.ttlSeconds)) * 1000;
    const now = Date.now();
    if (now < expiresAtMs + this.clockSkewAllowanceMs) {
      throw new LockHeldError(name, held.owner, expiresAtMs - now);
    }
    const takeoverSentAt = monotonicNow();
    try {
      const res = await replaceIfMatch(this.container, name, name, body, held._etag);
      return this.handle(name, res.resource, res.sessionToken, takeoverSentAt, options);
    } catch (e) {
      if (e instanceof PreconditionFailedError || e instanceof NotFoundError)
        throw new LockHeldError(name, undefined, 0);
      throw e;
    }
  }

  private handle(
    name: string,
    doc: Stored<LockDocument>,
    sessionToken: string | undefined,
    sentAt: number,
    options: Omit<AcquireOptions, "waitMs">,
  ): LockHandle {
    const token = sessionTokenLsn(sessionToken);
    if (token === undefined) {
      throw new Error("The lock write returned no session token, so no fencing token can be derived.");
    }
    return new LockHandle(this, name, token, doc, sentAt, options.autoRenew ?? true);
  }

  /** Acquires, waiting up to `waitMs` (jittered retries); LockHeldError when still held. */
  async acquire(name: string, options: AcquireOptions = {}): Promise<LockHandle> {
    const waitMs = options.waitMs ?? 0;
    const giveUpAt = monotonicNow() + waitMs;
    let backoff: number = LockDefaults.minRetryDelayMs;
    for (;;) {
      options.signal?.throwIfAborted();
      try {
        return await this.tryAcquire(name, options);
      } catch (e) {
        if (!(e instanceof LockHeldError)) throw e;
        const left = giveUpAt - monotonicNow();
        if (left <= 0) throw e;
        // Exponential backoff with jitter, never past the holder's expiry or our deadline: a holder that
        // releases early is noticed soon, and waiters do not stampede.
        const cap = Math.max(
          LockDefaults.minRetryDelayMs,
          Math.min(e.retryAfterMs, left, LockDefaults.maxRetryDelayMs),
        );
        const delay = Math.min(backoff, cap);
        backoff = Math.min(backoff * 2, LockDefaults.maxRetryDelayMs);
        await sleep(Math.min(left, delay / 2 + Math.random() * (delay / 2)), options.signal);
      }
    }
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
}

/** Lock names become document ids: the service's id rules apply. */
export function validateLockName(name: string): void {
  if (
    typeof name !== "string" ||
    name.length === 0 ||
    name.length > 255 ||
    /[/\\?#]/.test(name) ||
    name.endsWith(" ")
  ) {
    throw new RangeError(
      `Lock name '${String(name)}' is invalid: 1–255 characters, no '/', '\\', '?', '#', no trailing space.`,
    );
  }
}
