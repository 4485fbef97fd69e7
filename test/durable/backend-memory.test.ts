/**
 * The memory backend (packages/devhost/src/durable/memory-backend/): the conformance suite every backend passes,
 * then what only this one promises — time from its clock, one lease, pages of at most 100 documents in write
 * order, none delivered inside the writer's call stack, a refused token's status.
 */
import { FakeClock } from "@cosmos-feed/core/testing";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { TaskHubStorageError } from "../../packages/devhost/src/durable/backend.js";
import type { AnyDoc } from "../../packages/devhost/src/durable/documents.js";
import {
  InvalidContinuationTokenError,
  MEMORY_LEASE,
  MemoryBackend,
} from "../../packages/devhost/src/durable/memory-backend/index.js";
import {
  feedOptions,
  instance,
  message,
  startedInstance,
  stopWithin,
  timer,
} from "./backend-conformance/fixtures.js";
import { backendConformance } from "./backend-conformance.js";

backendConformance("memory", async () => ({
  backend: new MemoryBackend({ hubName: "conformance" }),
  close: async () => {},
}));

const watching = () => ({ errors: [] as unknown[], lost: [] as string[], acquired: [] as string[] });

describe("memory backend", () => {
  it("stamps each write with a new etag and the clock's time; a start a minute old is pending work", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const b = new MemoryBackend({ hubName: "h", clock });
    await b.createInstance(startedInstance("h", "i"));
    const first = await b.readInstance("i");
    expect(first?._ts).toBe(Date.UTC(2026, 0, 1) / 1000);
    expect((await b.scanPending(clock.now(), clock.now())).staged).toEqual([]);
    await clock.advance(61_000);
    const { staged } = await b.scanPending(clock.now(), clock.now());
    expect(staged.map((d) => [d.instanceId, d._etag])).toEqual([["i", first?._etag]]);
    await b.replaceInstance(instance("h", "i"), first?._etag ?? "");
    const second = await b.readInstance("i");
    expect(second?._etag).not.toBe(first?._etag);
    expect(second?._ts).toBe(Date.UTC(2026, 0, 1) / 1000 + 61);
  });

  it("refuses a token it did not give with statusCode 400, and a commit's document of another partition", async () => {
    const b = new MemoryBackend({ hubName: "h" });
    const refused = await b.queryInstances({ continuationToken: "x" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidContinuationTokenError);
    expect(refused).toMatchObject({ statusCode: 400 });
    const commit = b.completeOrchestrationWorkItem({
      hub: "h",
      instanceId: "i",
      instance: { body: instance("h", "i") },
      upserts: [message("h", "other", "m", 1)],
      deletes: [],
      token: "t",
    });
    await expect(commit).rejects.toBeInstanceOf(TaskHubStorageError);
    expect((await b.readInstanceState("i")).ids.size).toBe(0);
  });

  it("holds one lease: the earliest started feed has it, a later one waits, and `leases` is undefined", async () => {
    const b = new MemoryBackend({ hubName: "h" });
    const [w1, w2] = [watching(), watching()];
    const first = b.openDispatch(async () => {}, feedOptions("first", w1));
    const second = b.openDispatch(async () => {}, feedOptions("second", w2));
    expect(first.instanceName).toBeUndefined();
    await first.start();
    await second.start();
    expect([first.ownedLeaseTokens(), second.ownedLeaseTokens()]).toEqual([[MEMORY_LEASE], []]);
    expect([w1.acquired, w2.acquired]).toEqual([[MEMORY_LEASE], []]);
    expect(first.leases).toBeUndefined();
    await stopWithin(first);
    expect([first.ownedLeaseTokens(), second.ownedLeaseTokens()]).toEqual([[], [MEMORY_LEASE]]);
    expect([w1.lost, w2.acquired]).toEqual([[MEMORY_LEASE], [MEMORY_LEASE]]);
    await stopWithin(second);
  });

  it("delivers pages of at most 100 documents in write order, the latest version of each, never inside the writer's call stack", async () => {
    const b = new MemoryBackend({ hubName: "h" });
    const pages: AnyDoc[][] = [];
    const feed = b.openDispatch(
      async (docs) => {
        pages.push(docs);
      },
      feedOptions("f", watching()),
    );
    await feed.start();
    const upsert = (fireAtMs: number) =>
      b.completeOrchestrationWorkItem({
        hub: "h",
        instanceId: "i",
        upserts: [timer("h", "i", 1, fireAtMs)],
        deletes: [],
        token: "t",
      });
    const writes: Promise<unknown>[] = [upsert(1)];
    for (let i = 0; i < 250; i++) {
      writes.push(b.addMessage(message("h", "i", `m${String(i).padStart(3, "0")}`, i)));
      expect(pages).toHaveLength(0);
    }
    // Written again before the feed read it: delivered once, where its last write put it.
    writes.push(upsert(2));
    await Promise.all(writes);
    await waitUntil("every document delivered", () => pages.flat().some((d) => d.kind === "timer"));
    await stopWithin(feed);
    expect(Math.max(...pages.map((p) => p.length))).toBeLessThanOrEqual(100);
    const ids = pages.flat().map((d) => d.id);
    expect(ids).toEqual([
      ...Array.from({ length: 250 }, (_v, i) => `msg-m${String(i).padStart(3, "0")}`),
      "timer-exec1-1",
    ]);
    expect(pages.flat().at(-1)).toMatchObject({ kind: "timer", fireAtMs: 2 });
  });
});
