import {
  BulkOperationType,
  type Container,
  type Database,
  type ItemDefinition,
  type OperationInput,
  type OperationResponse,
  PartitionKeyKind,
  PatchOperationType,
} from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

interface Doc extends ItemDefinition {
  id: string;
  pk: string;
  n?: number;
  v?: string;
}

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("batch") })).database;
});
afterAll(async () => {
  await t.close();
});

async function newContainer(ranges: number): Promise<Container> {
  const { container } = await db.containers.create(
    { id: uniqueName("c"), partitionKey: { paths: ["/pk"], version: 2 } },
    { offerThroughput: ranges * 6_000 },
  );
  return container;
}

const status = (results: OperationResponse[]) => results.map((r) => r.statusCode);

describe("transactional batch", () => {
  let c: Container;
  beforeAll(async () => {
    c = await newContainer(4);
  });

  it("runs Create, Upsert, Read, Replace, Patch and Delete atomically and persists all of them", async () => {
    for (const id of ["rd", "rep", "pat", "del", "up-old"]) await c.items.create<Doc>({ id, pk: "A", n: 1 });
    const operations: OperationInput[] = [
      { operationType: BulkOperationType.Create, resourceBody: { id: "new", pk: "A", n: 1 } },
      { operationType: BulkOperationType.Upsert, resourceBody: { id: "up-new", pk: "A", n: 2 } },
      { operationType: BulkOperationType.Upsert, resourceBody: { id: "up-old", pk: "A", n: 3 } },
      { operationType: BulkOperationType.Read, id: "rd" },
      { operationType: BulkOperationType.Read, id: "new" },
      { operationType: BulkOperationType.Replace, id: "rep", resourceBody: { id: "rep", pk: "A", n: 4 } },
      {
        operationType: BulkOperationType.Patch,
        id: "pat",
        resourceBody: {
          operations: [{ op: PatchOperationType.incr, path: "/n", value: 10 }],
          condition: "from c where NOT IS_DEFINED(c.v)",
        },
      },
      { operationType: BulkOperationType.Delete, id: "del" },
    ];
    const res = await c.items.batch(operations, "A");
    expect(res.code).toBe(200);
    expect(status(res.result ?? [])).toEqual([201, 201, 200, 200, 200, 200, 200, 204]);
    const result = res.result ?? [];
    expect((result[3].resourceBody as Doc | undefined)?.id).toBe("rd");
    // A read sees the batch's own earlier create.
    expect((result[4].resourceBody as Doc | undefined)?.n).toBe(1);
    expect(result[0].eTag).toBeTruthy();

    expect((await c.item("new", "A").read<Doc>()).resource?.n).toBe(1);
    expect((await c.item("up-new", "A").read<Doc>()).resource?.n).toBe(2);
    expect((await c.item("up-old", "A").read<Doc>()).resource?.n).toBe(3);
    expect((await c.item("rep", "A").read<Doc>()).resource?.n).toBe(4);
    expect((await c.item("pat", "A").read<Doc>()).resource?.n).toBe(11);
    expect((await c.item("del", "A").read()).statusCode).toBe(404);
    // The etag reported for the create is the stored one.
    expect((await c.item("new", "A").read()).etag).toBe(result[0].eTag);
  });

  it("a conflicting second operation: 207 with 409 for it and 424 for the others; nothing persisted", async () => {
    await c.items.create<Doc>({ id: "exists", pk: "B", n: 1 });
    await c.items.create<Doc>({ id: "victim", pk: "B", n: 1 });
    const operations: OperationInput[] = [
      { operationType: BulkOperationType.Create, resourceBody: { id: "b-new1", pk: "B" } },
      { operationType: BulkOperationType.Create, resourceBody: { id: "exists", pk: "B", n: 99 } },
      { operationType: BulkOperationType.Upsert, resourceBody: { id: "b-new2", pk: "B" } },
      { operationType: BulkOperationType.Delete, id: "victim" },
    ];
    const res = await c.items.batch(operations, "B");
    expect(res.code).toBe(207);
    expect(status(res.result ?? [])).toEqual([424, 409, 424, 424]);
    expect((await c.item("b-new1", "B").read()).statusCode).toBe(404);
    expect((await c.item("b-new2", "B").read()).statusCode).toBe(404);
    expect((await c.item("exists", "B").read<Doc>()).resource?.n).toBe(1);
    expect((await c.item("victim", "B").read()).statusCode).toBe(200);
  });

  it("rolls back when a later operation fails its If-Match or finds no item", async () => {
    const v1 = await c.items.create<Doc>({ id: "etag", pk: "C", n: 1 });
    await c.item("etag", "C").replace<Doc>({ id: "etag", pk: "C", n: 2 });
    const stale = await c.items.batch(
      [
        { operationType: BulkOperationType.Upsert, resourceBody: { id: "c-up", pk: "C" } },
        {
          operationType: BulkOperationType.Replace,
          id: "etag",
          resourceBody: { id: "etag", pk: "C", n: 3 },
          ifMatch: v1.etag,
        },
      ],
      "C",
    );
    expect(status(stale.result ?? [])).toEqual([424, 412]);
    expect((await c.item("c-up", "C").read()).statusCode).toBe(404);
    expect((await c.item("etag", "C").read<Doc>()).resource?.n).toBe(2);

    const missing = await c.items.batch(
      [
        { operationType: BulkOperationType.Upsert, resourceBody: { id: "c-up", pk: "C" } },
        { operationType: BulkOperationType.Delete, id: "nobody" },
      ],
      "C",
    );
    expect(status(missing.result ?? [])).toEqual([424, 404]);
    expect((await c.item("c-up", "C").read()).statusCode).toBe(404);
  });

  it("an operation with a different partition key → 400 with the service's message, nothing persisted", async () => {
    const operations: OperationInput[] = [
      { operationType: BulkOperationType.Create, resourceBody: { id: "d1", pk: "D" }, partitionKey: "D" },
      { operationType: BulkOperationType.Create, resourceBody: { id: "d2", pk: "E" }, partitionKey: "E" },
    ];
    // The SDK wraps batch transport errors in a plain Error that keeps the message.
    await expect(c.items.batch(operations, "D")).rejects.toThrow(
      "One or more operations within the batch request have a different partition key value than the request.",
    );
    expect((await c.item("d1", "D").read()).statusCode).toBe(404);
    expect((await c.item("d2", "E").read()).statusCode).toBe(404);
  });

  it("works on a hierarchical partition key container", async () => {
    const { container } = await db.containers.create(
      {
        id: uniqueName("hpk"),
        partitionKey: { paths: ["/a", "/b"], kind: PartitionKeyKind.MultiHash, version: 2 },
      },
      { offerThroughput: 20_000 },
    );
    await container.items.create({ id: "x", a: "1", b: "2", n: 1 });
    const res = await container.items.batch(
      [
        { operationType: BulkOperationType.Create, resourceBody: { id: "y", a: "1", b: "2" } },
        {
          operationType: BulkOperationType.Patch,
          id: "x",
          resourceBody: { operations: [{ op: PatchOperationType.set, path: "/n", value: 5 }] },
        },
      ],
      ["1", "2"],
    );
    expect(status(res.result ?? [])).toEqual([201, 200]);
    expect((await container.item("x", ["1", "2"]).read()).resource?.n).toBe(5);
    expect((await container.item("y", ["1", "2"]).read()).statusCode).toBe(200);
  });
});

describe("bulk", () => {
  it("executeBulkOperations runs 500 creates across 4 ranges, all succeed", async () => {
    const c = await newContainer(4);
    expect((await c.getFeedRanges()).length).toBe(4);
    const operations: OperationInput[] = Array.from({ length: 500 }, (_, i) => ({
      operationType: BulkOperationType.Create,
      // executeBulkOperations (unlike items.bulk) requires partitionKey on every operation, client side.
      partitionKey: `p${i % 97}`,
      resourceBody: { id: `b${i}`, pk: `p${i % 97}`, n: i },
    }));
    const results = await c.items.executeBulkOperations(operations);
    expect(results.length).toBe(500);
    const failed = results.filter((r) => r.error || r.response?.statusCode !== 201);
    expect(failed.map((r) => r.error?.message ?? r.response?.statusCode)).toEqual([]);
    // Results are in input order.
    expect(results.map((r) => ((r.operationInput as { resourceBody?: Doc }).resourceBody as Doc).id)).toEqual(
      operations.map((_, i) => `b${i}`),
    );

    const { resources: count } = await c.items.query<number>("SELECT VALUE COUNT(1) FROM c").fetchAll();
    expect(count).toEqual([500]);
    // Every physical range received documents (the SDK routed by its own EPK hashing, and the emulator
    // accepted each operation on the range it was sent to).
    const stored = t.emulator.account.container(db.id, c.id);
    const perRange = stored.ranges.map((r) => stored.documentsIn({ ranges: [r] }).length);
    expect(perRange.length).toBe(4);
    expect(perRange.every((n) => n > 0)).toBe(true);
    expect(perRange.reduce((a, b) => a + b, 0)).toBe(500);
  });

  it("reports partial failures per operation without failing the rest", async () => {
    const c = await newContainer(4);
    for (let i = 0; i < 20; i++) await c.items.create<Doc>({ id: `e${i}`, pk: `p${i}`, n: i });
    const operations: OperationInput[] = [];
    const expected: number[] = [];
    for (let i = 0; i < 60; i++) {
      operations.push({
        operationType: BulkOperationType.Create,
        partitionKey: `p${i}`,
        resourceBody: { id: `n${i}`, pk: `p${i}`, n: i },
      });
      expected.push(201);
    }
    for (let i = 0; i < 10; i++) {
      // Duplicates of existing documents.
      operations.push({
        operationType: BulkOperationType.Create,
        partitionKey: `p${i}`,
        resourceBody: { id: `e${i}`, pk: `p${i}` },
      });
      expected.push(409);
    }
    for (let i = 0; i < 5; i++) {
      operations.push({
        operationType: BulkOperationType.Replace,
        id: `missing${i}`,
        partitionKey: `p${i}`,
        resourceBody: { id: `missing${i}`, pk: `p${i}` },
      });
      expected.push(404);
    }
    for (let i = 10; i < 15; i++) {
      operations.push({ operationType: BulkOperationType.Read, id: `e${i}`, partitionKey: `p${i}` });
      expected.push(200);
    }
    for (let i = 15; i < 18; i++) {
      operations.push({ operationType: BulkOperationType.Delete, id: `e${i}`, partitionKey: `p${i}` });
      expected.push(204);
    }
    operations.push({
      operationType: BulkOperationType.Patch,
      id: "e18",
      partitionKey: "p18",
      resourceBody: { operations: [{ op: PatchOperationType.incr, path: "/n", value: 100 }] },
    });
    expected.push(200);
    operations.push({
      operationType: BulkOperationType.Upsert,
      partitionKey: "p19",
      resourceBody: { id: "e19", pk: "p19", n: -1 },
    });
    expected.push(200);

    const results = await c.items.executeBulkOperations(operations);
    expect(results.map((r) => r.response?.statusCode ?? r.error?.code)).toEqual(expected);
    for (const r of results.filter((x) => x.error)) expect(r.response).toBeUndefined();

    const { resources: ids } = await c.items.query<string>("SELECT VALUE c.id FROM c").fetchAll();
    expect(ids.length).toBe(20 + 60 - 3);
    expect(ids).not.toContain("missing0");
    expect((await c.item("e0", "p0").read<Doc>()).resource?.n).toBe(0);
    expect((await c.item("e16", "p16").read()).statusCode).toBe(404);
    expect((await c.item("e18", "p18").read<Doc>()).resource?.n).toBe(118);
    expect((await c.item("e19", "p19").read<Doc>()).resource?.n).toBe(-1);
  });

  it("the deprecated items.bulk also works and reports per-operation status codes", async () => {
    const c = await newContainer(2);
    await c.items.create<Doc>({ id: "x", pk: "a" });
    const res = await c.items.bulk([
      { operationType: BulkOperationType.Create, resourceBody: { id: "y", pk: "b" } },
      { operationType: BulkOperationType.Create, resourceBody: { id: "x", pk: "a" } },
      { operationType: BulkOperationType.Upsert, resourceBody: { id: "z", pk: "c" } },
    ]);
    expect(res.map((r) => r.statusCode)).toEqual([201, 409, 201]);
    expect((await c.item("z", "c").read()).statusCode).toBe(200);
  });
});
