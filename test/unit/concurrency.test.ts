import { describe, expect, it } from "vitest";
import { forEachConcurrently } from "../../packages/core/src/concurrency.js";

/** A task the test finishes by hand, so the number running at once is counted, not timed. */
function gate() {
  let open!: () => void;
  let fail!: (e: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { done, open, fail };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("forEachConcurrently", () => {
  it("runs every item, never more than `limit` at once", async () => {
    const gates = Array.from({ length: 7 }, gate);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const all = forEachConcurrently([0, 1, 2, 3, 4, 5, 6], 3, async (i) => {
      started.push(i);
      running++;
      most = Math.max(most, running);
      await gates[i]?.done;
      running--;
    });
    await tick();
    expect(started).toEqual([0, 1, 2]);
    gates[1]?.open();
    await tick();
    expect(started).toEqual([0, 1, 2, 3]);
    for (const g of gates) g.open();
    await all;
    expect(started.sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(most).toBe(3);
  });

  it("rejects with the first error, after the running ones settle, and starts nothing more", async () => {
    const gates = Array.from({ length: 5 }, gate);
    const started: number[] = [];
    const finished: number[] = [];
    const all = forEachConcurrently([0, 1, 2, 3, 4], 2, async (i) => {
      started.push(i);
      await gates[i]?.done;
      finished.push(i);
    });
    await tick();
    gates[0]?.fail(new Error("first"));
    await tick();
    gates[1]?.open();
    await expect(all).rejects.toThrow("first");
    expect(started).toEqual([0, 1]);
    expect(finished).toEqual([1]);
  });

  it("refuses a limit that is not a whole number ≥ 1; an empty list resolves at once", async () => {
    await expect(forEachConcurrently([1], 0, async () => {})).rejects.toThrow(RangeError);
    await expect(forEachConcurrently([1], 1.5, async () => {})).rejects.toThrow(RangeError);
    await expect(forEachConcurrently([], 4, async () => {})).resolves.toBeUndefined();
  });
});
