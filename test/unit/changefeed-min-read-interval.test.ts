/**
 * minReadInterval: a worker whose pages keep bringing changes reads no more often than once per interval (the dev
 * host's task hub reads its feed as a backstop), while without it the next page is read as soon as the last one
 * is handled. Fake clock, scripted reader that always has changes.
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { resolveOptions } from "../../packages/changefeed/src/options.js";
import type { FeedPage } from "../../packages/changefeed/src/processing/feed-reader.js";
import { PartitionWorker } from "../../packages/changefeed/src/processing/worker.js";
import { FakeClock } from "../../packages/core/src/clock.js";

const INTERVAL = 500;

function busyWorker(clock: FakeClock, minReadInterval: number | undefined) {
  const readsAt: number[] = [];
  const abort = new AbortController();
  let n = 0;
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
    feedPollDelay: 10_000,
    ...(minReadInterval !== undefined ? { minReadInterval } : {}),
    maxItemCount: undefined,
    allVersions: false,
    events: { checkpointed: () => {}, handlerFailed: () => {}, readFailed: () => {}, deadLettered: () => {} },
    processorName: "p",
    clock,
    createReader: () => ({
      next: async (): Promise<FeedPage<{ id: string }>> => {
        readsAt.push(clock.monotonicNow());
        n++;
        return {
          kind: "changes",
          items: [{ id: String(n) }],
          etag: `"${n + 1}"`,
          requestCharge: 1,
          sessionToken: undefined,
        };
      },
    }),
  });
  void w.run(abort.signal);
  return { readsAt, abort };
}

const settle = async () => {
  for (let i = 0; i < 50; i++) await Promise.resolve();
};

describe("minReadInterval", () => {
  it("spaces the reads of a busy feed by the interval", async () => {
    const clock = new FakeClock();
    const w = busyWorker(clock, INTERVAL);
    await settle();
    for (let i = 0; i < 4; i++) {
      await clock.advance(INTERVAL);
      await settle();
    }
    w.abort.abort();
    expect(w.readsAt.slice(0, 5)).toEqual([0, INTERVAL, 2 * INTERVAL, 3 * INTERVAL, 4 * INTERVAL]);
    expect(w.readsAt.length).toBeLessThanOrEqual(6);
  });

  it("without it, reads again as soon as a page is handled (no time passes)", async () => {
    const clock = new FakeClock();
    const w = busyWorker(clock, undefined);
    await settle();
    w.abort.abort();
    expect(w.readsAt.length).toBeGreaterThan(3);
    expect(new Set(w.readsAt)).toEqual(new Set([0]));
  });

  it("refuses a negative interval", () => {
    expect(() =>
      resolveOptions(
        { monitoredContainer: {} as Container, leaseContainer: {} as Container, minReadInterval: -1 },
        () => "host",
      ),
    ).toThrow(/minReadInterval/);
  });
});
