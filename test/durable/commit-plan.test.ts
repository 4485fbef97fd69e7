/**
 * The task hub's commit planner keeps every write within Cosmos DB's limits by construction: one transactional batch
 * of at most 100 operations and DURABLE_LIMITS.batchBytes, or a staged commit whose deciding batch holds the instance
 * document and a read of its final part, and whose parts each fit a document and a bulk request. Pure; a fast-check property (fixed seed)
 * over random commits, and the edges one past each limit.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planCommit } from "../../packages/devhost/src/durable/cosmos-backend/commit-plan.js";
import { docBytes, historyChunks, type WorkDoc } from "../../packages/devhost/src/durable/documents.js";
import { DURABLE_LIMITS } from "../../packages/devhost/src/durable/limits.js";
import { type HistoryEvent, HistoryEventType } from "../../packages/devhost/src/durable/types.js";
import { instanceDoc, messageDoc } from "./hub-docs.js";

const instance = instanceDoc("hub", "i", "2026-01-01T00:00:00.000Z");
const message = (n: number, payload = 0) => messageDoc("hub", "i", String(n), n, payload);

function plan(upserts: WorkDoc[], deletes: string[]) {
  return planCommit({
    hub: "hub",
    instanceId: "i",
    instance: { body: instance, ifMatch: "e1" },
    upserts,
    deletes,
    token: "t",
  });
}

describe("commit plans", () => {
  it("writes a commit of exactly 100 operations in one batch, and stages one of 101", () => {
    const ninetyNine = Array.from({ length: 99 }, (_v, i) => message(i));
    const single = plan(ninetyNine, []);
    expect(single.kind).toBe("single");
    if (single.kind === "single") expect(single.ops).toHaveLength(100);
    const staged = plan(ninetyNine, ["one-more"]);
    expect(staged.kind).toBe("staged");
    if (staged.kind === "staged") {
      // The instance as it was, with the mark; and a read of the final part (a swept stage cannot decide).
      expect(staged.deciding).toHaveLength(2);
      expect(staged.deciding[0]).toMatchObject({ ifMatch: "e1" });
      const finalPart = staged.stages.find((s) => s.final !== undefined);
      expect(staged.deciding[1]).toEqual({ operationType: "Read", id: finalPart?.id });
      expect(staged.final.stage).toBeUndefined();
      expect(staged.stages.flatMap((s) => s.upserts)).toHaveLength(99);
      expect(staged.stages.flatMap((s) => s.deletes)).toEqual(["one-more"]);
    }
  });

  it("stages a commit whose bytes pass the batch limit even with few operations", () => {
    const big = [message(1, 700_000), message(2, 700_000), message(3, 700_000)];
    const p = plan(big, []);
    expect(p.kind).toBe("staged");
    if (p.kind === "staged")
      for (const s of p.stages) expect(docBytes(s)).toBeLessThanOrEqual(DURABLE_LIMITS.batchBytes);
  });

  it("keeps every part of any commit within the limits, each write exactly once", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 400_000 }), { maxLength: 400 }),
        fc.integer({ min: 0, max: 400 }),
        (sizes, deleteCount) => {
          const upserts = sizes.map((s, i) => message(i, s));
          const deletes = Array.from({ length: deleteCount }, (_v, i) => `gone-${i}`);
          const p = plan(upserts, deletes);
          if (p.kind === "single") {
            expect(p.ops.length).toBeLessThanOrEqual(DURABLE_LIMITS.batchOperations);
            expect(p.ops).toHaveLength(1 + upserts.length + deletes.length);
            return;
          }
          expect(p.kind).toBe("staged");
          if (p.kind !== "staged") return;
          for (const s of p.stages) {
            // With the guard the store adds, a part's writes are one transactional batch.
            expect(s.upserts.length + s.deletes.length).toBeLessThan(DURABLE_LIMITS.batchOperations);
            expect(docBytes(s)).toBeLessThanOrEqual(DURABLE_LIMITS.batchBytes);
          }
          expect(p.stages.flatMap((s) => s.upserts.map((u) => u.id))).toEqual(upserts.map((u) => u.id));
          expect(p.stages.flatMap((s) => s.deletes)).toEqual(deletes);
          expect(p.stages.map((s) => s.part)).toEqual(p.stages.map((_s, i) => i));
        },
      ),
      { seed: 20_261_126, numRuns: 60 },
    );
  });

  it("cuts history into chunks of at most chunkEvents events and chunkBytes bytes", () => {
    const event = (n: number, size: number): HistoryEvent => ({
      EventType: HistoryEventType.TaskScheduled,
      EventId: n,
      IsPlayed: false,
      Timestamp: "t",
      Input: "y".repeat(size),
    });
    const many = historyChunks(
      "hub",
      "i",
      "e",
      3,
      Array.from({ length: DURABLE_LIMITS.chunkEvents + 1 }, (_v, i) => event(i, 10)),
    );
    expect(many.map((c) => [c.chunk, c.events.length])).toEqual([
      [3, DURABLE_LIMITS.chunkEvents],
      [4, 1],
    ]);
    expect(many[0]?.id).toBe("history-e-000003");
    const heavy = historyChunks("hub", "i", "e", 0, [
      event(0, 500_000),
      event(1, 500_000),
      event(2, 500_000),
    ]);
    for (const c of heavy) expect(docBytes(c.events)).toBeLessThanOrEqual(DURABLE_LIMITS.chunkBytes);
    expect(heavy.flatMap((c) => c.events.map((e) => e.EventId))).toEqual([0, 1, 2]);
  });
});
