/**
 * An instance's newest history events ride on its instance document (`historyTail`, documents.ts) until they pass
 * DURABLE_LIMITS.inlineHistoryBytes; then they and the tail are written as chunk documents. Pure: the work item
 * plans (work-item-plan.ts) and the snapshots read back from what they write (snapshotOf), and the staged commit's
 * marked document of a new instance.
 */
import { describe, expect, it } from "vitest";
import { planCommit } from "../../packages/devhost/src/durable/cosmos-backend/commit-plan.js";
import {
  type AnyDoc,
  docBytes,
  type PartitionSnapshot,
  snapshotOf,
} from "../../packages/devhost/src/durable/documents.js";
import { DURABLE_LIMITS } from "../../packages/devhost/src/durable/limits.js";
import {
  type HistoryEvent,
  HistoryEventType,
  type OrchestrationState,
  type WorkItemResult,
} from "../../packages/devhost/src/durable/types.js";
import {
  planWorkItem,
  snapshotAfter,
  type WorkItemPlan,
} from "../../packages/devhost/src/durable/work-item-plan.js";
import { messageDoc } from "./hub-docs.js";

const AT = "2026-01-01T00:00:00.000Z";
let eventIds = 0;

/** A TaskScheduled event whose input is `inputBytes` long. */
const scheduled = (inputBytes = 10): HistoryEvent => ({
  EventType: HistoryEventType.TaskScheduled,
  EventId: eventIds++,
  IsPlayed: false,
  Timestamp: AT,
  Name: "a",
  Input: "x".repeat(inputBytes),
});

const state = (history: HistoryEvent[], executionId = "e1"): OrchestrationState => ({
  instanceId: "i",
  executionId,
  name: "o",
  input: null,
  status: "Running",
  output: null,
  customStatus: null,
  createdTime: AT,
  lastUpdatedTime: AT,
  engine: {},
  history,
});

/** The plan of a work item that moves `snap` to `next`. */
function plan(snap: PartitionSnapshot, next: OrchestrationState): WorkItemPlan {
  const result: WorkItemResult = {
    state: next,
    newEvents: next.history.slice(snap.history.length),
    work: [],
    consumed: [],
    dropped: [],
    invocations: 1,
  };
  return planWorkItem({
    hub: "hub",
    instanceId: "i",
    snap,
    result,
    deletes: [],
    owner: "me",
    now: 0,
    lockedUntil: 1,
    newMessageDoc: () => {
      throw new Error("no messages here");
    },
  });
}

/** What a store holds after `p` on top of `stored` (documents by id), read back as a snapshot. */
function storedAfter(stored: Map<string, AnyDoc>, p: WorkItemPlan): PartitionSnapshot {
  for (const d of p.upserts) stored.set(d.id, d);
  if (p.body) stored.set(p.body.id, { ...p.body, _etag: `e${stored.size}` });
  return snapshotOf([...stored.values()]);
}

const bytesOf = (events: HistoryEvent[]) => events.reduce((n, e) => n + docBytes(e), 0);

describe("the history tail on the instance document", () => {
  it("keeps a short history in the instance document: one document per commit, read back in order", () => {
    const stored = new Map<string, AnyDoc>();
    let snap = snapshotOf([]);
    const history: HistoryEvent[] = [];
    for (let step = 0; step < 4; step++) {
      history.push(scheduled(), scheduled());
      const p = plan(snap, state([...history]));
      expect(p.upserts).toEqual([]);
      expect(p.body?.historyChunks).toBe(0);
      expect(p.body?.historyTail).toEqual(history);
      expect(p.body?.historyTailBytes).toBe(bytesOf(history));
      snap = storedAfter(stored, p);
      expect(snap.history).toEqual(history);
      // The snapshot the dispatcher caches is the one the store now holds.
      expect(snapshotAfter(snapshotOf([]), p, "x").history).toEqual(history);
    }
    expect([...stored.keys()]).toEqual(["instance"]);
  });

  it("writes the tail and the new events as a chunk once they pass the limit, and starts a new tail after it", () => {
    const stored = new Map<string, AnyDoc>();
    const big = Math.floor(DURABLE_LIMITS.inlineHistoryBytes / 3);
    const first = [scheduled(big), scheduled(big)];
    let snap = storedAfter(stored, plan(snapshotOf([]), state(first)));
    expect(snap.instance?.historyTail).toHaveLength(2);
    // A third and fourth pass the limit: all four go to chunk 0, the tail is emptied.
    const second = [...first, scheduled(big), scheduled(big)];
    const p = plan(snap, state(second));
    expect(p.upserts.map((d) => d.id)).toEqual(["history-e1-000000"]);
    expect(p.body).toMatchObject({ historyChunks: 1 });
    expect(p.body?.historyTail).toBeUndefined();
    expect(p.body?.historyTailBytes).toBeUndefined();
    snap = storedAfter(stored, p);
    expect(snap.history).toEqual(second);
    // The next events ride on the instance again, after the chunk.
    const third = [...second, scheduled()];
    const q = plan(snap, state(third));
    expect(q.upserts).toEqual([]);
    expect(q.body).toMatchObject({ historyChunks: 1, historyTail: [third[4]] });
    expect(storedAfter(stored, q).history).toEqual(third);
  });

  it("an event larger than the limit goes to a chunk at once", () => {
    const huge = [scheduled(DURABLE_LIMITS.inlineHistoryBytes + 1)];
    const p = plan(snapshotOf([]), state(huge));
    expect(p.upserts.map((d) => d.id)).toEqual(["history-e1-000000"]);
    expect(p.body?.historyTail).toBeUndefined();
  });

  it("a new execution starts with an empty tail: the old one is not carried over, its chunks are stale", () => {
    const stored = new Map<string, AnyDoc>();
    const big = Math.floor(DURABLE_LIMITS.inlineHistoryBytes / 2);
    let snap = storedAfter(stored, plan(snapshotOf([]), state([scheduled(big)])));
    snap = storedAfter(stored, plan(snap, state([...snap.history, scheduled(big), scheduled(big)])));
    expect(snap.instance?.historyChunks).toBe(1);
    snap = storedAfter(stored, plan(snap, state([...snap.history, scheduled()])));
    expect(snap.instance?.historyTail).toHaveLength(1);
    const fresh = [scheduled()];
    const p = plan(snap, state(fresh, "e2"));
    expect(p.body).toMatchObject({ executionId: "e2", historyChunks: 0, historyTail: fresh });
    expect(p.staleHistory).toEqual(["history-e1-000000"]);
    // Read back: the old chunk belongs to another execution, the history is the new one's alone.
    const after = storedAfter(stored, p);
    expect(after.history).toEqual(fresh);
    expect(after.staleHistory).toEqual(["history-e1-000000"]);
  });

  it("a staged commit of a new instance shows it Pending with no history until the commit is whole", () => {
    const p = plan(snapshotOf([]), state([scheduled()]));
    expect(p.body?.historyTail).toHaveLength(1);
    const many = Array.from({ length: 100 }, (_v, i) => messageDoc("hub", "i", String(i), i, 0));
    const staged = planCommit({
      hub: "hub",
      instanceId: "i",
      instance: { body: p.body as NonNullable<WorkItemPlan["body"]> },
      upserts: many,
      deletes: [],
      token: "t",
    });
    expect(staged.kind).toBe("staged");
    if (staged.kind !== "staged") return;
    const marked = staged.deciding[0] as { resourceBody: Record<string, unknown> };
    expect(marked.resourceBody).toMatchObject({ status: "Pending", historyChunks: 0 });
    expect(marked.resourceBody.historyTail).toBeUndefined();
    expect(marked.resourceBody.historyTailBytes).toBeUndefined();
    expect(staged.final.historyTail).toHaveLength(1);
  });
});
