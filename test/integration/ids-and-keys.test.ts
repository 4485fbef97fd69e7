import { createRequire } from "node:module";
import path from "node:path";
import {
  BulkOperationType,
  type Container,
  type Database,
  type ItemDefinition,
  type PartitionKey,
  PartitionKeyBuilder,
  PartitionKeyKind,
  StatusCodes,
} from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PartitionKeyComponent } from "../../packages/emulator/src/partitioning/epk.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawTo } from "../support/raw.js";
import { errorOf } from "../support/sdk-error.js";

interface Doc extends ItemDefinition {
  id: string;
  pk: string;
  n?: number;
}

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("idkeys") })).database;
});
afterAll(async () => {
  await t.close();
});

const raw = rawTo(() => t.emulator);

describe("item ids", () => {
  let c: Container;
  beforeAll(async () => {
    c = (await db.containers.create({ id: uniqueName("ids"), partitionKey: { paths: ["/pk"], version: 2 } }))
      .container;
  });

  // The SDK puts ids into URLs with encodeURI: `?` stays literal (the rest of the id arrives as the query),
  // `%`, spaces and non-ASCII are percent-encoded, `+` stays.
  const accepted = [
    "trailing space ",
    " leading space",
    "a?b",
    "q?x=1&y=2",
    "?start",
    "100%",
    "a%20b",
    "a+b",
    "with spaces inside",
    "ünïcødé 中文 😀",
    "a.",
    ".hidden",
    "...",
  ];

  it("create, read, replace, patch, query, batch read and delete work end to end for every id the service accepts", async () => {
    for (const id of accepted) {
      const what = JSON.stringify(id);
      expect((await c.items.create<Doc>({ id, pk: "p", n: 1 })).statusCode, what).toBe(201);
      const read = await c.item(id, "p").read<Doc>();
      expect(read.statusCode, what).toBe(200);
      expect(read.resource?.id, what).toBe(id);
      expect((await c.item(id, "p").replace<Doc>({ id, pk: "p", n: 2 })).statusCode, what).toBe(200);
      const patched = await c.item(id, "p").patch<Doc>([{ op: "incr", path: "/n", value: 1 }]);
      expect(patched.resource?.n, what).toBe(3);
      const { resources } = await c.items
        .query<Doc>({ query: "SELECT * FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: id }] })
        .fetchAll();
      expect(
        resources.map((d) => d.n),
        what,
      ).toEqual([3]);
      const batch = await c.items.batch([{ operationType: BulkOperationType.Read, id }], "p");
      expect(batch.result?.[0].statusCode, what).toBe(200);
      expect((await c.item(id, "p").delete()).statusCode, what).toBe(204);
      expect((await c.item(id, "p").read()).statusCode, what).toBe(404);
    }
  });

  it("ids no URL can address ('.', '..', a trailing '?') are refused at create with 400, never a 401 later", async () => {
    for (const id of [".", "..", "a?", "?"]) {
      const err = await errorOf(() => c.items.create<Doc>({ id, pk: "p" }));
      expect(err.code, JSON.stringify(id)).toBe(400);
      const inBatch = await c.items.batch(
        [{ operationType: BulkOperationType.Create, resourceBody: { id, pk: "p" } }],
        "p",
      );
      expect(inBatch.result?.[0].statusCode, JSON.stringify(id)).toBe(400);
    }
  });

  // The service stores them (Microsoft's CosmosItemTests.CreateDropItemWithInvalidIdCharactersTest; what name-based
  // URLs then reach: microsoft-emulator-tests.test.ts).
  it("'/', '\\' and '#' are accepted at create, as the service accepts them (raw HTTP: the SDK refuses '/' itself)", async () => {
    for (const id of ["a/b", "a\\b", "a#b"]) {
      const res = await raw("POST", `/dbs/${db.id}/colls/${c.id}/docs`, {
        body: { id, pk: "p" },
        headers: { "x-ms-documentdb-partitionkey": '["p"]' },
      });
      expect(res.status, id).toBe(201);
    }
  });

  it("the limit is 1,023 bytes of UTF-8, not 255 characters", async () => {
    expect((await c.items.create<Doc>({ id: "x".repeat(1023), pk: "p" })).statusCode).toBe(201);
    expect((await errorOf(() => c.items.create<Doc>({ id: "x".repeat(1024), pk: "p" }))).code).toBe(400);
    // 341 three-byte characters are 1,023 bytes; 342 are too many.
    expect((await c.items.create<Doc>({ id: "中".repeat(341), pk: "p" })).statusCode).toBe(201);
    const tooLong = await errorOf(() => c.items.create<Doc>({ id: "中".repeat(342), pk: "p" }));
    expect(tooLong.code).toBe(400);
    expect(tooLong.message).toMatch(/1023 bytes/);
  });

  it("database and container ids keep the resource rules: '?' and a trailing space → 400", async () => {
    for (const id of ["c?x", "c "]) {
      const res = await raw("POST", `/dbs/${db.id}/colls`, {
        body: { id, partitionKey: { paths: ["/pk"], kind: "Hash" } },
      });
      expect(res.status, JSON.stringify(id)).toBe(400);
    }
  });
});

describe("item ttl bounds (32-bit seconds)", () => {
  let c: Container;
  beforeAll(async () => {
    c = (
      await db.containers.create({
        id: uniqueName("ttl"),
        partitionKey: { paths: ["/pk"], version: 2 },
        defaultTtl: -1,
      })
    ).container;
  });

  it("2147483647 is accepted and the item stays readable; larger, 0, -2 and fractions → 400", async () => {
    expect((await c.items.create({ id: "max", pk: "p", ttl: 2_147_483_647 })).statusCode).toBe(201);
    expect((await c.item("max", "p").read()).statusCode).toBe(200);
    for (const ttl of [2_147_483_648, 1e12, Number.MAX_SAFE_INTEGER, 0, -2, 1.5]) {
      const err = await errorOf(() => c.items.create({ id: `t${ttl}`, pk: "p", ttl }));
      expect(err.code, String(ttl)).toBe(400);
      expect(err.message, String(ttl)).toMatch(/2147483647/);
    }
    const up = await errorOf(() => c.items.upsert({ id: "max", pk: "p", ttl: 2 ** 31 }));
    expect(up.code).toBe(400);
    expect((await c.item("max", "p").read<{ ttl: number }>()).resource?.ttl).toBe(2_147_483_647);
  });
});

describe("None (undefined) components of a hierarchical partition key", () => {
  interface HDoc extends ItemDefinition {
    id: string;
    a?: unknown;
    b?: unknown;
    v?: number;
  }
  let c: Container;
  const none = new PartitionKeyBuilder().addValue("A").addNoneValue().build();
  // The SDK's own hashing, loaded by absolute path (not an exported entry point).
  const require = createRequire(import.meta.url);
  const sdk = require(path.join(path.dirname(require.resolve("@azure/cosmos")), "utils/hashing/hash.js")) as {
    hashPartitionKey(values: PartitionKeyComponent[], def: unknown): string;
  };

  beforeAll(async () => {
    c = (
      await db.containers.create(
        {
          id: uniqueName("hpk"),
          partitionKey: { paths: ["/a", "/b"], kind: PartitionKeyKind.MultiHash, version: 2 },
        },
        { offerThroughput: 24_000 },
      )
    ).container;
  });

  it("an item without the second path, or with `{}` there, is stored under the None component at the SDK's EPK", async () => {
    expect((await c.items.create<HDoc>({ id: "missing", a: "A", v: 1 })).statusCode).toBe(201);
    expect((await c.items.create<HDoc>({ id: "empty", a: "A", b: {}, v: 2 })).statusCode).toBe(201);
    expect((await c.items.create<HDoc>({ id: "null", a: "A", b: null, v: 3 })).statusCode).toBe(201);
    const stored = t.emulator.account.container(db.id, c.id);
    const def = (await c.read()).resource?.partitionKey;
    const expected = sdk.hashPartitionKey(["A", {}], def);
    for (const doc of stored.docs.values()) {
      if (doc.id === "missing" || doc.id === "empty") expect(doc.epk, doc.id).toBe(expected);
    }
    expect(stored.epkOf(["A", {}])).toBe(expected);
    expect(stored.epkOf(["A", null])).not.toBe(expected);
  });

  it("read, replace, patch and delete by a None key (PartitionKeyBuilder and `undefined`)", async () => {
    await c.items.create<HDoc>({ id: "crud", a: "A", v: 1 });
    const keys: PartitionKey[] = [none, ["A", undefined] as unknown as PartitionKey];
    for (const key of keys) {
      const read = await c.item("crud", key).read<HDoc>();
      expect(read.statusCode).toBe(200);
    }
    expect((await c.item("crud", none).replace<HDoc>({ id: "crud", a: "A", v: 5 })).statusCode).toBe(200);
    const patched = await c.item("crud", none).patch<HDoc>([{ op: "incr", path: "/v", value: 1 }]);
    expect(patched.resource?.v).toBe(6);
    // null is another value than None.
    expect((await c.item("crud", ["A", null]).read()).statusCode).toBe(404);
    expect((await c.item("crud", none).delete()).statusCode).toBe(204);
    expect((await c.item("crud", none).read()).statusCode).toBe(404);
  });

  it("a query by the None key or its prefix finds exactly those items", async () => {
    await c.items.create<HDoc>({ id: "q1", a: "Q" });
    await c.items.create<HDoc>({ id: "q2", a: "Q", b: {} });
    await c.items.create<HDoc>({ id: "q3", a: "Q", b: "x" });
    const qNone = new PartitionKeyBuilder().addValue("Q").addNoneValue().build();
    const { resources } = await c.items.query<HDoc>("SELECT * FROM c", { partitionKey: qNone }).fetchAll();
    expect(resources.map((d) => d.id).sort()).toEqual(["q1", "q2"]);
    const { resources: prefix } = await c.items
      .query<HDoc>("SELECT * FROM c", { partitionKey: ["Q"] })
      .fetchAll();
    expect(prefix.map((d) => d.id).sort()).toEqual(["q1", "q2", "q3"]);
  });

  it("transactional batch and bulk with a None key", async () => {
    const bNone = new PartitionKeyBuilder().addValue("B").addNoneValue().build();
    const batch = await c.items.batch(
      [
        { operationType: BulkOperationType.Create, resourceBody: { id: "b1", a: "B" } },
        { operationType: BulkOperationType.Create, resourceBody: { id: "b2", a: "B", b: {} } },
        { operationType: BulkOperationType.Read, id: "b1" },
      ],
      bNone,
    );
    expect(batch.result?.map((r) => r.statusCode)).toEqual([201, 201, 200]);
    const bulk = await c.items.executeBulkOperations([
      { operationType: BulkOperationType.Create, partitionKey: bNone, resourceBody: { id: "b3", a: "B" } },
      { operationType: BulkOperationType.Read, partitionKey: bNone, id: "b2" },
      {
        operationType: BulkOperationType.Delete,
        partitionKey: ["B", undefined] as unknown as PartitionKey,
        id: "b1",
      },
    ]);
    expect(bulk.map((r) => r.response?.statusCode ?? r.error?.code)).toEqual([201, 200, 204]);
    expect((await c.item("b3", bNone).read()).statusCode).toBe(StatusCodes.Ok);
    expect((await c.item("b1", bNone).read()).statusCode).toBe(StatusCodes.NotFound);
  });
});

describe("non-Latin-1 database and container ids", () => {
  it("item operations, batch, bulk and delete-by-partition-key answer with a percent-encoded x-ms-alt-content-path", async () => {
    const database = (await t.client.databases.create({ id: uniqueName("数据库 ü") })).database;
    const { container: c } = await database.containers.create({
      id: "容器 é",
      partitionKey: { paths: ["/pk"], version: 2 },
    });
    const created = await c.items.create<Doc>({ id: "d1", pk: "p", n: 1 });
    expect(created.statusCode).toBe(201);
    const altPath = created.headers["x-ms-alt-content-path"];
    expect(altPath).toBe(`dbs/${encodeURIComponent(database.id)}/colls/${encodeURIComponent("容器 é")}`);
    expect(decodeURIComponent(String(altPath))).toBe(`dbs/${database.id}/colls/容器 é`);
    expect((await c.item("d1", "p").read<Doc>()).resource?.n).toBe(1);
    expect((await c.items.upsert<Doc>({ id: "d1", pk: "p", n: 2 })).statusCode).toBe(200);
    expect((await c.item("d1", "p").replace<Doc>({ id: "d1", pk: "p", n: 3 })).statusCode).toBe(200);
    const patched = await c.item("d1", "p").patch<Doc>([{ op: "incr", path: "/n", value: 1 }]);
    expect(patched.resource?.n).toBe(4);
    const batch = await c.items.batch(
      [{ operationType: BulkOperationType.Create, resourceBody: { id: "d2", pk: "p" } }],
      "p",
    );
    expect(batch.code).toBe(200);
    const bulk = await c.items.bulk([
      { operationType: BulkOperationType.Create, resourceBody: { id: "d3", pk: "p" } },
    ]);
    expect(bulk.map((r) => r.statusCode)).toEqual([201]);
    expect((await c.item("d1", "p").delete()).statusCode).toBe(204);
    expect((await c.deleteAllItemsForPartitionKey("p")).statusCode).toBe(200);
    for (const id of ["d2", "d3"]) expect((await c.item(id, "p").read()).statusCode).toBe(404);
  });
});
