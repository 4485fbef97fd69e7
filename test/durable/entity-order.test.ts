/**
 * entity-order.ts: an orchestration's requests to an entity apply once each and in the order sent — a duplicate
 * is dropped, a request whose predecessor is not applied waits, and waits no longer than the reorder window.
 */
import { describe, expect, it } from "vitest";
import {
  orderOf,
  previousPosition,
  pruneSenders,
  recordApplied,
  type SendersApplied,
} from "../../packages/devhost/src/durable/entity-order.js";
import { DURABLE_LIMITS } from "../../packages/devhost/src/durable/limits.js";
import { type HistoryEvent, HistoryEventType } from "../../packages/devhost/src/durable/types.js";

const from = { parent: "orch", parentExecution: "x1" };
const now = Date.parse("2026-01-01T00:00:00Z");
/** An orchestration's EventSent of an operation request ("op"), or of a lock request or a release. */
const sent = (target: string, id: number, kind: "op" | "lock" | "release" = "op"): HistoryEvent => ({
  EventType: HistoryEventType.EventSent,
  EventId: id,
  IsPlayed: false,
  Timestamp: new Date(now).toISOString(),
  InstanceId: target,
  Name: kind === "release" ? "release" : "op",
  Input: JSON.stringify(
    kind === "lock"
      ? { id: "l", parent: "o", lockset: [{ name: "counter", key: "a" }], pos: 0 }
      : kind === "release"
        ? { parent: "o", id: "l" }
        : { id: `r${id}`, op: "add", signal: true, parent: "o", pos: id },
  ),
});

describe("entity request order", () => {
  it("applies a sender's requests in its order, drops one applied already, lets others through", () => {
    const applied: SendersApplied = {};
    const first = { ...from, pos: 3 };
    const second = { ...from, pos: 7, prev: 3 };
    expect(orderOf(second, applied, now, now)).toBe("wait");
    expect(orderOf(first, applied, now, now)).toBe("apply");
    recordApplied(first, applied, now);
    expect(orderOf(first, applied, now, now)).toBe("duplicate");
    expect(orderOf(second, applied, now, now)).toBe("apply");
    recordApplied(second, applied, now);
    expect(orderOf(second, applied, now, now)).toBe("duplicate");
    // Another execution of the same instance is another sender; the client's requests carry no position.
    expect(orderOf({ parent: "orch", parentExecution: "x2", pos: 3 }, applied, now, now)).toBe("apply");
    expect(orderOf({}, applied, now, now)).toBe("apply");
  });

  it("a request waits for its predecessor no longer than the window; senders older than it are forgotten", () => {
    const late = { ...from, pos: 9, prev: 8 };
    const window = DURABLE_LIMITS.entityReorderWindowMs;
    expect(orderOf(late, {}, now, now + window)).toBe("wait");
    expect(orderOf(late, {}, now, now + window + 1)).toBe("apply");
    const applied: SendersApplied = {};
    recordApplied({ ...from, pos: 1 }, applied, now);
    recordApplied({ parent: "other", parentExecution: "y", pos: 1 }, applied, now + window);
    expect(Object.keys(pruneSenders(applied, now + window + 1))).toEqual(["other|y"]);
  });

  it("the predecessor is the last request to the same entity, in the history or earlier in this episode", () => {
    const history = [sent("@counter@a", 0), sent("@counter@b", 1)];
    expect(previousPosition("@counter@a", history, [])).toBe(0);
    expect(previousPosition("@counter@a", history, [sent("@counter@a", 4)])).toBe(4);
    expect(previousPosition("@counter@c", history, [])).toBeUndefined();
  });

  it("a lock request or a release sent to the entity is not a predecessor (the entity never records them)", () => {
    const history = [sent("@counter@a", 0), sent("@counter@a", 1, "lock"), sent("@counter@a", 2, "release")];
    expect(previousPosition("@counter@a", history, [])).toBe(0);
    expect(previousPosition("@counter@a", [sent("@counter@a", 3, "lock")], [])).toBeUndefined();
  });
});
