import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { keysPerRange } from "../support/pending-per-range.js";
import { drainFeed, readFeed } from "../support/raw-feed.js";
import { emulatorsOnOneFolder, lsnOf, twoRangeContainer } from "../support/restartable-emulator.js";

/*
 * A data folder written before ranges counted their own LSNs: changes keyed by one container-wide LSN
 * (`changes(coll_rid, lsn, …)`), containers saved with `lsnFloor` and a layout without range LSNs. It opens: each
 * change keeps its LSN (so old continuations keep their meaning), every range's counter starts at the container's
 * old LSN, and from then on each range counts its own.
 */

const { dataDir, start, stop } = emulatorsOnOneFolder("cosmos-lsn-legacy-");

/**
 * Rewrites the folder as the previous version wrote it: the container-wide LSN was what is now the commit
 * sequence (the `_etag`s in the saved documents were already made from it).
 */
function toLegacyFormat(dir: string): void {
  const db = new Database(join(dir, "cosmos-emulator.sqlite"));
  db.exec(`
    CREATE TABLE old_changes (
      coll_rid TEXT NOT NULL, lsn INTEGER NOT NULL, op INTEGER NOT NULL, json TEXT NOT NULL,
      at_ms INTEGER NOT NULL, previous_lsn INTEGER NOT NULL, ttl_expired INTEGER NOT NULL,
      PRIMARY KEY (coll_rid, lsn)) WITHOUT ROWID;
    INSERT INTO old_changes SELECT coll_rid, seq, op, json, at_ms, previous_lsn, ttl_expired FROM changes;
    DROP TABLE changes;
    ALTER TABLE old_changes RENAME TO changes;
  `);
  const rows = db.prepare("SELECT rid, json FROM resources WHERE kind = 'container'").all() as {
    rid: string;
    json: string;
  }[];
  for (const r of rows) {
    const saved = JSON.parse(r.json) as {
      seqFloor?: number;
      lsnFloor?: number;
      layout: { ranges: { lastLsn?: number }[] };
    };
    saved.lsnFloor = saved.seqFloor;
    delete saved.seqFloor;
    for (const range of saved.layout.ranges) delete range.lastLsn;
    db.prepare("UPDATE resources SET json = ? WHERE rid = ?").run(JSON.stringify(saved), r.rid);
  }
  db.close();
}

describe("a data folder from before per-range LSNs", () => {
  it("opens with every change's LSN kept and each range going on from the container's old LSN", async () => {
    const t = await start();
    const c = await twoRangeContainer(t, "old");
    const [r0, r1] = await keysPerRange(c, 1);
    // Alternating ranges: container-wide LSNs 1..8, range 0 holding the odd ones.
    for (let i = 0; i < 4; i++) {
      await c.items.create({ id: `x${i}`, pk: r0.keys[0] });
      await c.items.create({ id: `y${i}`, pk: r1.keys[0] });
    }
    const etagOfX0 = (await c.item("x0", r0.keys[0]).read()).resource?._etag;
    await stop(t);
    toLegacyFormat(dataDir);

    const t2 = await start();
    const server = t2.emulator;
    const old0 = await drainFeed(server, "old", "docs", { rangeId: r0.id });
    const old1 = await drainFeed(server, "old", "docs", { rangeId: r1.id });
    expect(old0.docs.map((d) => d._lsn)).toEqual([1, 3, 5, 7]);
    expect(old1.docs.map((d) => d._lsn)).toEqual([2, 4, 6, 8]);
    // Both ranges start at the old container LSN, so the old continuation "8" is valid (and current) in each.
    expect([old0.etag, old1.etag]).toEqual(['"8"', '"8"']);
    const c2 = t2.client.database("old").container("docs");
    expect((await c2.item("x0", r0.keys[0]).read()).resource?._etag).toBe(etagOfX0);
    await c2.items.create({ id: "x4", pk: r0.keys[0] });
    await c2.items.create({ id: "y4", pk: r1.keys[0] });
    await c2.items.create({ id: "x5", pk: r0.keys[0] });
    const new0 = await readFeed(server, "old", "docs", { rangeId: r0.id, etag: '"8"' });
    const new1 = await readFeed(server, "old", "docs", { rangeId: r1.id, etag: '"8"' });
    expect(new0.docs.map((d) => [d.id, d._lsn])).toEqual([
      ["x4", 9],
      ["x5", 10],
    ]);
    expect(new1.docs.map((d) => [d.id, d._lsn])).toEqual([["y4", 9]]);
    // The estimator's figure for the new changes is exact: session LSN − first pending LSN + 1.
    expect(lsnOf(new0.sessionToken) - 9 + 1).toBe(2);
    expect(lsnOf(new1.sessionToken) - 9 + 1).toBe(1);
    await stop(t2);

    // The folder is in the new format now; a second start finds the same.
    const sqlite = new Database(join(dataDir, "cosmos-emulator.sqlite"), { readonly: true });
    const columns = (sqlite.prepare("PRAGMA table_info(changes)").all() as { name: string }[]).map(
      (x) => x.name,
    );
    sqlite.close();
    expect(columns).toContain("seq");
    const t3 = await start();
    const again0 = await readFeed(t3.emulator, "old", "docs", { rangeId: r0.id, etag: '"8"' });
    expect(again0.docs.map((d) => d._lsn)).toEqual([9, 10]);
    const now1 = await readFeed(t3.emulator, "old", "docs", { rangeId: r1.id, etag: "*" });
    expect(lsnOf(now1.sessionToken)).toBe(9);
  });
});
