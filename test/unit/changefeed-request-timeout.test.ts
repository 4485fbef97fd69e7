/**
 * Every processor request is bounded (ChangeFeedDefaults.requestTimeout), on a fake clock: a change feed read
 * that never answers is given up when the lease is lost (run() returns) or after requestTimeout (retried as a
 * 408, from the last page returned), and a lease write that never answers no longer holds the lease's write
 * queue, so the lease still closes.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { boundedRequest, RequestTimeoutError } from "../../packages/changefeed/src/bounded-request.js";
import { type Lease, LeaseMode, newLease } from "../../packages/changefeed/src/leases/lease.js";
import { LeaseView } from "../../packages/changefeed/src/leases/view.js";
import { ChangeFeedDefaults, resolveOptions } from "../../packages/changefeed/src/options.js";
import type { FeedPage } from "../../packages/changefeed/src/processing/feed-reader.js";
import {
  type FeedReader,
  PartitionWorker,
  type WorkerExit,
} from "../../packages/changefeed/src/processing/worker.js";
import { type LeaseClose, LeaseSupervisor } from "../../packages/changefeed/src/supervisor.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { testBalancer } from "../support/changefeed-fakes.js";
import { InMemoryLeaseStoreFake } from "../support/in-memory-lease-store.js";

type Doc = { id: string };
const TEN_MINUTES = 10 * 60_000;
const never = <T>() => new Promise<T>(() => undefined);
const changes = (id: string, etag: string): FeedPage<Doc> => ({
  kind: "changes",
  items: [{ id }],
  etag,
  requestCharge: 1,
  sessionToken: undefined,
});

/** A worker over `reader`; records the read failures and what was delivered. */
function workerOver(clock: FakeClock, reader: FeedReader<Doc>, requestTimeout?: number) {
  const failures: unknown[] = [];
  const delivered: string[] = [];
  const lost = new AbortController();
  const worker = new PartitionWorker<Doc>({
    lease: {
      leaseToken: "0",
      feedRange: { min: "", max: "FF" },
      partitionKeyRangeId: "0",
      continuationToken: '"1"',
      checkpoint: async () => {},
    },
    monitored: {} as Container,
    handler: async (docs) => {
      delivered.push(...docs.map((d) => d.id));
    },
    errorPolicy: { kind: "retry" },
    startPosition: { kind: "beginning" },
    feedPollDelay: 100,
    maxItemCount: undefined,
    ...(requestTimeout === undefined ? {} : { requestTimeout }),
    allVersions: false,
    events: {
      checkpointed: () => {},
      handlerFailed: () => {},
      readFailed: (_t, e) => failures.push(e),
      deadLettered: () => {},
    },
    processorName: "p",
    clock,
    createReader: () => reader,
  });
  let exit: WorkerExit | undefined;
  void worker.run(lost.signal).then((e) => {
    exit = e;
  });
  return { lost, failures, delivered, exit: () => exit };
}

describe("bounded processor requests (fake clock)", () => {
  it("a feed read that never answers: losing the lease ends run(), and the read's signal fires", async () => {
    const clock = new FakeClock();
    const signals: AbortSignal[] = [];
    const w = workerOver(clock, {
      next: (signal) => {
        if (signal) signals.push(signal);
        return never();
      },
    });
    await clock.advance(1);
    expect(signals).toHaveLength(1);
    w.lost.abort();
    await clock.advance(TEN_MINUTES);
    expect(w.exit()).toEqual({ kind: "aborted" });
    expect(signals[0].aborted).toBe(true);
    expect(w.delivered).toEqual([]);
  });

  it("a feed read that never answers is given up after requestTimeout and retried from the last page returned", async () => {
    const clock = new FakeClock();
    const TIMEOUT = 2_000;
    const readsAt: number[] = [];
    let abandoned = 0;
    const w = workerOver(
      clock,
      {
        next: async () => {
          readsAt.push(clock.monotonicNow());
          if (readsAt.length === 1) return never();
          if (readsAt.length === 2) return changes("a", '"2"');
          return never();
        },
        abandon: () => {
          abandoned++;
        },
      },
      TIMEOUT,
    );
    await clock.advance(TIMEOUT - 1);
    expect(w.failures).toEqual([]);
    await clock.advance(1);
    expect(w.failures).toHaveLength(1);
    expect(w.failures[0]).toBeInstanceOf(RequestTimeoutError);
    expect((w.failures[0] as RequestTimeoutError).statusCode).toBe(408);
    expect(abandoned).toBe(1);
    // Retried after the feed-read backoff (at most its first delay), not ended: a timeout is retryable.
    await clock.advance(ChangeFeedDefaults.feedReadRetryInitialDelay);
    expect(readsAt).toHaveLength(3);
    expect(w.delivered).toEqual(["a"]);
    expect(w.exit()).toBeUndefined();
    w.lost.abort();
    await clock.advance(1);
    expect(w.exit()).toEqual({ kind: "aborted" });
  });

  it("boundedRequest answers with the request's own result or error when it comes first, and clears its timer", async () => {
    const clock = new FakeClock();
    await expect(boundedRequest(clock, 1_000, undefined, "x", async () => 7)).resolves.toBe(7);
    await expect(
      boundedRequest(clock, 1_000, undefined, "x", async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    await clock.advance(0);
    expect(clock.pendingTimers).toBe(0);
  });

  /** A supervised lease whose store answers each update as `answer(n)` says (n counts from 0). */
  function supervisedLease(
    clock: FakeClock,
    answer: (n: number, l: Lease) => Promise<Lease>,
    reader: FeedReader<Doc>,
  ) {
    const options = resolveOptions(
      {
        monitoredContainer: {} as Container,
        leaseContainer: {} as Container,
        leaseRenewInterval: 2_000,
        leaseExpirationInterval: 10_000,
        leaseSafetyMargin: 500,
        feedPollDelay: 100,
        requestTimeout: 500,
      },
      () => "me",
    );
    const updatesAt: number[] = [];
    const signals: (AbortSignal | undefined)[] = [];
    const store = {
      prefix: "p",
      update: (l: Lease, mutate: (l: Lease) => Lease, signal?: AbortSignal): Promise<Lease> => {
        updatesAt.push(clock.monotonicNow());
        signals.push(signal);
        return answer(updatesAt.length - 1, mutate(l));
      },
    };
    const renewFailures: unknown[] = [];
    const s = new LeaseSupervisor<Doc>({
      lease: {
        ...newLease("p", "id", { id: "0", min: "", max: "FF" }, '"1"', LeaseMode.LatestVersion),
        owner: "me",
      },
      acquireSentAt: 0,
      me: "me",
      store,
      monitored: {} as Container,
      handler: async () => {},
      options,
      startPosition: { kind: "beginning" },
      clock,
      workerEvents: {
        checkpointed: () => {},
        handlerFailed: () => {},
        readFailed: () => {},
        deadLettered: () => {},
      },
      written: () => {},
      renewFailed: (_t, e) => renewFailures.push(e),
      createReader: () => reader,
    });
    let closed: LeaseClose | undefined;
    void s.done.then((c) => {
      closed = c;
    });
    return { s, updatesAt, signals, renewFailures, closed: () => closed };
  }

  it("a lease write that never answers times out and is retried: one hung renewal does not cost the lease", async () => {
    const clock = new FakeClock();
    const idle: FeedReader<Doc> = {
      next: async () => ({ kind: "empty", etag: '"1"', requestCharge: 1, sessionToken: undefined }),
    };
    const l = supervisedLease(clock, (n, next) => (n === 0 ? never() : Promise.resolve(next)), idle);
    await clock.advance(30_000);
    // Due at 6 s (age ⌈(10 − 4) / 2⌉ × 2 s); it hangs, times out at 6.5 s, is retried at 8.5 s (before the 9.5 s deadline).
    expect(l.updatesAt.slice(0, 2)).toEqual([6_000, 8_500]);
    expect(l.renewFailures).toHaveLength(1);
    expect(l.renewFailures[0]).toBeInstanceOf(RequestTimeoutError);
    // The hung write's own signal (what the SDK call gets) fired when it was given up.
    expect(l.signals[0]?.aborted).toBe(true);
    expect(l.closed()).toBeUndefined();
    expect(l.s.signal.aborted).toBe(false);
    l.s.close("released");
    await clock.advance(1);
    expect(l.closed()?.reason).toBe("released");
  });

  it("a lease whose writes and reads never answer still closes at its local deadline (worker and renewer both end)", async () => {
    const clock = new FakeClock();
    const l = supervisedLease(clock, () => never(), { next: () => never() });
    await clock.advance(TEN_MINUTES);
    expect(l.closed()?.reason).toBe("expired");
    expect(l.renewFailures.length).toBeGreaterThan(0);
    expect(l.renewFailures.every((e) => e instanceof RequestTimeoutError)).toBe(true);
  });

  /** A balancer over one free lease whose acquire never answers; `stopping` is the processor's stop signal. */
  async function balancerWithHangingAcquire(stopping: AbortSignal) {
    const clock = new FakeClock();
    const store = new InMemoryLeaseStoreFake(clock);
    store.put(newLease("p", "id", { id: "0", min: "", max: "FF" }, null, LeaseMode.LatestVersion));
    const view = new LeaseView(store.asStore());
    await view.load();
    const counts = { acquires: 0 };
    store.update = () => {
      counts.acquires++;
      return never();
    };
    const reported: unknown[] = [];
    const balancer = testBalancer({
      options: resolveOptions(
        { monitoredContainer: {} as Container, leaseContainer: {} as Container, requestTimeout: 3_000 },
        () => "me",
      ),
      store: store.asStore(),
      view,
      clock,
      report: (e) => reported.push(e),
      signal: stopping,
    });
    return { clock, balancer, counts, reported };
  }

  it("a lease acquire that never answers ends its balancing round after requestTimeout (reported, the next round runs)", async () => {
    const { clock, balancer, counts, reported } = await balancerWithHangingAcquire(
      new AbortController().signal,
    );
    let first = false;
    void balancer.balance().then(() => {
      first = true;
    });
    await clock.advance(2_999);
    expect(first).toBe(false);
    await clock.advance(1);
    expect(first).toBe(true);
    expect(reported).toHaveLength(1);
    expect(reported[0]).toBeInstanceOf(RequestTimeoutError);
    void balancer.balance();
    await clock.advance(1);
    expect(counts.acquires).toBe(2);
  });

  it("a lease acquire in flight when the processor stops is abandoned without an error report", async () => {
    const stopping = new AbortController();
    const { clock, balancer, counts, reported } = await balancerWithHangingAcquire(stopping.signal);
    let ended = false;
    void balancer.balance().then(() => {
      ended = true;
    });
    await clock.advance(1);
    expect(counts.acquires).toBe(1);
    stopping.abort();
    await clock.advance(1);
    expect(ended).toBe(true);
    expect(reported).toEqual([]);
  });
});
