/**
 * Checkpoint coalescing, on a fake clock: the checkpointer alone (one write in flight, held checkpoints and
 * their age limit) and a partition worker over a scripted reader (which checkpoints a backlog, an idle feed,
 * a slow read, a retried batch and a stop write).
 */
import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { ChangeFeedDefaults } from "../../packages/changefeed/src/options.js";
import { CoalescingCheckpointer } from "../../packages/changefeed/src/processing/checkpointer.js";
import type { FeedPage } from "../../packages/changefeed/src/processing/feed-reader.js";
import { PartitionWorker, type WorkerExit } from "../../packages/changefeed/src/processing/worker.js";
import { FakeClock } from "../../packages/core/src/clock.js";

describe("CoalescingCheckpointer", () => {
  it("keeps one write in flight and writes only the newest etag submitted meanwhile", async () => {
    const writes: string[] = [];
    const written: [string, number][] = [];
    let release: () => void = () => {};
    const c = new CoalescingCheckpointer({
      write: (etag) => {
        writes.push(etag);
        return new Promise<void>((r) => {
          release = r;
        });
      },
      written: (etag, n) => written.push([etag, n]),
    });
    c.submit('"1"', 10);
    c.submit('"2"', 10);
    c.submit('"3"', 5);
    expect(writes).toEqual(['"1"']);
    release();
    await new Promise((r) => setTimeout(r, 0));
    expect(writes).toEqual(['"1"', '"3"']);
    release();
    await c.flush();
    expect(written).toEqual([
      ['"1"', 10],
      ['"3"', 15],
    ]);
  });

  it("keeps a failure and rethrows it, writing nothing after it", async () => {
    const writes: string[] = [];
    const c = new CoalescingCheckpointer({
      write: async (etag) => {
        writes.push(etag);
        throw new Error("lease lost");
      },
      written: () => {},
    });
    c.submit('"1"', 1);
    await expect(c.flush()).rejects.toThrow("lease lost");
    c.submit('"2"', 1);
    await expect(c.flush()).rejects.toThrow("lease lost");
    expect(() => c.throwIfFailed()).toThrow("lease lost");
    expect(writes).toEqual(['"1"']);
  });

  it("holds a deferred checkpoint, replaces it with the next one, and writes it on commit with every batch counted", async () => {
    const clock = new FakeClock();
    const written: [string, number][] = [];
    const c = new CoalescingCheckpointer({
      write: async () => {},
      written: (etag, n) => written.push([etag, n]),
      maxDelay: 1_000,
      clock,
    });
    expect(c.defer('"1"', 100)).toBe(false);
    expect(c.defer('"2"', 100)).toBe(false);
    await clock.advance(500);
    expect(written).toEqual([]);
    expect(c.heldDocuments).toBe(200);
    c.commit();
    await c.flush();
    expect(written).toEqual([['"2"', 200]]);
    expect(c.heldDocuments).toBe(0);
  });

  it("writes a held checkpoint maxDelay after the oldest batch it covers, even while newer ones replace it", async () => {
    const clock = new FakeClock();
    const writtenAt: [string, number, number][] = [];
    const c = new CoalescingCheckpointer({
      write: async () => {},
      written: (etag, n) => writtenAt.push([etag, n, clock.monotonicNow()]),
      maxDelay: 1_000,
      clock,
    });
    for (let i = 1; i <= 7; i++) {
      c.defer(`"${i}"`, 10);
      await clock.advance(300);
    }
    // Batches at 0, 300, 600, 900 → written at 1000 (etag 4); 1200..1800 held from 1200 → written at 2200.
    expect(writtenAt).toEqual([['"4"', 40, 1_000]]);
    await clock.advance(1_000);
    expect(writtenAt).toEqual([
      ['"4"', 40, 1_000],
      ['"7"', 30, 2_200],
    ]);
  });

  it("with maxDelay 0 writes every deferred checkpoint at once (a checkpoint per batch)", async () => {
    const written: string[] = [];
    const c = new CoalescingCheckpointer({ write: async () => {}, written: (etag) => written.push(etag) });
    expect(c.defer('"1"', 1)).toBe(true);
    await c.flush();
    expect(c.defer('"2"', 1)).toBe(true);
    await c.flush();
    expect(written).toEqual(['"1"', '"2"']);
  });

  it("close drops the held checkpoint and its timer", async () => {
    const clock = new FakeClock();
    const written: string[] = [];
    const c = new CoalescingCheckpointer({
      write: async () => {},
      written: (etag) => written.push(etag),
      maxDelay: 1_000,
      clock,
    });
    c.defer('"1"', 1);
    c.close();
    await clock.advance(5_000);
    expect(written).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });
});

type Doc = { id: string };
type Step = FeedPage<Doc> | Error | { wait: number; page: FeedPage<Doc> };

const changes = (n: number): FeedPage<Doc> => ({
  kind: "changes",
  items: [{ id: `d${n}` }],
  etag: `"${n}"`,
  requestCharge: 1,
  sessionToken: undefined,
});
const empty: FeedPage<Doc> = { kind: "empty", etag: undefined, requestCharge: 1, sessionToken: undefined };

/** A worker over a scripted reader on a fake clock; records deliveries and the lease writes (etag, fake ms). */
function scripted(
  clock: FakeClock,
  script: (n: number) => Step,
  o: { maxCheckpointDelay?: number; handler?: (docs: Doc[], signal: AbortSignal) => Promise<void> } = {},
) {
  const delivered: string[] = [];
  const checkpoints: [string, number][] = [];
  const abort = new AbortController();
  let reads = 0;
  const worker = new PartitionWorker<Doc>({
    lease: {
      leaseToken: "0",
      feedRange: { min: "", max: "FF" },
      partitionKeyRangeId: "0",
      continuationToken: '"0"',
      checkpoint: async (etag) => {
        checkpoints.push([etag, clock.monotonicNow()]);
      },
    },
    monitored: {} as Container,
    handler: async (docs, ctx) => {
      await o.handler?.(docs, ctx.signal);
      delivered.push(...docs.map((d) => d.id));
    },
    errorPolicy: { kind: "retry", initialDelay: 100, maxDelay: 100 },
    startPosition: { kind: "beginning" },
    feedPollDelay: 5_000,
    maxItemCount: undefined,
    maxCheckpointDelay: o.maxCheckpointDelay,
    allVersions: false,
    events: { checkpointed: () => {}, handlerFailed: () => {}, readFailed: () => {}, deadLettered: () => {} },
    processorName: "p",
    clock,
    createReader: () => ({
      next: async () => {
        const step = script(reads++);
        if (step instanceof Error) throw step;
        if ("wait" in step) {
          await clock.sleep(step.wait);
          return step.page;
        }
        return step;
      },
    }),
  });
  let exit: WorkerExit | undefined;
  void worker.run(abort.signal).then((e) => {
    exit = e;
  });
  return { delivered, checkpoints, abort, exit: () => exit, reads: () => reads };
}

describe("PartitionWorker checkpoint coalescing", () => {
  it("checkpoints a backlog once, when the feed runs dry: the next page in hand replaces the checkpoint", async () => {
    const clock = new FakeClock();
    const w = scripted(clock, (n) => (n < 50 ? changes(n + 1) : empty));
    await clock.advance(1);
    expect(w.delivered).toHaveLength(50);
    expect(w.delivered.slice(0, 3)).toEqual(["d1", "d2", "d3"]);
    // One lease write for 50 pages (the old worker wrote one per page); the newest etag, never a stale one.
    expect(w.checkpoints).toEqual([['"50"', 0]]);
    w.abort.abort();
  });

  it("with maxCheckpointDelay 0 writes one checkpoint per page, in order", async () => {
    const clock = new FakeClock();
    const w = scripted(clock, (n) => (n < 5 ? changes(n + 1) : empty), { maxCheckpointDelay: 0 });
    await clock.advance(1);
    expect(w.checkpoints.map(([etag]) => etag)).toEqual(['"1"', '"2"', '"3"', '"4"', '"5"']);
    w.abort.abort();
  });

  it("writes a held checkpoint after maxCheckpointDelay while pages keep coming (bounded re-delivery)", async () => {
    const clock = new FakeClock();
    const limit = ChangeFeedDefaults.maxCheckpointDelay;
    // Each read takes 250 ms and always brings changes: without the limit nothing would ever be written.
    const w = scripted(clock, (n) => ({ wait: 250, page: changes(n + 1) }));
    await clock.advance(10_000);
    const times = w.checkpoints.map(([, at]) => at);
    expect(times.length).toBeGreaterThanOrEqual(Math.floor(10_000 / (limit + 250)));
    expect(times.length).toBeLessThanOrEqual(10_000 / limit);
    // Between a batch being handled and a write covering it: never more than the limit.
    const handledAt = (etag: string) => Number(JSON.parse(etag)) * 250;
    for (const [etag, at] of w.checkpoints) expect(at - handledAt(etag)).toBeLessThanOrEqual(limit);
    w.abort.abort();
  });

  it("writes the held checkpoint when the next read is slow, without waiting for it", async () => {
    const clock = new FakeClock();
    const w = scripted(clock, (n) => (n === 0 ? changes(1) : { wait: 30_000, page: empty }));
    await clock.advance(ChangeFeedDefaults.maxCheckpointDelay - 1);
    expect(w.checkpoints).toEqual([]);
    await clock.advance(1);
    expect(w.checkpoints).toEqual([['"1"', ChangeFeedDefaults.maxCheckpointDelay]]);
    w.abort.abort();
  });

  it("writes the held checkpoint while the next batch is being retried, and never checkpoints the failing batch", async () => {
    const clock = new FakeClock();
    const w = scripted(clock, (n) => (n < 2 ? changes(n + 1) : empty), {
      handler: async (docs) => {
        if (docs[0].id === "d2") throw new Error("handler fails");
      },
    });
    await clock.advance(ChangeFeedDefaults.maxCheckpointDelay + 500);
    expect(w.delivered).toEqual(["d1"]);
    expect(w.checkpoints).toEqual([['"1"', ChangeFeedDefaults.maxCheckpointDelay]]);
    w.abort.abort();
    await clock.advance(1);
    expect(w.checkpoints.map(([etag]) => etag)).toEqual(['"1"']);
  });

  it("on stop writes the last handled batch's checkpoint, not the page read ahead", async () => {
    const clock = new FakeClock();
    let started: () => void = () => {};
    const inHandler = new Promise<void>((r) => {
      started = r;
    });
    const w = scripted(clock, (n) => changes(n + 1), {
      handler: async (docs, signal) => {
        if (docs[0].id === "d3") {
          started();
          await clock.sleep(60_000, signal);
        }
      },
    });
    await inHandler;
    expect(w.checkpoints).toEqual([]);
    w.abort.abort();
    await clock.advance(1);
    expect(w.exit()).toEqual({ kind: "aborted" });
    // d3's handler returned after the stop (its signal fired) and d4 was only read ahead: the lease resumes
    // after d2, so both are delivered again by the next owner.
    expect(w.delivered).toEqual(["d1", "d2", "d3"]);
    expect(w.checkpoints.map(([etag]) => etag)).toEqual(['"2"']);
    expect(w.reads()).toBe(4);
  });
});
