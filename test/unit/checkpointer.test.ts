import { describe, expect, it } from "vitest";
import { CoalescingCheckpointer } from "../../src/shared/changefeed/processing/worker.js";

describe("CoalescingCheckpointer", () => {
  it("keeps one write in flight and writes only the newest etag submitted meanwhile", async () => {
    const writes: string[] = [];
    const written: [string, number][] = [];
    let release: () => void = () => {};
    const c = new CoalescingCheckpointer(
      (etag) => {
        writes.push(etag);
        return new Promise<void>((r) => {
          release = r;
        });
      },
      (etag, n) => written.push([etag, n]),
    );
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
    const c = new CoalescingCheckpointer(
      async (etag) => {
        writes.push(etag);
        throw new Error("lease lost");
      },
      () => {},
    );
    c.submit('"1"', 1);
    await expect(c.flush()).rejects.toThrow("lease lost");
    c.submit('"2"', 1);
    await expect(c.flush()).rejects.toThrow("lease lost");
    expect(() => c.throwIfFailed()).toThrow("lease lost");
    expect(writes).toEqual(['"1"']);
  });
});
