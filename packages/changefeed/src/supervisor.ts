import type { Container } from "@azure/cosmos";
import type { Clock } from "@cosmos-feed/core/clock";
import { boundedRequest } from "./bounded-request.js";
import type { Lease } from "./leases/lease.js";
import { checkpointAs, renewAs } from "./leases/mutations.js";
import { LeaseLostError, type LeaseStore } from "./leases/store.js";
import type { ResolvedOptions } from "./options.js";
import type { MonitoredContainerGoneError } from "./processing/feed-errors.js";
import type { StartPosition } from "./processing/feed-reader.js";
import type { FeedPollWakeup } from "./processing/wakeup.js";
import {
  type ChangeFeedHandler,
  type FeedReader,
  PartitionWorker,
  type WorkerEvents,
} from "./processing/worker.js";
import { LeaseRenewer } from "./renewer.js";

/**
 * Why this host stopped processing a lease. `released`: given up on stop; `stopped`: the processor was torn
 * down without releasing (abandon); `expired`: the local deadline passed without a successful write;
 * `split`/`merged`: replaced by other leases; `handler-failure`: the worker failed (e.g. a dead-letter write);
 * `container-gone`: the monitored container no longer exists; the rest are {@link LeaseLostError} reasons.
 */
export type LeaseCloseReason =
  | "released"
  | "stopped"
  | "stolen"
  | "gone"
  | "conflict"
  | "retries-exhausted"
  | "expired"
  | "split"
  | "handler-failure"
  | "container-gone";

export interface LeaseClose {
  reason: LeaseCloseReason;
  error?: unknown;
}

export interface LeaseSupervisorOptions<T> {
  lease: Lease;
  /** Monotonic time the write that made this host the owner was sent (the deadline counts from it). */
  acquireSentAt: number;
  me: string;
  /** Only its conditional update is used (tests pass a fake that injects write failures). */
  store: Pick<LeaseStore, "update" | "prefix">;
  monitored: Container;
  handler: ChangeFeedHandler<T>;
  options: ResolvedOptions;
  startPosition: StartPosition;
  clock: Clock;
  workerEvents: WorkerEvents;
  /** Called with every copy this host wrote (keeps the lease view current). */
  written: (lease: Lease) => void;
  /** A renewal failed for a reason other than loss (it is retried until the deadline). */
  renewFailed: (leaseToken: string, error: unknown) => void;
  /** Replaces the SDK-backed feed reader (unit tests). */
  createReader?: () => FeedReader<T>;
  wakeup?: FeedPollWakeup;
}

/**
 * One owned lease: its feed worker and its renewer, linked so that either one's end stops the other, and the
 * first reason recorded is the lease's close reason. The only path for this lease's writes (queued, so a
 * renewal and a checkpoint never 412 each other), and the record of when one last succeeded.
 */
export class LeaseSupervisor<T> {
  lease: Lease;
  /** The owner the lease document is expected to carry (this host, or null once released on stop). */
  expectedOwner: string | null;
  /** Fires when the lease closes for any reason: the handler's `ctx.signal`. */
  readonly signal: AbortSignal;
  /** Resolves once both the worker and the renewer have ended, with the first recorded reason. */
  readonly done: Promise<LeaseClose>;
  private readonly abort = new AbortController();
  /** Stops the renewer only (the worker keeps going): the lease is released but still drained on stop. */
  private readonly renewerAbort = new AbortController();
  private writes: Promise<unknown> = Promise.resolve();
  private lastWriteSentAt: number;
  private closed: LeaseClose | undefined;
  private readonly renewer: LeaseRenewer;

  constructor(private readonly o: LeaseSupervisorOptions<T>) {
    this.lease = o.lease;
    this.expectedOwner = o.me;
    this.lastWriteSentAt = o.acquireSentAt;
    this.signal = this.abort.signal;
    const r = o.options;
    this.renewer = new LeaseRenewer({
      leaseToken: o.lease.leaseToken,
      clock: o.clock,
      renewInterval: r.leaseRenewInterval,
      expirationInterval: r.leaseExpirationInterval,
      safetyMargin: r.leaseSafetyMargin,
      renew: async () => {
        if (this.expectedOwner === null) return;
        try {
          await this.write(renewAs(o.me));
        } catch (e) {
          // A renewal queued behind the release: nothing left to renew.
          if (this.expectedOwner === null && e instanceof LeaseLostError) return;
          throw e;
        }
      },
      lastWriteSentAt: () => this.lastWriteSentAt,
      onRenewFailed: (e) => o.renewFailed(o.lease.leaseToken, e),
    });
    this.done = this.run();
  }

  get leaseToken(): string {
    return this.lease.leaseToken;
  }

  /** The first reason recorded, once the lease is closing. */
  get closeReason(): LeaseClose | undefined {
    return this.closed;
  }

  /** Monotonic time after which this host must not process the lease (see LeaseRenewer). */
  deadline(): number {
    return this.renewer.deadline();
  }

  /** Records why the lease closes (first reason wins) and stops its worker and renewer. */
  close(reason: LeaseCloseReason, error?: unknown): void {
    this.closed ??= { reason, error };
    this.abort.abort(error ?? new LeaseLostError(this.o.lease.leaseToken, "released"));
  }

  /** Applies a mutation to the lease through the store, after this lease's previous writes. */
  write(mutate: (l: Lease) => Lease, after?: () => void): Promise<Lease> {
    const run = this.writes.then(async () => {
      const sentAt = this.o.clock.monotonicNow();
      // Bounded: a write that never answers would hold every later write of this lease (release included).
      const next = await boundedRequest(
        this.o.clock,
        this.o.options.requestTimeout,
        undefined,
        "lease write",
        (signal) => this.o.store.update(this.lease, mutate, signal),
      );
      this.lease = next;
      this.lastWriteSentAt = Math.max(this.lastWriteSentAt, sentAt);
      this.o.written(next);
      // Runs before the next queued write starts (e.g. a checkpoint queued behind a release sees Owner null).
      after?.();
      return next;
    });
    this.writes = run.catch(() => undefined);
    return run;
  }

  /** Marks the lease released (no more renewals; the worker goes on until {@link close}). */
  released(): void {
    this.expectedOwner = null;
    this.renewerAbort.abort();
  }

  private async run(): Promise<LeaseClose> {
    const o = this.o;
    const lease = this.lease;
    const worker = new PartitionWorker<T>({
      lease: {
        leaseToken: lease.leaseToken,
        feedRange: lease.feedRange ?? { min: "", max: "FF" },
        partitionKeyRangeId: lease.version === 0 ? lease.leaseToken : undefined,
        continuationToken: lease.continuationToken,
        checkpoint: async (etag) => {
          // The expected owner is read when the write runs, not when it is queued (a release may come first).
          await this.write((l) => checkpointAs(this.expectedOwner, etag)(l));
        },
      },
      monitored: o.monitored,
      handler: o.handler,
      errorPolicy: o.options.errorPolicy,
      startPosition: o.startPosition,
      feedPollDelay: o.options.feedPollDelay,
      minReadInterval: o.options.minReadInterval,
      maxItemCount: o.options.maxItemsPerInvocation,
      maxCheckpointDelay: o.options.maxCheckpointDelay,
      requestTimeout: o.options.requestTimeout,
      allVersions: o.options.allVersions,
      events: o.workerEvents,
      processorName: o.store.prefix,
      clock: o.clock,
      createReader: o.createReader,
      wakeup: o.wakeup,
    });
    const renewerSignal = AbortSignal.any([this.signal, this.renewerAbort.signal]);
    const workerDone = worker.run(this.signal).then(
      (exit) => {
        if (exit.kind === "lost") this.close(exit.error.reason, exit.error);
        else if (exit.kind === "split") this.close("split");
        else if (exit.kind === "container-gone") this.close("container-gone", exit.error);
        else this.close("released");
      },
      (e: unknown) => this.close("handler-failure", e),
    );
    const renewerDone = this.renewer.run(renewerSignal).then((exit) => {
      if (exit.kind === "lost") this.close(exit.error.reason, exit.error);
      else if (exit.kind === "expired") {
        this.close("expired", new LeaseLostError(lease.leaseToken, "expired"));
      }
    });
    await Promise.all([workerDone, renewerDone]);
    return this.closed ?? { reason: "released" };
  }
}

export type { MonitoredContainerGoneError };
