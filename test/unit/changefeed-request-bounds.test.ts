/**
 * The processor's other requests are bounded by requestTimeout too, on a fake clock: the bootstrap, a split's
 * replacement, the lag estimator, and the re-read of a lease after a 412 (stop()'s: changefeed-stop-bounds). Each
 * request that never answers is given up after requestTimeout (a 408), and ends at once when its caller's signal
 * fires (the processor stops), which is then no error.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { BootstrapAbortedError, Bootstrapper } from "../../packages/changefeed/src/bootstrapper.js";
import {
  boundedRequest,
  RequestAbortedError,
  RequestTimeoutError,
} from "../../packages/changefeed/src/bounded-request.js";
import { LeaseLagReadError } from "../../packages/changefeed/src/estimate-retry.js";
import { estimateLeaseLag } from "../../packages/changefeed/src/estimator.js";
import { LeaseReplacer } from "../../packages/changefeed/src/lease-replacer.js";
import { type Lease, LeaseMode } from "../../packages/changefeed/src/leases/lease.js";
import { LeaseOperationCounters, LeaseStore } from "../../packages/changefeed/src/leases/store.js";
import { LeaseView } from "../../packages/changefeed/src/leases/view.js";
import {
  ChangeFeedDefaults,
  InvalidProcessorOptionsError,
  resolveOptions,
} from "../../packages/changefeed/src/options.js";
import { ChangeFeedProcessor } from "../../packages/changefeed/src/processor.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { lease0, testBalancer, track } from "../support/changefeed-fakes.js";
import { InMemoryLeaseStoreFake } from "../support/in-memory-lease-store.js";

const TIMEOUT = 3_000;
const TEN_MINUTES = 10 * 60_000;

/** A request that never answers, but ends (as the SDK's calls do) once the signal it was given fires. */
function hung<T>(signal?: AbortSignal): Promise<T> {
  return new Promise<T>((_, reject) => {
    signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
  });
}

/** A bootstrap over a store whose `.info` is missing; `hang` names the one request that never answers. */
function bootstrapping(clock: FakeClock, hang: "isInitialized" | "acquireInitLock" | "ranges") {
  const signals: Record<string, AbortSignal | undefined> = {};
  let lockReleases = 0;
  const answer =
    <T>(name: string, value: T) =>
    (s?: AbortSignal): Promise<T> => {
      signals[name] = s;
      return name === hang ? hung<T>(s) : Promise.resolve(value);
    };
  const store = {
    prefix: "p",
    layout: "id",
    listAll: answer("listAll", []),
    isInitialized: answer("isInitialized", false),
    acquireInitLock: answer("acquireInitLock", '"lock"'),
    markInitialized: answer("markInitialized", undefined),
    create: async (l: Lease) => l,
    releaseInitLock: async (_etag: string, s?: AbortSignal) => {
      // Counted only when sent with a live signal (a release cut by the stop would be refused at once).
      if (s && !s.aborted) lockReleases++;
    },
  } as unknown as LeaseStore;
  const monitored = {
    readPartitionKeyRanges: (o?: { abortSignal?: AbortSignal }) => ({
      fetchAll: () =>
        answer("ranges", { resources: [{ id: "0", minInclusive: "", maxExclusive: "FF" }] })(o?.abortSignal),
    }),
  } as unknown as Container;
  const stop = new AbortController();
  const run = track(
    new Bootstrapper({
      store,
      monitored,
      mode: LeaseMode.LatestVersion,
      clock,
      retryDelay: 1_000,
      requestTimeout: TIMEOUT,
    }).run(stop.signal),
  );
  return { run, stop, signals, lockReleases: () => lockReleases };
}

describe("boundedRequest", () => {
  it("a request that fails on its own when the caller's signal fires (the SDK's AbortError) is RequestAbortedError", async () => {
    const clock = new FakeClock();
    const stop = new AbortController();
    const done = track(boundedRequest(clock, TIMEOUT, stop.signal, "x", (s) => hung(s)));
    await clock.advance(1);
    stop.abort();
    await clock.advance(1);
    expect(done.error).toBeInstanceOf(RequestAbortedError);
  });
});

describe("the bootstrap's requests", () => {
  it("a read of .info that never answers fails the start after requestTimeout, its request's signal fired", async () => {
    const clock = new FakeClock();
    const b = bootstrapping(clock, "isInitialized");
    await clock.advance(TIMEOUT - 1);
    expect(b.run.settled).toBe(false);
    await clock.advance(1);
    expect(b.run.error).toBeInstanceOf(RequestTimeoutError);
    expect((b.run.error as RequestTimeoutError).statusCode).toBe(408);
    expect(b.signals.isInitialized?.aborted).toBe(true);
  });

  it("a stop while the lock create hangs ends the bootstrap as stopped (BootstrapAbortedError), not as an error", async () => {
    const clock = new FakeClock();
    const b = bootstrapping(clock, "acquireInitLock");
    await clock.advance(1);
    expect(b.run.settled).toBe(false);
    b.stop.abort();
    await clock.advance(1);
    expect(b.run.error).toBeInstanceOf(BootstrapAbortedError);
  });

  it("a stop while the lock is held ends the bootstrap, and the lock is still released (not cut by the stop)", async () => {
    const clock = new FakeClock();
    const b = bootstrapping(clock, "ranges");
    await clock.advance(1);
    expect(b.signals.ranges).toBeDefined();
    b.stop.abort();
    await clock.advance(1);
    expect(b.run.error).toBeInstanceOf(BootstrapAbortedError);
    expect(b.signals.ranges?.aborted).toBe(true);
    expect(b.lockReleases()).toBe(1);
  });
});

describe("a split's replacement", () => {
  function replacing(clock: FakeClock) {
    const reads: (AbortSignal | undefined)[] = [];
    const store = {
      prefix: "p",
      layout: "id",
      read: (_l: Lease, s?: AbortSignal) => {
        reads.push(s);
        return hung<Lease | undefined>(s);
      },
    } as unknown as LeaseStore;
    const replacer = new LeaseReplacer({
      store,
      monitored: {} as Container,
      me: "me",
      clock,
      requestTimeout: TIMEOUT,
      created: () => {},
      deleted: () => {},
    });
    return { replacer, reads };
  }

  it("a lease read that never answers fails the replacement after requestTimeout", async () => {
    const clock = new FakeClock();
    const r = replacing(clock);
    const done = track(r.replacer.replace(lease0("me")));
    await clock.advance(TIMEOUT - 1);
    expect(done.settled).toBe(false);
    await clock.advance(1);
    expect(done.error).toBeInstanceOf(RequestTimeoutError);
    expect(r.reads[0]?.aborted).toBe(true);
  });

  it("the processor stopping ends it as 'stopped' (no error, the parent left for the next owner)", async () => {
    const clock = new FakeClock();
    const r = replacing(clock);
    const stop = new AbortController();
    const done = track(r.replacer.replace(lease0("me"), stop.signal));
    await clock.advance(1);
    stop.abort();
    await clock.advance(1);
    expect(done.error).toBeUndefined();
    expect(done.value).toEqual({ kind: "stopped" });
  });
});

describe("the lag estimator", () => {
  /** A monitored container whose every feed read never answers; `reads` counts them. */
  function hungFeed() {
    const counts = { reads: 0 };
    const monitored = {
      read: async () => ({ resource: { _rid: "cRid" } }),
      items: {
        getChangeFeedIterator: () => ({
          readNext: () => {
            counts.reads++;
            return hung();
          },
        }),
      },
    } as unknown as Container;
    return { monitored, counts };
  }

  it("a feed read that never answers is sent again after requestTimeout, readRetries times, then fails naming the lease", async () => {
    const clock = new FakeClock();
    const { monitored, counts } = hungFeed();
    const lag = track(
      estimateLeaseLag(monitored, lease0("me", '"5"'), { clock, requestTimeout: TIMEOUT, readRetries: 1 }),
    );
    await clock.advance(TIMEOUT - 1);
    expect(lag.settled).toBe(false);
    expect(counts.reads).toBe(1);
    await clock.advance(1); // the first read is given up: the backoff (at most feedReadRetryInitialDelay) starts
    await clock.advance(ChangeFeedDefaults.feedReadRetryInitialDelay);
    expect(counts.reads).toBe(2);
    expect(lag.settled).toBe(false);
    await clock.advance(TIMEOUT);
    expect(lag.error).toBeInstanceOf(LeaseLagReadError);
    const e = lag.error as LeaseLagReadError;
    expect([e.leaseToken, e.attempts, e.statusCode, e.code]).toEqual(["0", 2, 408, "LeaseLagReadFailed"]);
    expect(e.cause).toBeInstanceOf(RequestTimeoutError);
    expect(e.message).toContain("lease 0");
    expect(counts.reads).toBe(2);
  });

  it("readRetries 0: the first timeout fails the lease's estimate", async () => {
    const clock = new FakeClock();
    const { monitored, counts } = hungFeed();
    const lag = track(
      estimateLeaseLag(monitored, lease0("me", '"5"'), { clock, requestTimeout: TIMEOUT, readRetries: 0 }),
    );
    await clock.advance(TIMEOUT);
    expect((lag.error as LeaseLagReadError).attempts).toBe(1);
    expect(counts.reads).toBe(1);
  });

  it.each([-1, 1.5, Number.NaN])("readRetries %s is refused before any read", async (readRetries) => {
    const { monitored, counts } = hungFeed();
    await expect(estimateLeaseLag(monitored, lease0("me", '"5"'), { readRetries })).rejects.toBeInstanceOf(
      InvalidProcessorOptionsError,
    );
    expect(counts.reads).toBe(0);
  });

  it("its abortSignal ends a hung estimate at once, and a backoff between attempts", async () => {
    const clock = new FakeClock();
    const { monitored, counts } = hungFeed();
    const stop = new AbortController();
    const lag = track(
      estimateLeaseLag(monitored, lease0("me", '"5"'), {
        clock,
        requestTimeout: TIMEOUT,
        abortSignal: stop.signal,
      }),
    );
    await clock.advance(1);
    stop.abort();
    await clock.advance(1);
    expect(lag.error).toBeInstanceOf(RequestAbortedError);

    const stopLater = new AbortController();
    const retried = track(
      estimateLeaseLag(monitored, lease0("me", '"5"'), {
        clock,
        requestTimeout: TIMEOUT,
        abortSignal: stopLater.signal,
      }),
    );
    await clock.advance(TIMEOUT); // given up: in its backoff now
    expect(retried.settled).toBe(false);
    stopLater.abort();
    await clock.advance(1);
    expect(retried.error).toBeInstanceOf(RequestAbortedError);
    expect(counts.reads).toBe(2); // one per estimate: the abort came before the retry
  });
});

describe("LeaseStore.update after a 412", () => {
  it("the re-read takes the write's signal: a hung re-read ends when the write is given up, and nothing follows", async () => {
    const clock = new FakeClock();
    let replaces = 0;
    const reads: (AbortSignal | undefined)[] = [];
    const container = {
      item: () => ({
        replace: async () => {
          replaces++;
          throw Object.assign(new Error("precondition failed"), { code: 412 });
        },
        read: (o?: { abortSignal?: AbortSignal }) => {
          reads.push(o?.abortSignal);
          return hung(o?.abortSignal);
        },
      }),
    } as unknown as Container;
    const store = new LeaseStore(container, "p", "id", new LeaseOperationCounters(), () => clock.now());
    const write = track(
      boundedRequest(clock, TIMEOUT, undefined, "lease write", (s) =>
        store.update(lease0("me"), (l) => l, s),
      ),
    );
    await clock.advance(TIMEOUT);
    expect(write.error).toBeInstanceOf(RequestTimeoutError);
    expect(reads).toHaveLength(1);
    expect(reads[0]?.aborted).toBe(true);
    await clock.advance(TEN_MINUTES);
    expect(replaces).toBe(1);
  });
});

describe("start() and a balancing round", () => {
  it("start(): container reads that never answer fail it after requestTimeout; a stop meanwhile ends it stopped", async () => {
    const clock = new FakeClock();
    const hungContainer = { id: "c", read: () => hung() } as unknown as Container;
    const input = {
      monitoredContainer: hungContainer,
      leaseContainer: hungContainer,
      requestTimeout: TIMEOUT,
      clock,
    };
    const failing = new ChangeFeedProcessor(input, async () => {});
    const failed = track(failing.start());
    await clock.advance(TIMEOUT - 1);
    expect(failed.settled).toBe(false);
    await clock.advance(1);
    expect(failed.error).toBeInstanceOf(RequestTimeoutError);
    const stopped = new ChangeFeedProcessor(input, async () => {});
    const starting = track(stopped.start());
    await clock.advance(1);
    const stopping = track(stopped.stop());
    await clock.advance(1);
    expect(starting.settled && stopping.settled).toBe(true);
    expect(starting.error).toBeUndefined();
  });

  it("a lease without FeedRange: a range lookup that never answers ends the round after requestTimeout", async () => {
    const clock = new FakeClock();
    const store = new InMemoryLeaseStoreFake(clock);
    store.put({ ...lease0(), feedRange: undefined });
    const view = new LeaseView(store.asStore());
    await view.load();
    const reported: unknown[] = [];
    const monitored = { readPartitionKeyRanges: () => ({ fetchAll: () => hung() }) } as unknown as Container;
    const balancer = testBalancer({
      options: resolveOptions(
        { monitoredContainer: monitored, leaseContainer: {} as Container, requestTimeout: TIMEOUT },
        () => "me",
      ),
      store: store.asStore(),
      view,
      monitored,
      clock,
      report: (e) => reported.push(e),
    });
    const round = track(balancer.balance());
    await clock.advance(TIMEOUT - 1);
    expect(round.settled).toBe(false);
    await clock.advance(1);
    expect(round.settled).toBe(true);
    expect(reported).toHaveLength(1);
    expect(reported[0]).toBeInstanceOf(RequestTimeoutError);
  });
});
