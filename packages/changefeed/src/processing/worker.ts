import type { Container } from "@azure/cosmos";
import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import { boundedRequest, RequestTimeoutError } from "../bounded-request.js";
import type { EpkRange } from "../leases/lease.js";
import { LeaseLostError } from "../leases/store.js";
import { ChangeFeedDefaults, type ErrorPolicy } from "../options.js";
import { CoalescingCheckpointer } from "./checkpointer.js";
import { deadLetter } from "./dead-letter.js";
import {
  classifyFeedReadError,
  FeedReadBackoff,
  type FeedReadFailure,
  MonitoredContainerGoneError,
  retryAfterMs,
} from "./feed-errors.js";
import { type FeedPage, LeaseFeedReader, type StartPosition } from "./feed-reader.js";
import type { FeedPollWakeup } from "./wakeup.js";

/** What a handler learns about the batch it is given. */
export interface ChangeFeedContext {
  /** The lease's token. */
  leaseToken: string;
  /** The EPK range the batch was read from. */
  feedRange: EpkRange;
  /**
   * Fires when this host loses the lease (stolen, deleted, split), when it could not write the lease for
   * (leaseExpirationInterval − leaseSafetyMargin) by its own clock (before any other host may take it), or
   * when the processor stops: stop writing.
   */
  signal: AbortSignal;
  /** 1 on first delivery; higher when the same batch is retried. */
  attempt: number;
}

/**
 * Handles one batch of changes; when it resolves, the batch is checkpointed; when it throws, the error policy
 * applies.
 */
export type ChangeFeedHandler<T> = (changes: T[], context: ChangeFeedContext) => Promise<void>;

/** What the worker needs from the lease it works for (the processor owns the writes). */
export interface LeaseLink {
  readonly leaseToken: string;
  readonly feedRange: EpkRange;
  /** For a version-0 lease, the partition key range it was made for (its LeaseToken). */
  readonly partitionKeyRangeId: string | undefined;
  readonly continuationToken: string | null;
  checkpoint(etag: string): Promise<void>;
}

export interface WorkerEvents {
  checkpointed(leaseToken: string, etag: string, documents: number): void;
  handlerFailed(leaseToken: string, error: unknown, attempt: number): void;
  /** A change feed read failed and will be retried after a backoff. */
  readFailed(leaseToken: string, error: unknown, failure: FeedReadFailure): void;
  deadLettered(leaseToken: string, documents: number): void;
}

/** Outcome of a worker's run. */
export type WorkerExit =
  | { kind: "aborted" }
  | { kind: "split" }
  | { kind: "lost"; error: LeaseLostError }
  | { kind: "container-gone"; error: MonitoredContainerGoneError };

/** A read's page, or what it threw. */
type ReadOutcome<T> = { page: FeedPage<T> } | { error: unknown };

/** What the worker reads from: one lease's range of the change feed (a {@link LeaseFeedReader}). */
export interface FeedReader<T> {
  /** The next page; `signal` fires when the worker gives the read up (timeout, lease lost, stop). */
  next(signal?: AbortSignal): Promise<FeedPage<T>>;
  /**
   * A read was given up while still in flight: its late answer must not move the position, so the next read
   * starts again from the last page this reader returned.
   */
  abandon?(): void;
}

export interface PartitionWorkerOptions<T> {
  lease: LeaseLink;
  monitored: Container;
  handler: ChangeFeedHandler<T>;
  errorPolicy: ErrorPolicy;
  startPosition: StartPosition;
  /** Wait after a read that found nothing new (ms). */
  feedPollDelay: number;
  /** Shortest time between the starts of two reads (ms); see ChangeFeedProcessorOptions.minReadInterval. */
  minReadInterval?: number;
  maxItemCount: number | undefined;
  /** Longest a handled batch's checkpoint waits while the next pages keep coming (ms); see ChangeFeedDefaults. */
  maxCheckpointDelay?: number;
  /** Longest wait for one read's answer before it is retried (ms); see ChangeFeedDefaults.requestTimeout. */
  requestTimeout?: number;
  allVersions: boolean;
  events: WorkerEvents;
  /** The lease prefix, recorded in dead-letter documents. */
  processorName: string;
  clock?: Clock;
  /** Replaces the SDK-backed reader (unit tests drive the worker with scripted pages and errors). */
  createReader?: () => FeedReader<T>;
  /** Shortens the feed-poll wait when the process wrote to the monitored container (processor.wake()). */
  wakeup?: FeedPollWakeup;
}

/**
 * Processes one lease's range: read a page, give it to the handler, checkpoint only after the handler
 * succeeded. The next page is read while the handler runs; when it brings changes, the handled batch's
 * checkpoint is held and replaced by the next one's (at most maxCheckpointDelay ms), so a backlog costs far
 * fewer lease writes than pages. A failing batch is retried (same batch, so per-key order holds) or, with the dead-letter
 * policy, written to the dead-letter container after N attempts and skipped. A failed read is classified
 * (feed-errors.ts): the monitored container gone ends the worker, a split hands the lease over to be
 * replaced, anything else backs off (bounded, jittered) before reading again.
 */
export class PartitionWorker<T> {
  private readonly lease: LeaseLink;
  private readonly handler: ChangeFeedHandler<T>;
  private readonly policy: ErrorPolicy;
  private readonly events: WorkerEvents;
  private readonly clock: Clock;

  constructor(private readonly o: PartitionWorkerOptions<T>) {
    this.lease = o.lease;
    this.handler = o.handler;
    this.policy = o.errorPolicy;
    this.events = o.events;
    this.clock = o.clock ?? systemClock;
  }

  private createReader(): FeedReader<T> {
    if (this.o.createReader) return this.o.createReader();
    return new LeaseFeedReader<T>({
      container: this.o.monitored,
      range: this.lease.feedRange,
      continuation: this.lease.continuationToken,
      start: this.o.startPosition,
      maxItemCount: this.o.maxItemCount,
      allVersions: this.o.allVersions,
      partitionKeyRangeId: this.lease.partitionKeyRangeId,
    });
  }

  async run(signal: AbortSignal): Promise<WorkerExit> {
    const reader = this.createReader();
    const checkpoints = new CoalescingCheckpointer({
      write: (etag) => this.lease.checkpoint(etag),
      written: (etag, documents) => this.events.checkpointed(this.lease.leaseToken, etag, documents),
      maxDelay: this.o.maxCheckpointDelay ?? ChangeFeedDefaults.maxCheckpointDelay,
      clock: this.clock,
    });
    const backoff = new FeedReadBackoff(
      ChangeFeedDefaults.feedReadRetryInitialDelay,
      ChangeFeedDefaults.feedReadRetryMaxDelay,
    );
    // A read never rejects here: its outcome is looked at after the batch before it is handled.
    // The wake-up generation when the last read was issued: a wake after it means that read may miss a write.
    let generation = 0;
    const minInterval = this.o.minReadInterval ?? 0;
    const timeout = this.o.requestTimeout ?? ChangeFeedDefaults.requestTimeout;
    let lastRead = Number.NEGATIVE_INFINITY;
    const read = async (): Promise<ReadOutcome<T>> => {
      if (minInterval > 0) {
        const wait = lastRead + minInterval - this.clock.monotonicNow();
        if (wait > 0) await this.clock.sleep(wait, signal);
        lastRead = this.clock.monotonicNow();
      }
      generation = this.o.wakeup?.current ?? 0;
      // Raced against requestTimeout and the lease's signal: a read that never answers cannot hold the worker.
      return boundedRequest(this.clock, timeout, signal, "change feed read", (s) => reader.next(s)).then(
        (page) => ({ page }),
        (error: unknown) => {
          if (error instanceof RequestTimeoutError) reader.abandon?.();
          return { error };
        },
      );
    };
    let prefetched: Promise<ReadOutcome<T>> | undefined;
    let checkpointedOnce = this.lease.continuationToken !== null;
    try {
      while (!signal.aborted) {
        checkpoints.throwIfFailed();
        const outcome = await (prefetched ?? read());
        prefetched = undefined;
        if (signal.aborted) break;
        let page: FeedPage<T>;
        if ("error" in outcome) {
          // No next page in hand: the held checkpoint is written now.
          checkpoints.commit();
          const e = outcome.error;
          const failure = classifyFeedReadError(e);
          if (failure === "container-gone") {
            return {
              kind: "container-gone",
              error: new MonitoredContainerGoneError(this.lease.leaseToken, e),
            };
          }
          if (failure === "split") page = { kind: "gone" };
          else {
            this.events.readFailed(this.lease.leaseToken, e, failure);
            await this.clock.sleep(backoff.next(retryAfterMs(e)), signal);
            continue;
          }
        } else {
          page = outcome.page;
          backoff.reset();
        }
        if (page.kind === "gone") {
          // Split or merge: the replacement leases start from this one's last checkpoint: make sure it is written.
          await checkpoints.flush();
          return { kind: "split" };
        }
        if (page.kind === "empty") {
          checkpoints.commit();
          // Pin a "now"/"time" start on the first empty read, so a successor does not start later.
          if (!checkpointedOnce && page.etag) {
            checkpoints.submit(page.etag, 0);
            checkpointedOnce = true;
          }
          if (this.o.wakeup) await this.o.wakeup.sleep(this.clock, this.o.feedPollDelay, signal, generation);
          else await this.clock.sleep(this.o.feedPollDelay, signal);
          continue;
        }
        // Read ahead while the handler runs: the page after this one decides whether its checkpoint is held.
        prefetched = read();
        const delivered = await this.deliver(page.items, signal);
        if (!delivered) break;
        // Held until the next page is known (written in the background, off the read path).
        checkpoints.defer(page.etag, page.items.length);
        checkpointedOnce = true;
      }
      await checkpoints.flush();
      return { kind: "aborted" };
    } catch (e) {
      if (e instanceof LeaseLostError) return { kind: "lost", error: e };
      throw e;
    } finally {
      checkpoints.close();
    }
  }

  /** Delivers a batch under the error policy; false when aborted before success. */
  private async deliver(items: T[], signal: AbortSignal): Promise<boolean> {
    const policy = this.policy;
    let delay = policy.initialDelay ?? ChangeFeedDefaults.retryInitialDelay;
    const maxDelay = policy.maxDelay ?? ChangeFeedDefaults.retryMaxDelay;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) return false;
      try {
        await this.handler(items, {
          leaseToken: this.lease.leaseToken,
          feedRange: this.lease.feedRange,
          signal,
          attempt,
        });
        return !signal.aborted;
      } catch (e) {
        this.events.handlerFailed(this.lease.leaseToken, e, attempt);
        if (signal.aborted) return false;
        if (policy.kind === "deadLetter" && attempt >= policy.maxAttempts) {
          await deadLetter({
            container: policy.container,
            processorName: this.o.processorName,
            leaseToken: this.lease.leaseToken,
            items,
            error: e,
            attempts: attempt,
            now: this.clock.now(),
          });
          this.events.deadLettered(this.lease.leaseToken, items.length);
          return true;
        }
        // Full jitter keeps many failing workers from retrying in lockstep.
        await this.clock.sleep(delay / 2 + Math.random() * (delay / 2), signal);
        delay = Math.min(maxDelay, delay * 2);
      }
    }
  }
}

export { CoalescingCheckpointer };
