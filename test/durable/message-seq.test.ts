/**
 * The order of an instance's messages (dispatcher.newMessageDoc's `seq`): strictly increasing on one host however
 * many messages one millisecond holds, so one sender's messages — a client's signals to an entity, one after the
 * other — apply in the order written. A fake clock that never moves is the worst case.
 */
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../packages/core/src/clock.js";
import { OrchestrationDispatcher } from "../../packages/devhost/src/durable/dispatcher.js";
import { MemoryBackend } from "../../packages/devhost/src/durable/memory-backend/index.js";

describe("message order on one host", () => {
  it("gives every message a larger seq than the one before, 2,500 within one millisecond", () => {
    const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
    const dispatcher = new OrchestrationDispatcher({
      // Only newMessageDoc is used: nothing is stored.
      backend: new MemoryBackend({ hubName: "SeqHub", clock }),
      hub: "SeqHub",
      clock,
      owner: "host",
      apply: async () => {
        throw new Error("not used");
      },
      invoke: async () => ({ thrown: new Error("not used") }),
      maxConcurrent: 1,
      maxAttempts: 1,
      maxPayloadBytes: 1_000,
      activityLockMs: 1_000,
      committed: () => {},
      log: () => {},
    });
    const seqs = Array.from(
      { length: 2_500 },
      (_v, i) =>
        dispatcher.newMessageDoc({
          key: `m-${i}`,
          instanceId: "@counter@k",
          event: {
            EventType: 6,
            EventId: -1,
            IsPlayed: false,
            Timestamp: new Date(clock.now()).toISOString(),
          },
        }).seq,
    );
    const backwards = seqs.flatMap((s, i) => (i > 0 && s <= (seqs[i - 1] as number) ? [i] : []));
    expect(backwards).toEqual([]);
  });
});
