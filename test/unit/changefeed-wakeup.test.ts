/**
 * processor.wake(): a worker waiting out feedPollDelay after an empty read reads again at once, and a wake that
 * comes while a read is in flight makes the worker skip the next wait (the read may have missed the write).
 * Fake clock, scripted reader.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import type { FeedPage } from "../../packages/changefeed/src/processing/feed-reader.js";
import { FeedPollWakeup } from "../../packages/changefeed/src/processing/wakeup.js";
import { PartitionWorker } from "../../packages/changefeed/src/processing/worker.js";
import { FakeClock } from "../../packages/core/src/clock.js";

const POLL = 10_000;
const empty: FeedPage<{ id: string }> = {
  kind: "empty",
  etag: '"2"',
  requestCharge: 1,
  sessionToken: undefined,
};

function worker(clock: FakeClock, wakeup: FeedPollWakeup, onRead: (n: number) => void = () => {}) {
  const readsAt: number[] = [];
  const abort = new AbortController();
  const w = new PartitionWorker<{ id: string }>({
    lease: {
      leaseToken: "0",
      feedRange: { min: "", max: "FF" },
      partitionKeyRangeId: "0",
      continuationToken: '"1"',
      checkpoint: async () => {},
    },
    monitored: {} as Container,
    handler: async () => {},
    errorPolicy: { kind: "retry" },
    startPosition: { kind: "beginning" },
    feedPollDelay: POLL,
    maxItemCount: undefined,
    allVersions: false,
    events: { checkpointed: () => {}, handlerFailed: () => {}, readFailed: () => {}, deadLettered: () => {} },
    processorName: "p",
    clock,
    wakeup,
    createReader: () => ({
      next: async () => {
        readsAt.push(clock.monotonicNow());
        onRead(readsAt.length);
        return empty;
      },
    }),
  });
  void w.run(abort.signal);
  return { readsAt, abort };
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe("feed-poll wake-up", () => {
  it("without a wake, the worker waits feedPollDelay between empty reads", async () => {
    const clock = new FakeClock();
    const w = worker(clock, new FeedPollWakeup());
    await settle();
    await clock.advance(POLL - 1);
    expect(w.readsAt).toEqual([0]);
    await clock.advance(1);
    await settle();
    expect(w.readsAt).toEqual([0, POLL]);
    w.abort.abort();
  });

  it("a wake during the wait reads at once, without time passing", async () => {
    const clock = new FakeClock();
    const wakeup = new FeedPollWakeup();
    const w = worker(clock, wakeup);
    await settle();
    await clock.advance(100);
    wakeup.wake();
    await settle();
    expect(w.readsAt).toEqual([0, 100]);
    w.abort.abort();
  });

  it("a wake while a read is in flight skips the next wait once", async () => {
    const clock = new FakeClock();
    const wakeup = new FeedPollWakeup();
    // The first read is overtaken by a write (wake) before it returns: the worker must read again at once.
    const w = worker(clock, wakeup, (n) => {
      if (n === 1) wakeup.wake();
    });
    await settle();
    expect(w.readsAt).toEqual([0, 0]);
    await clock.advance(POLL - 1);
    expect(w.readsAt).toEqual([0, 0]);
    w.abort.abort();
  });
});
