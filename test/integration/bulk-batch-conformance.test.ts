import {
  BulkOperationType,
  ChangeFeedMode,
  ChangeFeedStartFrom,
  type Container,
  type Database,
  type ItemDefinition,
  type OperationInput,
  PartitionKeyKind,
  StatusCodes,
} from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

interface Doc extends ItemDefinition {
  id: string;
  pk: string;
  n?: number;
}

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("bulkconf") })).database;
});
afterAll(async () => {
  await t.close();
});

async function newContainer(): Promise<Container> {
  const { container } = await db.containers.create({
    id: uniqueName("c"),
    partitionKey: { paths: ["/pk"], version: 2 },
  });
  return container;
}

const raw = (method: string, path: string, options: Parameters<typeof rawRequest>[4] = {}) =>
  rawRequest(t.emulator.endpoint, t.emulator.key, method, path, options);

/** A raw bulk (non-atomic) or transactional batch request, as the SDK sends them. */
function batchRequest(
  c: Container,
  body: unknown,
  kind: "bulk" | "batch",
  extra: Record<string, string> = {},
) {
  return raw("POST", `/dbs/${db.id}/colls/${c.id}/docs`, {
    body,
    headers: {
      "x-ms-cosmos-is-batch-request": "true",
      "x-ms-cosmos-batch-atomic": kind === "batch" ? "true" : "false",
      ...(kind === "batch" ? { "x-ms-documentdb-partitionkey": '["A"]' } : {}),
      ...extra,
    },
  });
}

const create = (id: string) => ({
  operationType: "Create",
  partitionKey: '["A"]',
  resourceBody: { id, pk: "A" },
});

async function exists(c: Container, id: string, pk = "A"): Promise<boolean> {
  return (await c.item(id, pk).read()).statusCode === StatusCodes.Ok;
}

describe("operations are validated before any is applied", () => {
  it("bulk [create, null] → 400 naming index 1, and the create is not written", async () => {
    const c = await newContainer();
    const res = await batchRequest(c, [create("first"), null], "bulk");
    expect(res.status).toBe(400);
    expect((res.body as { code: string }).code).toBe("BadRequest");
    expect((res.body as { message: string }).message).toMatch(/index 1/);
    expect(await exists(c, "first")).toBe(false);
  });

  it("transactional batch [create, null] → 400 naming index 1, nothing written", async () => {
    const c = await newContainer();
    const res = await batchRequest(c, [create("first"), null], "batch");
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(/index 1/);
    expect(await exists(c, "first")).toBe(false);
  });

  it("each malformed shape is a 400 naming its index, in bulk and in batch, with nothing written", async () => {
    const c = await newContainer();
    const malformed: unknown[] = [
      42,
      [],
      "Create",
      { partitionKey: '["A"]', resourceBody: { id: "x", pk: "A" } },
      { operationType: "Fetch", partitionKey: '["A"]', id: "x" },
      { operationType: 7, partitionKey: '["A"]', id: "x" },
      { operationType: "Read", partitionKey: '["A"]' },
      { operationType: "Delete", partitionKey: '["A"]', id: 5 },
      { operationType: "Create", partitionKey: '["A"]' },
      { operationType: "Upsert", partitionKey: '["A"]', resourceBody: [1, 2] },
      { operationType: "Replace", partitionKey: '["A"]', id: "x", resourceBody: null },
      { operationType: "Patch", partitionKey: '["A"]', id: "x", resourceBody: { operations: "set" } },
      {
        operationType: "Patch",
        partitionKey: '["A"]',
        id: "x",
        resourceBody: [{ op: "explode", path: "/a" }],
      },
      { operationType: "Read", partitionKey: ["A"], id: "x" },
      { operationType: "Read", partitionKey: "not json", id: "x" },
      { operationType: "Read", partitionKey: '[{"a":1}]', id: "x" },
      { operationType: "Read", partitionKey: '["A"]', id: "x", ifMatch: 3 },
      { operationType: "Read", partitionKey: '["A"]', id: "x", ifNoneMatch: {} },
    ];
    for (const kind of ["bulk", "batch"] as const) {
      for (const [i, bad] of malformed.entries()) {
        const id = `ok-${kind}-${i}`;
        const res = await batchRequest(c, [create(id), bad], kind);
        const what = `${kind} ${JSON.stringify(bad)}`;
        expect(res.status, what).toBe(400);
        expect((res.body as { message: string }).message, what).toMatch(/index 1/);
        expect(await exists(c, id), what).toBe(false);
      }
    }
    // A bulk read without a partition key cannot be routed: refused up front too.
    const res = await batchRequest(c, [create("ok-nopk"), { operationType: "Read", id: "x" }], "bulk");
    expect(res.status).toBe(400);
    expect(await exists(c, "ok-nopk")).toBe(false);
  });

  it("through the SDK: items.batch passes a Read without id and an unknown type through → refused, nothing written", async () => {
    const c = await newContainer();
    const noId = [
      { operationType: BulkOperationType.Create, resourceBody: { id: "sdk1", pk: "A" } },
      { operationType: BulkOperationType.Read } as unknown as OperationInput,
    ];
    await expect(c.items.batch(noId, "A")).rejects.toThrow(/index 1/);
    const unknownType = [
      { operationType: BulkOperationType.Create, resourceBody: { id: "sdk2", pk: "A" } },
      { operationType: "Fetch", id: "sdk1" } as unknown as OperationInput,
    ];
    await expect(c.items.batch(unknownType, "A")).rejects.toThrow(/index 1/);
    expect(await exists(c, "sdk1")).toBe(false);
    expect(await exists(c, "sdk2")).toBe(false);
  });

  it("through the SDK: a bulk request with an operation without id fails as a whole, its create is not written", async () => {
    const c = await newContainer();
    const res = await c.items.executeBulkOperations([
      { operationType: BulkOperationType.Create, partitionKey: "A", resourceBody: { id: "b1", pk: "A" } },
      { operationType: BulkOperationType.Delete, partitionKey: "A" } as unknown as OperationInput,
    ]);
    expect(res.map((r) => r.error?.code)).toEqual([400, 400]);
    expect(await exists(c, "b1")).toBe(false);
  });
});

describe("bulk x-ms-cosmos-batch-continue-on-error", () => {
  const ops = (prefix: string): OperationInput[] => [
    // executeBulkOperations needs partitionKey on every operation (items.bulk would extract it).
    {
      operationType: BulkOperationType.Create,
      partitionKey: "A",
      resourceBody: { id: `${prefix}-a`, pk: "A" },
    },
    {
      operationType: BulkOperationType.Create,
      partitionKey: "A",
      resourceBody: { id: `${prefix}-a`, pk: "A" },
    },
    {
      operationType: BulkOperationType.Create,
      partitionKey: "A",
      resourceBody: { id: `${prefix}-b`, pk: "A" },
    },
    { operationType: BulkOperationType.Read, id: `${prefix}-a`, partitionKey: "A" },
  ];

  it("false: after the first failure the rest answer 424 FailedDependency and are not applied", async () => {
    const c = await newContainer();
    const res = await c.items.bulk(ops("stop"), { continueOnError: false });
    expect(res.map((r) => r.statusCode)).toEqual([201, 409, 424, 424]);
    expect(await exists(c, "stop-a")).toBe(true);
    expect(await exists(c, "stop-b")).toBe(false);
  });

  it("true (the SDK's default, and executeBulkOperations) runs every operation", async () => {
    const c = await newContainer();
    const res = await c.items.bulk(ops("go"));
    expect(res.map((r) => r.statusCode)).toEqual([201, 409, 201, 200]);
    const res2 = await c.items.executeBulkOperations(ops("go2"));
    expect(res2.map((r) => r.response?.statusCode ?? r.error?.code)).toEqual([201, 409, 201, 200]);
    expect(await exists(c, "go2-b")).toBe(true);
  });

  it("raw: 'false' stops, an absent header continues; the response is 207 when an operation failed", async () => {
    const c = await newContainer();
    const body = [create("r-a"), create("r-a"), create("r-b")];
    const stopped = await batchRequest(c, body, "bulk", { "x-ms-cosmos-batch-continue-on-error": "false" });
    expect(stopped.status).toBe(207);
    const results = stopped.body as { statusCode: number; resourceBody?: { code?: string } }[];
    expect(results.map((r) => r.statusCode)).toEqual([201, 409, 424]);
    expect(results[2].resourceBody?.code).toBe("FailedDependency");
    expect(await exists(c, "r-b")).toBe(false);
    const body2 = [create("s-a"), create("s-a"), create("s-b")];
    const continued = await batchRequest(c, body2, "bulk");
    expect((continued.body as { statusCode: number }[]).map((r) => r.statusCode)).toEqual([201, 409, 201]);
  });
});

describe("deleteAllItemsForPartitionKey", () => {
  interface AvadItem {
    current?: Doc;
    previous?: Doc;
    metadata: { operationType: string; id: string };
  }

  it("deletes every item of the partition (200, RU charged), leaves other partitions, shows each delete in the all-versions feed", async () => {
    const c = await newContainer();
    for (let i = 0; i < 5; i++) await c.items.create<Doc>({ id: `w${i}`, pk: "WA", n: i });
    for (let i = 0; i < 3; i++) await c.items.create<Doc>({ id: `i${i}`, pk: "IL", n: i });
    await c.items.create<Doc>({ id: "w0", pk: "IL", n: 99 }); // same id, other partition
    const feed = c.items.getChangeFeedIterator<AvadItem>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    expect((await feed.readNext()).statusCode).toBe(StatusCodes.NotModified);

    const res = await c.deleteAllItemsForPartitionKey("WA");
    expect(res.statusCode).toBe(200);
    expect(res.requestCharge).toBeGreaterThan(0);

    const { resources: wa } = await c.items.query("SELECT * FROM c", { partitionKey: "WA" }).fetchAll();
    expect(wa).toEqual([]);
    expect((await c.item("w3", "WA").read()).statusCode).toBe(404);
    const { resources: il } = await c.items.query<Doc>("SELECT * FROM c", { partitionKey: "IL" }).fetchAll();
    expect(il.map((d) => d.id).sort()).toEqual(["i0", "i1", "i2", "w0"]);

    const deletes: AvadItem[] = [];
    for (;;) {
      const page = await feed.readNext();
      if (page.statusCode === StatusCodes.NotModified) break;
      deletes.push(...page.result);
    }
    expect(deletes.map((d) => d.metadata.operationType)).toEqual(Array(5).fill("delete"));
    expect(deletes.map((d) => d.metadata.id).sort()).toEqual(["w0", "w1", "w2", "w3", "w4"]);

    // The partition is usable again at once.
    expect((await c.items.create<Doc>({ id: "w0", pk: "WA" })).statusCode).toBe(201);
    // An empty partition is no error.
    expect((await c.deleteAllItemsForPartitionKey("nobody")).statusCode).toBe(200);
  });

  it("a hierarchical key: the full key deletes that partition; a prefix is refused with 400", async () => {
    const { container: c } = await db.containers.create({
      id: uniqueName("hpk"),
      partitionKey: { paths: ["/t", "/u"], kind: PartitionKeyKind.MultiHash, version: 2 },
    });
    for (const [t2, u] of [
      ["a", "1"],
      ["a", "1"],
      ["a", "2"],
      ["b", "1"],
    ])
      await c.items.create({ t: t2, u });
    await expect(c.deleteAllItemsForPartitionKey(["a"])).rejects.toMatchObject({ code: 400 });
    expect((await c.deleteAllItemsForPartitionKey(["a", "1"])).statusCode).toBe(200);
    const { resources } = await c.items.query<{ t: string; u: string }>("SELECT c.t, c.u FROM c").fetchAll();
    expect(resources.map((d) => `${d.t}${d.u}`).sort()).toEqual(["a2", "b1"]);
  });
});
