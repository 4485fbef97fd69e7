/**
 * How a partition worker treats failed change feed reads, on a fake clock with a scripted reader (the SDK's
 * errors carry the service status in `code`): 404 ends the lease, 410 replaces it, 400/429/503/timeouts back
 * off (bounded, jittered), and a success resets the backoff.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { ChangeFeedDefaults } from "../../packages/changefeed/src/options.js";
import {
  classifyFeedReadError,
  FeedReadBackoff,
  MonitoredContainerGoneError,
  retryAfterMs,
} from "../../packages/changefeed/src/processing/feed-errors.js";
import type { FeedPage } from "../../packages/changefeed/src/processing/feed-reader.js";
import { PartitionWorker, type WorkerExit } from "../../packages/changefeed/src/processing/worker.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { CosmosFeedError } from "../../packages/core/src/errors.js";

const POLL = 50;
const INITIAL = ChangeFeedDefaults.feedReadRetryInitialDelay;
const MAX = ChangeFeedDefaults.feedReadRetryMaxDelay;

const sdkError = (code: number | string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(`injected ${code}`), { code, ...extra });

type Step = FeedPage<{ id: string }> | Error;

/** A worker over a scripted reader; records when each read happened (fake ms) and what was delivered. */
function scripted(clock: FakeClock, script: (n: number) => Step) {
  const readsAt: number[] = [];
  const delivered: string[] = [];
  const readFailures: string[] = [];
  const abort = new AbortController();
  const worker = new PartitionWorker<{ id: string }>({
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
    feedPollDelay: POLL,
    maxItemCount: undefined,
    allVersions: false,
    events: {
      checkpointed: () => {},
      handlerFailed: () => {},
      readFailed: (_t, _e, failure) => readFailures.push(failure),
      deadLettered: () => {},
    },
    processorName: "p",
    clock,
    createReader: () => ({
      next: async () => {
        readsAt.push(clock.monotonicNow());
        const step = script(readsAt.length - 1);
        if (step instanceof Error) throw step;
        return step;
      },
    }),
  });
  let exit: WorkerExit | undefined;
  void worker.run(abort.signal).then((e) => {
    exit = e;
  });
  return { readsAt, delivered, readFailures, abort, exit: () => exit };
}

const empty: Step = { kind: "empty", etag: '"2"', requestCharge: 1, sessionToken: undefined };

describe("feed-read errors", () => {
  it("classifies by status", () => {
    expect(classifyFeedReadError(sdkError(404))).toBe("container-gone");
    expect(classifyFeedReadError(sdkError(410))).toBe("split");
    expect(classifyFeedReadError(sdkError(400))).toBe("bad-continuation");
    for (const c of [429, 503, 408, 500, "TimeoutError", "ECONNRESET"]) {
      expect(classifyFeedReadError(sdkError(c))).toBe("transient");
    }
  });

  it("ends the worker on 404 (monitored container gone) after one read, with a typed 404 error", async () => {
    const clock = new FakeClock();
    const w = scripted(clock, () => sdkError(404));
    await clock.advance(60_000);
    expect(w.readsAt).toEqual([0]);
    const exit = w.exit();
    expect(exit?.kind).toBe("container-gone");
    const error = (exit as { error: MonitoredContainerGoneError }).error;
    expect(error).toBeInstanceOf(MonitoredContainerGoneError);
    expect(error).toBeInstanceOf(CosmosFeedError);
    expect(error.statusCode).toBe(404);
    expect(error.code).toBe("MonitoredContainerGone");
  });

  it("turns a 410 into the split exit", async () => {
    const clock = new FakeClock();
    const w = scripted(clock, () => sdkError(410));
    await clock.advance(1);
    expect(w.exit()).toEqual({ kind: "split" });
  });

  for (const code of [400, 429, 503, "TimeoutError"] as const) {
    it(`backs off exponentially (not at the poll interval) on ${code}, bounded by ${MAX} ms, reset by a success`, async () => {
      const clock = new FakeClock();
      const failing = 9;
      const w = scripted(clock, (n) =>
        n < failing ? sdkError(code) : n === failing ? empty : sdkError(code),
      );
      await clock.advance(10 * MAX);
      const gaps = w.readsAt.slice(1, failing + 1).map((t, i) => t - w.readsAt[i]);
      expect(gaps.length).toBe(failing);
      gaps.forEach((gap, i) => {
        const base = Math.min(MAX, INITIAL * 2 ** i);
        expect(gap).toBeGreaterThanOrEqual(base / 2);
        expect(gap).toBeLessThanOrEqual(base);
      });
      // The success reset the backoff: the next failure waits the first step again (after one poll delay).
      const afterSuccess = w.readsAt[failing + 2] - w.readsAt[failing + 1];
      expect(afterSuccess).toBeLessThanOrEqual(INITIAL);
      expect(w.readFailures.every((f) => f === (code === 400 ? "bad-continuation" : "transient"))).toBe(true);
      expect(w.exit()).toBeUndefined();
      w.abort.abort();
      await clock.advance(1);
      expect(w.exit()).toEqual({ kind: "aborted" });
    });
  }

  it("waits at least what a 429 asks for (retry-after)", async () => {
    const clock = new FakeClock();
    const w = scripted(clock, (n) => (n === 0 ? sdkError(429, { retryAfterInMs: 7_000 }) : empty));
    await clock.advance(10_000);
    expect(w.readsAt[1]).toBeGreaterThanOrEqual(7_000);
    w.abort.abort();
  });

  it("delivers pages between failures", async () => {
    const clock = new FakeClock();
    const w = scripted(clock, (n) =>
      n % 2 === 0
        ? sdkError(503)
        : {
            kind: "changes",
            items: [{ id: `d${n}` }],
            etag: `"${n}"`,
            requestCharge: 1,
            sessionToken: undefined,
          },
    );
    await clock.advance(5_000);
    expect(w.delivered.slice(0, 3)).toEqual(["d1", "d3", "d5"]);
    w.abort.abort();
  });
});

describe("FeedReadBackoff", () => {
  it("doubles from the initial wait up to the cap, with half of each wait random", () => {
    const low = new FeedReadBackoff(1_000, 8_000, () => 0);
    expect(Array.from({ length: 6 }, () => low.next())).toEqual([500, 1_000, 2_000, 4_000, 4_000, 4_000]);
    const high = new FeedReadBackoff(1_000, 8_000, () => 0.999999);
    expect(Math.round(high.next())).toBe(1_000);
    high.reset();
    expect(Math.round(high.next(3_000))).toBe(3_000);
  });
});

describe("retryAfterMs", () => {
  it("reads the SDK's retryAfterInMs, else the x-ms-retry-after-ms header its change feed iterator keeps", () => {
    expect(retryAfterMs({ code: 429, retryAfterInMs: 250 })).toBe(250);
    // ChangeFeedForEpkRange rethrows a 429 as a new error with only code and headers.
    expect(retryAfterMs({ code: 429, headers: { "x-ms-retry-after-ms": "1200" } })).toBe(1_200);
    expect(retryAfterMs({ code: 429, retryAfterInMs: 0, headers: { "x-ms-retry-after-ms": "9" } })).toBe(0);
    for (const bad of [
      undefined,
      null,
      {},
      { headers: { "x-ms-retry-after-ms": "" } },
      { headers: { "x-ms-retry-after-ms": "-5" } },
      { retryAfterInMs: Number.NaN },
    ])
      expect(retryAfterMs(bad)).toBeUndefined();
  });
});
