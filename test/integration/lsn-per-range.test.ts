import type { Container } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { keysPerRange } from "../support/pending-per-range.js";
import { drainFeed, readFeed } from "../support/raw-feed.js";
import { emulatorsOnOneFolder, lsnOf, twoRangeContainer } from "../support/restartable-emulator.js";

/*
 * Each physical range numbers its own changes (as the service's partitions do): `_lsn`, the session token and the
 * continuation of a range are that range's; a split's children go on from the parent's LSN, a merge from the
 * higher of its parents'; a restart of the data folder keeps every range's LSN.
 */

const { start, stop } = emulatorsOnOneFolder("cosmos-lsn-");

async function write(c: Container, pk: string, ids: string[]): Promise<void> {
  for (const id of ids) await c.items.create({ id, pk });
}

describe("per-range LSNs", () => {
  it("count per range, go on from the parent through a split and a merge, and survive a restart", async () => {
    const t = await start();
    const server = t.emulator;
    const c = await twoRangeContainer(t, "lsn");
    const [r0, r1] = await keysPerRange(c, 2);
    const range0Ids = ["a1", "a2", "a3", "a4", "a5", "a6", "a7"];
    await write(c, r0.keys[0], range0Ids);
    await write(c, r1.keys[0], ["b1", "b2", "b3", "b4", "b5"]);
    const first0 = await drainFeed(server, "lsn", "docs", { rangeId: r0.id });
    const first1 = await drainFeed(server, "lsn", "docs", { rangeId: r1.id });
    expect(first0.docs.map((d) => d._lsn)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(first1.docs.map((d) => d._lsn)).toEqual([1, 2, 3, 4, 5]);
    expect([first0.etag, first1.etag]).toEqual(['"7"', '"5"']);
    const now1 = await readFeed(server, "lsn", "docs", { rangeId: r1.id, etag: "*" });
    expect(now1.sessionToken).toBe(`${r1.id}:-1#5`);

    // Split range 1: both children go on from its LSN 5, so its continuation reads on either.
    const children = server.splitRange("lsn", "docs", r1.id);
    for (const id of children) {
      const page = await readFeed(server, "lsn", "docs", { rangeId: id, etag: '"5"' });
      expect(page.status).toBe(304);
      expect(lsnOf(page.sessionToken)).toBe(5);
    }
    const afterSplit = await keysPerRange(c, 2);
    const left = afterSplit.find((r) => r.id === children[0]);
    const right = afterSplit.find((r) => r.id === children[1]);
    if (!left || !right) throw new Error("the children are not listed");
    await write(c, left.keys[0], ["l1", "l2"]);
    await write(c, right.keys[0], ["r1"]);
    const leftNew = await drainFeed(server, "lsn", "docs", { rangeId: left.id, etag: '"5"' });
    const rightNew = await drainFeed(server, "lsn", "docs", { rangeId: right.id, etag: '"5"' });
    expect(leftNew.docs.map((d) => [d.id, d._lsn])).toEqual([
      ["l1", 6],
      ["l2", 7],
    ]);
    expect(rightNew.docs.map((d) => [d.id, d._lsn])).toEqual([["r1", 6]]);

    const leftAll = await drainFeed(server, "lsn", "docs", { rangeId: left.id });

    // Merge range 0 (LSN 7) with the left child (LSN 7): the merged range goes on from 7; each parent's
    // continuation, read with that parent's EPK window, sees exactly that parent's later changes.
    const ranges = (await c.readPartitionKeyRanges().fetchAll()).resources;
    const epkOf = (id: string) => {
      const r = ranges.find((x) => x.id === id);
      if (!r) throw new Error(`range ${id} is not listed`);
      return { min: r.minInclusive, max: r.maxExclusive };
    };
    const window0 = epkOf(r0.id);
    const windowLeft = epkOf(left.id);
    const merged = server.mergeRanges("lsn", "docs", r0.id, left.id);
    await write(c, r0.keys[1], ["a8"]);
    const from0 = await drainFeed(server, "lsn", "docs", { rangeId: merged, etag: '"7"', epk: window0 });
    expect(from0.docs.map((d) => [d.id, d._lsn])).toEqual([["a8", 8]]);
    const fromLeft = await drainFeed(server, "lsn", "docs", {
      rangeId: merged,
      etag: '"7"',
      epk: windowLeft,
    });
    expect(fromLeft.docs).toEqual([]);
    // The whole merged range a change at a time: both parents have LSNs 6 and 7 (a6/l1, a7/l2); a page keeps
    // changes sharing an LSN together, so none is lost or repeated.
    const whole = await drainFeed(server, "lsn", "docs", { rangeId: merged, maxItems: 1 });
    expect(whole.docs.map((d) => d.id).sort()).toEqual(
      [...range0Ids, "a8", ...leftAll.docs.map((d) => d.id)].sort(),
    );
    expect(whole.docs.map((d) => d._lsn)).toEqual([...whole.docs.map((d) => d._lsn)].sort((a, b) => a - b));
    expect(lsnOf((await readFeed(server, "lsn", "docs", { rangeId: merged, etag: "*" })).sessionToken)).toBe(
      8,
    );

    // A restart keeps every range's LSN: the next write in each goes on from it.
    const before = await Promise.all(
      [merged, right.id].map(async (id) =>
        lsnOf((await readFeed(server, "lsn", "docs", { rangeId: id, etag: "*" })).sessionToken),
      ),
    );
    await stop(t);
    const t2 = await start();
    const c2 = t2.client.database("lsn").container("docs");
    const after = await Promise.all(
      [merged, right.id].map(async (id) =>
        lsnOf((await readFeed(t2.emulator, "lsn", "docs", { rangeId: id, etag: "*" })).sessionToken),
      ),
    );
    expect(after).toEqual(before);
    await write(c2, right.keys[0], ["r2"]);
    const rightAfter = await drainFeed(t2.emulator, "lsn", "docs", { rangeId: right.id, etag: '"6"' });
    expect(rightAfter.docs.map((d) => [d.id, d._lsn])).toEqual([["r2", 7]]);
  });

  it("read over several ranges: commit order, one LSN per range in the continuation, through a split", async () => {
    const t = await start();
    const server = t.emulator;
    const c = await twoRangeContainer(t, "multi");
    const [r0, r1] = await keysPerRange(c, 1);
    const order = ["m0", "n0", "n1", "m1", "n2"];
    for (const id of order) await c.items.create({ id, pk: id.startsWith("m") ? r0.keys[0] : r1.keys[0] });
    // No range named: the whole container, in commit order, 2 changes a page.
    const first = await readFeed(server, "multi", "docs", { maxItems: 2 });
    expect(first.docs.map((d) => d.id)).toEqual(["m0", "n0"]);
    expect(first.etag).toBe(`"${r0.id}:1,${r1.id}:1"`);
    expect(first.sessionToken).toBe(`${r0.id}:-1#2,${r1.id}:-1#3`);
    const rest = await drainFeed(server, "multi", "docs", { maxItems: 2, etag: first.etag ?? "" });
    expect(rest.docs.map((d) => d.id)).toEqual(["n1", "m1", "n2"]);
    expect(rest.etag).toBe(`"${r0.id}:2,${r1.id}:3"`);

    // After a split of range 1 the same continuation goes on in both children, from range 1's LSN.
    const children = server.splitRange("multi", "docs", r1.id);
    await c.items.create({ id: "n3", pk: r1.keys[0] });
    await c.items.create({ id: "m2", pk: r0.keys[0] });
    const after = await drainFeed(server, "multi", "docs", { maxItems: 10, etag: rest.etag ?? "" });
    expect(after.docs.map((d) => [d.id, d._lsn])).toEqual([
      ["n3", 4],
      ["m2", 3],
    ]);
    expect(after.etag?.split(",")).toHaveLength(1 + children.length);

    // Continuations it never issued: 400, not a 500.
    for (const etag of ['"0:x"', '"0:1,0:2"', `"${r0.id}:99"`, '":5"']) {
      expect((await readFeed(server, "multi", "docs", { etag })).status).toBe(400);
    }
  });
});
