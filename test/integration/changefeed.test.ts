import {
  ChangeFeedMode,
  type ChangeFeedPullModelIterator,
  ChangeFeedStartFrom,
  type Container,
  type Database,
  PartitionKeyKind,
  StatusCodes,
} from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

interface Doc {
  id: string;
  pk: string;
  n: number;
  _lsn?: number;
}

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("cf") })).database;
});
afterAll(async () => {
  await t.close();
});

async function newContainer(ranges = 4, extra: Record<string, unknown> = {}): Promise<Container> {
  const { container } = await db.containers.create(
    { id: uniqueName("c"), partitionKey: { paths: ["/pk"], version: 2 }, ...extra },
    { offerThroughput: ranges * 6_000 },
  );
  return container;
}

/** Reads until a 304, returning the items and the last continuation token. */
async function drain<T>(it: ChangeFeedPullModelIterator<T>): Promise<{ items: T[]; token: string }> {
  const items: T[] = [];
  let token = "";
  for (;;) {
    const res = await it.readNext();
    token = res.continuationToken;
    if (res.statusCode === StatusCodes.NotModified) return { items, token };
    items.push(...res.result);
  }
}

describe("change feed, latest-version mode", () => {
  it("from the beginning returns every document once, at its last version, across 4 ranges", async () => {
    const c = await newContainer(4);
    for (let i = 0; i < 60; i++) await c.items.create<Doc>({ id: `d${i}`, pk: `p${i % 13}`, n: i });
    await c.item("d5", "p5").replace<Doc>({ id: "d5", pk: "p5", n: 500 });
    await c.item("d7", "p7").delete();
    const { items } = await drain(
      c.items.getChangeFeedIterator<Doc>({
        changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
        maxItemCount: 7,
      }),
    );
    const ids = items.map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(59);
    expect(ids).not.toContain("d7");
    expect(items.find((d) => d.id === "d5")?.n).toBe(500);
    expect(items.every((d) => typeof d._lsn === "number")).toBe(true);
  });

  it("pages follow maxItemCount exactly and every range is visited breadth first", async () => {
    const c = await newContainer(4);
    for (let i = 0; i < 80; i++) await c.items.create<Doc>({ id: `d${i}`, pk: `p${i}`, n: i });
    const it = c.items.getChangeFeedIterator<Doc>({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      maxItemCount: 5,
    });
    const rangesSeen = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const res = await it.readNext();
      expect(res.statusCode).toBe(200);
      expect(res.result.length).toBe(5);
      rangesSeen.add(String(res.headers["x-ms-documentdb-partitionkeyrangeid"]));
    }
    expect(rangesSeen.size).toBe(4);
  });

  it("from now sees only later changes, and a 304 still carries a continuation", async () => {
    const c = await newContainer(2);
    await c.items.create<Doc>({ id: "before", pk: "a", n: 0 });
    const it = c.items.getChangeFeedIterator<Doc>({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    const first = await it.readNext();
    expect(first.statusCode).toBe(304);
    expect(first.continuationToken).toBeTruthy();
    await c.items.create<Doc>({ id: "after", pk: "b", n: 1 });
    const { items } = await drain(it);
    expect(items.map((d) => d.id)).toEqual(["after"]);
  });

  it("a 304 answer has an etag header (raw wire check)", async () => {
    const c = await newContainer(1);
    await c.items.create<Doc>({ id: "x", pk: "a", n: 0 });
    const path = `/dbs/${db.id}/colls/${c.id}/docs`;
    const headers = { "a-im": "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid": "0" };
    const all = await rawRequest(t.emulator.endpoint, t.emulator.key, "GET", path, { headers });
    expect(all.status).toBe(200);
    const etag = all.headers.get("etag");
    expect(etag).toMatch(/^"\d+"$/);
    const empty = await rawRequest(t.emulator.endpoint, t.emulator.key, "GET", path, {
      headers: { ...headers, "if-none-match": etag as string },
    });
    expect(empty.status).toBe(304);
    expect(empty.headers.get("etag")).toBe(etag);
  });

  it("from a time returns changes written at or after it", async () => {
    const c = await newContainer(2);
    await c.items.create<Doc>({ id: "old", pk: "a", n: 0 });
    await new Promise((r) => setTimeout(r, 1100));
    const since = new Date();
    await c.items.create<Doc>({ id: "new", pk: "b", n: 1 });
    const { items } = await drain(
      c.items.getChangeFeedIterator<Doc>({ changeFeedStartFrom: ChangeFeedStartFrom.Time(since) }),
    );
    expect(items.map((d) => d.id)).toEqual(["new"]);
  });

  it("a continuation token resumes in a new iterator without loss or repeat", async () => {
    const c = await newContainer(3);
    for (let i = 0; i < 20; i++) await c.items.create<Doc>({ id: `a${i}`, pk: `p${i}`, n: i });
    const first = await drain(
      c.items.getChangeFeedIterator<Doc>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }),
    );
    expect(first.items.length).toBe(20);
    for (let i = 0; i < 10; i++) await c.items.create<Doc>({ id: `b${i}`, pk: `p${i}`, n: i });
    const second = await drain(
      c.items.getChangeFeedIterator<Doc>({
        changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.token),
      }),
    );
    expect(second.items.map((d) => d.id).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `b${i}`).sort(),
    );
  });

  it("is scoped to a partition key and to a feed range", async () => {
    const c = await newContainer(4);
    for (let i = 0; i < 40; i++) await c.items.create<Doc>({ id: `d${i}`, pk: `p${i % 5}`, n: i });
    const byKey = await drain(
      c.items.getChangeFeedIterator<Doc>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("p3") }),
    );
    expect(byKey.items.length).toBe(8);
    expect(byKey.items.every((d) => d.pk === "p3")).toBe(true);

    const ranges = await c.getFeedRanges();
    expect(ranges.length).toBe(4);
    const seen: string[] = [];
    for (const r of ranges) {
      const part = await drain(
        c.items.getChangeFeedIterator<Doc>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(r) }),
      );
      seen.push(...part.items.map((d) => d.id));
    }
    expect(seen.sort()).toEqual(Array.from({ length: 40 }, (_, i) => `d${i}`).sort());
  });

  it("honours an EPK sub-range (x-ms-start-epk / x-ms-end-epk) inside a physical range", async () => {
    const c = await newContainer(1);
    for (let i = 0; i < 50; i++) await c.items.create<Doc>({ id: `d${i}`, pk: `p${i}`, n: i });
    const path = `/dbs/${db.id}/colls/${c.id}/docs`;
    const read = (min: string, max: string) =>
      rawRequest(t.emulator.endpoint, t.emulator.key, "GET", path, {
        headers: {
          "a-im": "Incremental Feed",
          "x-ms-documentdb-partitionkeyrangeid": "0",
          "x-ms-start-epk": min,
          "x-ms-end-epk": max,
          "x-ms-read-key-type": "EffectivePartitionKeyRange",
          "x-ms-max-item-count": "1000",
        },
      });
    const low = (await read("", "20")).body as { Documents: Doc[] };
    const high = (await read("20", "FF")).body as { Documents: Doc[] };
    expect(low.Documents.length).toBeGreaterThan(5);
    expect(high.Documents.length).toBeGreaterThan(5);
    expect(low.Documents.length + high.Documents.length).toBe(50);
    const lowIds = new Set(low.Documents.map((d) => d.id));
    expect(high.Documents.some((d) => lowIds.has(d.id))).toBe(false);
  });

  it("reads a hierarchical-key prefix through EPK bounds", async () => {
    const { container } = await db.containers.create({
      id: uniqueName("hpk"),
      partitionKey: { paths: ["/tenant", "/user"], kind: PartitionKeyKind.MultiHash, version: 2 },
    });
    for (let i = 0; i < 30; i++)
      await container.items.create({ id: `d${i}`, tenant: `t${i % 3}`, user: `u${i}` });
    const { items } = await drain(
      container.items.getChangeFeedIterator<{ tenant: string }>({
        changeFeedStartFrom: ChangeFeedStartFrom.Beginning(["t1"]),
      }),
    );
    expect(items.length).toBe(10);
    expect(items.every((d) => d.tenant === "t1")).toBe(true);
  });
});

describe("change feed across a live split", () => {
  it("loses nothing and repeats nothing while a range splits under a running reader", async () => {
    const c = await newContainer(2);
    const it = c.items.getChangeFeedIterator<Doc>({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      maxItemCount: 10,
    });
    const seen: string[] = [];
    let written = 0;
    const write = async (n: number) => {
      for (let i = 0; i < n; i++, written++)
        await c.items.create<Doc>({ id: `d${written}`, pk: `p${written % 17}`, n: written });
    };
    await write(100);
    for (let i = 0; i < 4; i++) {
      const res = await it.readNext();
      seen.push(...res.result.map((d) => d.id));
    }
    const children = t.emulator.splitRange(db.id, c.id, "0");
    expect(children).toEqual(["2", "3"]);
    await write(100);
    const rest = await drain(it);
    seen.push(...rest.items.map((d) => d.id));
    await write(50);
    seen.push(...(await drain(it)).items.map((d) => d.id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe(250);
    expect((await c.getFeedRanges()).length).toBe(3);
  });

  it("answers a request for the split range with 410 / substatus 1002", async () => {
    const c = await newContainer(1);
    t.emulator.splitRange(db.id, c.id, "0");
    const res = await rawRequest(
      t.emulator.endpoint,
      t.emulator.key,
      "GET",
      `/dbs/${db.id}/colls/${c.id}/docs`,
      {
        headers: { "a-im": "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid": "0" },
      },
    );
    expect(res.status).toBe(410);
    expect(res.headers.get("x-ms-substatus")).toBe("1002");
    expect((res.body as { code: string }).code).toBe("Gone");
  });

  it("keeps point operations and queries working after a split (SDK refreshes its routing map)", async () => {
    const c = await newContainer(1);
    for (let i = 0; i < 30; i++) await c.items.create<Doc>({ id: `d${i}`, pk: `p${i}`, n: i });
    await c.getFeedRanges();
    t.emulator.splitRange(db.id, c.id, "0");
    const read = await c.item("d3", "p3").read<Doc>();
    expect(read.resource?.n).toBe(3);
    const { resources } = await c.items.query<Doc>("SELECT * FROM c").fetchAll();
    expect(resources.length).toBe(30);
  });
});

describe("change feed across a merge", () => {
  it("loses nothing and repeats nothing when two ranges merge under running readers", async () => {
    const c = await newContainer(2);
    // One reader over the whole container, and one per range (as a lease each), all started before the merge.
    const whole = c.items.getChangeFeedIterator<Doc>({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      maxItemCount: 10,
    });
    const perRange = (await c.getFeedRanges()).map((r) =>
      c.items.getChangeFeedIterator<Doc>({
        changeFeedStartFrom: ChangeFeedStartFrom.Beginning(r),
        maxItemCount: 7,
      }),
    );
    let written = 0;
    const write = async (n: number) => {
      for (let i = 0; i < n; i++, written++)
        await c.items.create<Doc>({ id: `d${written}`, pk: `p${written % 17}`, n: written });
    };
    await write(60);
    const seenWhole: string[] = [];
    const seenRanges: string[] = [];
    seenWhole.push(...(await whole.readNext()).result.map((d) => d.id));
    for (const it of perRange) seenRanges.push(...(await it.readNext()).result.map((d) => d.id));

    const merged = t.emulator.mergeRanges(db.id, c.id, "0", "1");
    const raw = await rawRequest(
      t.emulator.endpoint,
      t.emulator.key,
      "GET",
      `/dbs/${db.id}/colls/${c.id}/docs`,
      {
        headers: { "a-im": "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid": "0" },
      },
    );
    expect(raw.status).toBe(410);
    expect(raw.headers.get("x-ms-substatus")).toBe("1002");
    await write(60);
    seenWhole.push(...(await drain(whole)).items.map((d) => d.id));
    for (const it of perRange) seenRanges.push(...(await drain(it)).items.map((d) => d.id));
    for (const seen of [seenWhole, seenRanges]) {
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.length).toBe(120);
    }
    // A sub-range reader after the merge reads its EPK window of the merged range, from the merged session.
    const after = await perRange[0].readNext();
    expect(after.headers["x-ms-session-token"]).toMatch(new RegExp(`^${merged}:`));
    expect((await c.getFeedRanges()).length).toBe(1);
    expect((await c.items.query<Doc>("SELECT * FROM c").fetchAll()).resources.length).toBe(120);
    expect((await c.item("d7", "p7").read<Doc>()).resource?.n).toBe(7);
  });

  it("rejects a merge of ranges that are not neighbours", async () => {
    const c = await newContainer(3);
    expect(() => t.emulator.mergeRanges(db.id, c.id, "0", "2")).toThrow(/not adjacent/);
    expect(() => t.emulator.mergeRanges(db.id, c.id, "1", "0")).toThrow(/not adjacent/);
  });
});

describe("change feed, all-versions-and-deletes mode", () => {
  interface AvadItem {
    current?: Doc;
    previous?: Doc;
    metadata: {
      operationType: string;
      lsn: number;
      previousImageLSN: number;
      timeToLiveExpired?: boolean;
      id: string;
    };
  }

  it("returns creates, replaces and deletes with metadata, in LSN order", async () => {
    const c = await newContainer(1);
    const it = c.items.getChangeFeedIterator<AvadItem>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    expect((await it.readNext()).statusCode).toBe(304);
    await c.items.create<Doc>({ id: "a", pk: "p", n: 1 });
    await c.item("a", "p").replace<Doc>({ id: "a", pk: "p", n: 2 });
    await c.item("a", "p").delete();
    const { items } = await drain(it);
    expect(items.map((x) => x.metadata.operationType)).toEqual(["create", "replace", "delete"]);
    expect(items[0].current?.n).toBe(1);
    expect(items[1].current?.n).toBe(2);
    expect(items[1].metadata.previousImageLSN).toBe(items[0].metadata.lsn);
    expect(items[2].metadata.timeToLiveExpired).toBe(false);
    expect(items[2].metadata.id).toBe("a");
    const lsns = items.map((x) => x.metadata.lsn);
    expect([...lsns].sort((a, b) => a - b)).toEqual(lsns);
  });

  it("gives each change the service's shape, field by field: create, replace, upsert, patch, delete", async () => {
    const c = await newContainer(1);
    const it = c.items.getChangeFeedIterator<AvadItem>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    expect((await it.readNext()).statusCode).toBe(304);
    await c.items.create<Doc>({ id: "a", pk: "p", n: 1 });
    await c.item("a", "p").replace<Doc>({ id: "a", pk: "p", n: 2 });
    await c.items.upsert<Doc>({ id: "a", pk: "p", n: 3 });
    await c.items.upsert<Doc>({ id: "b", pk: "p", n: 1 });
    await c.item("a", "p").patch([{ op: "set", path: "/n", value: 4 }]);
    await c.item("a", "p").delete();
    const { items } = await drain(it);
    const shapes = items.map((x) => ({
      keys: Object.keys(x).sort(),
      metadata: Object.keys(x.metadata).sort(),
      op: x.metadata.operationType,
      current: x.current?.id,
    }));
    const written = {
      keys: ["current", "metadata"],
      metadata: ["crts", "lsn", "operationType", "previousImageLSN"],
    };
    expect(shapes).toEqual([
      { ...written, op: "create", current: "a" },
      { ...written, op: "replace", current: "a" },
      { ...written, op: "replace", current: "a" },
      { ...written, op: "create", current: "b" },
      { ...written, op: "replace", current: "a" },
      {
        keys: ["current", "metadata", "previous"],
        metadata: [
          "crts",
          "id",
          "lsn",
          "operationType",
          "partitionKey",
          "previousImageLSN",
          "timeToLiveExpired",
        ],
        op: "delete",
        current: undefined,
      },
    ]);
    const deleted = items[5] as AvadItem & { metadata: { partitionKey: unknown } };
    // `current` is an object without an id (the .NET SDK's test reads `Current.id` and expects null).
    expect(deleted.current).toEqual({});
    expect(deleted.previous?.n).toBe(4);
    expect(deleted.metadata).toMatchObject({ id: "a", partitionKey: { pk: "p" }, timeToLiveExpired: false });
    expect(deleted.metadata.previousImageLSN).toBe(items[4].metadata.lsn);
  });

  it("refuses to start from the beginning", async () => {
    const c = await newContainer(1);
    const it = c.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    await expect(it.readNext()).rejects.toMatchObject({ code: 400 });
  });
});
