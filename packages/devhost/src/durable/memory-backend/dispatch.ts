import { systemClock } from "@cosmos-feed/core/clock";
import type { DispatchFeed, DispatchHandler, DispatchOptions } from "../backend.js";
import type { FeedLog } from "./feed-log.js";

/**
 * The memory backend's dispatch feeds: the feed log (feed-log.ts) read under one lease. Feeds of one backend queue
 * for the lease in the order they started; the first that has not stopped holds it and reads from the lease's
 * checkpoint, page by page, each page checkpointed once its handler resolved under the lease — so when the holder
 * stops or is abandoned, the next feed goes on from the last page handled, and a page cut short is read again.
 * Cadence (the least time between two reads, the wait after a failed page) is real time, as the Cosmos DB
 * processor's: a test's fake clock moving days must not spin a feed, nor one standing still stall it.
 */

/** The one lease's token. */
export const MEMORY_LEASE = "memory-0";
/** Documents per page at most (the Cosmos DB processor's default page size). */
export const PAGE_SIZE = 100;

let feedsCreated = 0;

/** The lease and its checkpoint: who holds it, who waits. */
export class DispatchLease {
  /** The position of the last page handled under the lease. */
  checkpoint = 0;
  /** Started feeds that have not stopped, in start order: the first holds the lease. */
  private readonly queue: MemoryFeed[] = [];

  join(feed: MemoryFeed): void {
    this.queue.push(feed);
    if (this.queue.length === 1) feed.acquire();
  }

  leave(feed: MemoryFeed): void {
    const at = this.queue.indexOf(feed);
    if (at < 0) return;
    this.queue.splice(at, 1);
    if (at === 0) this.queue[0]?.acquire();
  }
}

interface Holding {
  lease: AbortController;
  /** The read loop: ends once its page in flight ended after the lease was lost. */
  loop: Promise<void>;
}

export class MemoryFeed implements DispatchFeed {
  private name: string | undefined;
  private state: "new" | "started" | "stopped" = "new";
  private holding: Holding | undefined;
  /** A feed with one lease in memory has no lease documents to show. */
  readonly leases = undefined;

  constructor(
    private readonly log: FeedLog,
    private readonly lease: DispatchLease,
    private readonly handler: DispatchHandler,
    private readonly options: DispatchOptions,
  ) {}

  get instanceName(): string | undefined {
    return this.name;
  }

  async start(): Promise<void> {
    if (this.state === "started") return;
    this.name ??= this.options.instanceName ?? `memory-feed-${++feedsCreated}`;
    this.state = "started";
    this.lease.join(this);
  }

  /** The lease came to this feed (DispatchLease). */
  acquire(): void {
    const lease = new AbortController();
    this.holding = { lease, loop: Promise.resolve() };
    this.report(() => this.options.leaseAcquired?.(MEMORY_LEASE));
    this.holding.loop = this.read(lease.signal);
  }

  async stop(options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    const held = this.leave();
    if (!held) return;
    this.report(() => this.options.leaseLost(MEMORY_LEASE, "released"));
    await untilEither(held.loop, options.abortSignal);
  }

  async abandon(): Promise<void> {
    this.leave();
  }

  ownedLeaseTokens(): string[] {
    return this.holding && !this.holding.lease.signal.aborted ? [MEMORY_LEASE] : [];
  }

  /** Stops: the lease's signal fires and the lease goes to the next feed. What this feed held, if anything. */
  private leave(): Holding | undefined {
    if (this.state !== "started") return undefined;
    this.state = "stopped";
    const held = this.holding;
    this.holding = undefined;
    held?.lease.abort();
    this.lease.leave(this);
    return held;
  }

  private async read(signal: AbortSignal): Promise<void> {
    const { pollDelayMs } = this.options;
    let lastRead = Number.NEGATIVE_INFINITY;
    let page: ReturnType<FeedLog["page"]> | undefined;
    while (!signal.aborted) {
      if (!page) {
        const wait = lastRead + pollDelayMs - systemClock.monotonicNow();
        if (wait > 0) await systemClock.sleep(wait, signal);
        await this.log.written(this.lease.checkpoint, signal);
        if (signal.aborted) break;
        lastRead = systemClock.monotonicNow();
        page = this.log.page(this.lease.checkpoint, PAGE_SIZE);
        if (page.docs.length === 0) {
          // Only documents deleted since they were written: nothing to deliver, nothing to read again.
          this.lease.checkpoint = page.last;
          page = undefined;
          continue;
        }
      }
      try {
        await this.handler(structuredClone(page.docs), { signal });
        // A page that ended after the lease moved is not this feed's to checkpoint: the next holder reads it.
        if (signal.aborted) break;
        this.lease.checkpoint = page.last;
        page = undefined;
      } catch (e) {
        if (signal.aborted) break;
        this.report(() => this.options.error(e));
        await systemClock.sleep(pollDelayMs, signal);
      }
    }
  }

  /** Calls a callback of the options; one that throws does not stop the feed. */
  private report(call: () => void): void {
    try {
      call();
    } catch {
      // A logging callback's failure is not the feed's.
    }
  }
}

/** Resolves when `work` settles or `signal` fires. */
function untilEither(work: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return work;
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    void work.finally(done);
  });
}
