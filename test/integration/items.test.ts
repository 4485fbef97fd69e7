import {
  type Container,
  type Database,
  type ItemDefinition,
  PartitionKeyKind,
  type PatchOperation,
  StatusCodes,
} from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RANGE_COUNT_HEADER } from "../../packages/emulator/src/index.js";
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
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("items") })).database;
});
afterAll(async () => {
  await t.close();
});

/** A V2 `/pk` container with `ranges` physical ranges (the service starts one per 6,000 RU/s of manual throughput). */
async function newContainer(ranges = 1): Promise<Container> {
  const { container } = await db.containers.create(
    { id: uniqueName("c"), partitionKey: { paths: ["/pk"], version: 2 } },
    { offerThroughput: Math.max(400, ranges * 6_000) },
  );
  return container;
}

const raw = rawTo(() => t.emulator);

describe("database account", () => {
  it("advertises the endpoint the client used as the writable and readable location", async () => {
    const { resource } = await t.client.getDatabaseAccount();
    expect(resource?.writableLocations.map((l) => l.databaseAccountEndpoint)).toEqual([t.emulator.endpoint]);
    expect(resource?.readableLocations.map((l) => l.databaseAccountEndpoint)).toEqual([t.emulator.endpoint]);
    expect(resource?.consistencyPolicy).toBe("Session");

    const res = await raw("GET", "/");
    expect(res.status).toBe(200);
    const body = res.body as {
      id: string;
      writableLocations: { databaseAccountEndpoint: string }[];
      enableMultipleWriteLocations: boolean;
    };
    expect(body.id).not.toBe("localhost");
    expect(body.writableLocations[0].databaseAccountEndpoint).toBe(t.emulator.endpoint);
    expect(body.enableMultipleWriteLocations).toBe(false);
  });
});

describe("databases", () => {
  it("createIfNotExists creates once, then reads; read, list, query and delete work", async () => {
    const id = uniqueName("db");
    const first = await t.client.databases.createIfNotExists({ id });
    expect(first.statusCode).toBe(201);
    expect(first.resource?.id).toBe(id);
    expect(first.resource?._rid).toBeTruthy();
    expect(first.etag).toBe(first.resource?._etag);
    const second = await t.client.databases.createIfNotExists({ id });
    expect(second.statusCode).toBe(200);
    expect(second.resource?._rid).toBe(first.resource?._rid);

    const read = await t.client.database(id).read();
    expect(read.resource?.id).toBe(id);

    const { resources: all } = await t.client.databases.readAll().fetchAll();
    expect(all.map((d) => d.id)).toContain(id);
    const { resources: found } = await t.client.databases
      .query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: id }] })
      .fetchAll();
    expect(found.map((d) => d.id)).toEqual([id]);

    const dup = await errorOf(() => t.client.databases.create({ id }));
    expect(dup.code).toBe(StatusCodes.Conflict);

    const del = await t.client.database(id).delete();
    expect(del.statusCode).toBe(204);
    const gone = await errorOf(() => t.client.database(id).read());
    expect(gone.code).toBe(StatusCodes.NotFound);
    const { resources: after } = await t.client.databases.readAll().fetchAll();
    expect(after.map((d) => d.id)).not.toContain(id);
  });
});

describe("containers", () => {
  it("createIfNotExists creates once, then reads; read, list and delete work", async () => {
    const id = uniqueName("c");
    const first = await db.containers.createIfNotExists({ id, partitionKey: "/pk" });
    expect(first.statusCode).toBe(201);
    const second = await db.containers.createIfNotExists({ id, partitionKey: "/pk" });
    expect(second.statusCode).toBe(200);
    expect(second.resource?._rid).toBe(first.resource?._rid);

    const read = await db.container(id).read();
    expect(read.resource?.id).toBe(id);
    expect(read.resource?.partitionKey?.paths).toEqual(["/pk"]);

    const { resources: list } = await db.containers.readAll().fetchAll();
    expect(list.map((c) => c.id)).toContain(id);

    const dup = await errorOf(() => db.containers.create({ id, partitionKey: "/pk" }));
    expect(dup.code).toBe(StatusCodes.Conflict);

    expect((await db.container(id).delete()).statusCode).toBe(204);
    expect((await errorOf(() => db.container(id).read())).code).toBe(StatusCodes.NotFound);
    const { resources: after } = await db.containers.readAll().fetchAll();
    expect(after.map((c) => c.id)).not.toContain(id);
  });

  it("a container in a missing database is a 404", async () => {
    const err = await errorOf(() => t.client.database(uniqueName("nodb")).container("c").read());
    expect(err.code).toBe(StatusCodes.NotFound);
  });

  it("partition key definition V1 is the default when version is omitted", async () => {
    const { resource } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: { paths: ["/pk"] },
    });
    expect(resource?.partitionKey).toEqual({ paths: ["/pk"], kind: "Hash", version: 1 });
    const str = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    expect(str.resource?.partitionKey).toEqual({ paths: ["/pk"], kind: "Hash", version: 1 });
  });

  it("partition key definition V2 is echoed", async () => {
    const { resource } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: { paths: ["/pk"], version: 2 },
    });
    expect(resource?.partitionKey).toEqual({ paths: ["/pk"], kind: "Hash", version: 2 });
  });

  it("a hierarchical (MultiHash) partition key with 3 paths is echoed with kind and version", async () => {
    const { resource } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: { paths: ["/a", "/b", "/c"], kind: PartitionKeyKind.MultiHash, version: 2 },
    });
    expect(resource?.partitionKey).toEqual({ paths: ["/a", "/b", "/c"], kind: "MultiHash", version: 2 });
    const read = await db.container(resource?.id as string).read();
    expect(read.resource?.partitionKey).toEqual(resource?.partitionKey);
  });

  it("echoes defaultTtl and refuses invalid values (0, -10, null) with 400", async () => {
    const { resource } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      defaultTtl: 5,
    });
    expect(resource?.defaultTtl).toBe(5);
    const on = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk", defaultTtl: -1 });
    expect(on.resource?.defaultTtl).toBe(-1);
    const off = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    expect(off.resource?.defaultTtl).toBeUndefined();
    for (const bad of [0, -10, null]) {
      const id = uniqueName("c");
      const err = await errorOf(() =>
        db.containers.create({ id, partitionKey: "/pk", defaultTtl: bad as unknown as number }),
      );
      expect(err.code, `defaultTtl ${bad}`).toBe(StatusCodes.BadRequest);
      expect((await errorOf(() => db.container(id).read())).code).toBe(StatusCodes.NotFound);
    }
  });

  it("derives the number of ranges from throughput: 24000 RU/s → 4, 400 → 1", async () => {
    const big = await db.containers.create(
      { id: uniqueName("c"), partitionKey: "/pk" },
      { offerThroughput: 24_000 },
    );
    const bigRanges = await big.container.getFeedRanges();
    expect(bigRanges.length).toBe(4);
    const small = await db.containers.create(
      { id: uniqueName("c"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    expect((await small.container.getFeedRanges()).length).toBe(1);
  });

  it("x-ms-emulator-partition-count sets the number of ranges; invalid values are a 400", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("c"), partitionKey: "/pk" },
      { initialHeaders: { [RANGE_COUNT_HEADER]: "3" } },
    );
    expect((await container.getFeedRanges()).length).toBe(3);
    // The header wins over throughput.
    const both = await db.containers.create(
      { id: uniqueName("c"), partitionKey: "/pk" },
      { offerThroughput: 40_000, initialHeaders: { [RANGE_COUNT_HEADER]: "2" } },
    );
    expect((await both.container.getFeedRanges()).length).toBe(2);
    for (const bad of ["0", "abc", "1000"]) {
      const err = await errorOf(() =>
        db.containers.create(
          { id: uniqueName("c"), partitionKey: "/pk" },
          { initialHeaders: { [RANGE_COUNT_HEADER]: bad } },
        ),
      );
      expect(err.code, `partition count ${bad}`).toBe(StatusCodes.BadRequest);
    }
  });
});

describe("item CRUD", () => {
  let c: Container;
  beforeAll(async () => {
    c = await newContainer(4);
  });

  it("create → 201 with system properties; read returns exactly the created document", async () => {
    const created = await c.items.create<Doc>({ id: "a", pk: "p1", n: 1 });
    expect(created.statusCode).toBe(201);
    const doc = created.resource as Doc & { _etag: string; _rid: string; _ts: number; _self: string };
    expect(doc._etag).toMatch(/^".+"$/);
    expect(created.etag).toBe(doc._etag);
    expect(doc._rid).toBeTruthy();
    expect(doc._self).toContain(doc._rid);
    expect(Math.abs(doc._ts - Date.now() / 1000)).toBeLessThan(60);

    const read = await c.item("a", "p1").read<Doc>();
    expect(read.statusCode).toBe(200);
    expect(read.resource).toEqual(created.resource);
    expect(read.etag).toBe(doc._etag);
  });

  it("the same id in another partition key is another document", async () => {
    await c.items.create<Doc>({ id: "same", pk: "p1", n: 1 });
    await c.items.create<Doc>({ id: "same", pk: "p2", n: 2 });
    expect((await c.item("same", "p1").read<Doc>()).resource?.n).toBe(1);
    expect((await c.item("same", "p2").read<Doc>()).resource?.n).toBe(2);
  });

  it("replace → 200 with a new etag; upsert → 201 when new, 200 when replacing; delete → 204", async () => {
    const created = await c.items.create<Doc>({ id: "r", pk: "p1", n: 1 });
    const replaced = await c.item("r", "p1").replace<Doc>({ id: "r", pk: "p1", n: 2 });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.resource?.n).toBe(2);
    expect(replaced.etag).not.toBe(created.etag);
    expect(replaced.resource?._rid).toBe(created.resource?._rid);

    const up1 = await c.items.upsert<Doc>({ id: "u", pk: "p3", n: 1 });
    expect(up1.statusCode).toBe(201);
    const up2 = await c.items.upsert<Doc>({ id: "u", pk: "p3", n: 2 });
    expect(up2.statusCode).toBe(200);
    expect((await c.item("u", "p3").read<Doc>()).resource?.n).toBe(2);

    const del = await c.item("r", "p1").delete();
    expect(del.statusCode).toBe(204);
    expect(del.resource).toBeFalsy();
    expect((await c.item("r", "p1").read()).statusCode).toBe(404);
  });

  it("reading a missing item resolves with statusCode 404 (no throw)", async () => {
    const res = await c.item("missing", "p1").read();
    expect(res.statusCode).toBe(404);
    expect(res.resource).toBeUndefined();
    // Replace and delete of a missing item throw 404.
    expect((await errorOf(() => c.item("missing", "p1").delete())).code).toBe(404);
    expect((await errorOf(() => c.item("missing", "p1").replace({ id: "missing", pk: "p1" }))).code).toBe(
      404,
    );
  });

  it("create of an existing id → 409", async () => {
    await c.items.create<Doc>({ id: "dup", pk: "p1" });
    const err = await errorOf(() => c.items.create<Doc>({ id: "dup", pk: "p1" }));
    expect(err.code).toBe(StatusCodes.Conflict);
    expect(err.body?.code).toBe("Conflict");
  });

  it("If-Match with a stale etag → 412 for replace, delete, upsert and patch; the current etag succeeds", async () => {
    const v1 = await c.items.create<Doc>({ id: "im", pk: "p1", n: 1 });
    const v2 = await c.item("im", "p1").replace<Doc>({ id: "im", pk: "p1", n: 2 });
    const stale = { accessCondition: { type: "IfMatch", condition: v1.etag } };
    expect((await errorOf(() => c.item("im", "p1").replace({ id: "im", pk: "p1", n: 3 }, stale))).code).toBe(
      412,
    );
    expect((await errorOf(() => c.item("im", "p1").delete(stale))).code).toBe(412);
    expect((await errorOf(() => c.items.upsert({ id: "im", pk: "p1", n: 3 }, stale))).code).toBe(412);
    const patchErr = await errorOf(() =>
      c.item("im", "p1").patch([{ op: "incr", path: "/n", value: 1 }], stale),
    );
    expect(patchErr.code).toBe(412);
    expect(patchErr.body?.code).toBe("PreconditionFailed");
    // Nothing changed.
    expect((await c.item("im", "p1").read<Doc>()).resource?.n).toBe(2);

    const current = { accessCondition: { type: "IfMatch", condition: v2.etag } };
    const v3 = await c.item("im", "p1").replace<Doc>({ id: "im", pk: "p1", n: 3 }, current);
    expect(v3.resource?.n).toBe(3);
    const v4 = await c.item("im", "p1").patch<Doc>([{ op: "incr", path: "/n", value: 1 }], {
      accessCondition: { type: "IfMatch", condition: v3.etag },
    });
    expect(v4.resource?.n).toBe(4);
    const v5 = await c.items.upsert<Doc>(
      { id: "im", pk: "p1", n: 5 },
      { accessCondition: { type: "IfMatch", condition: v4.etag } },
    );
    expect(v5.statusCode).toBe(200);
    const del = await c.item("im", "p1").delete({ accessCondition: { type: "IfMatch", condition: v5.etag } });
    expect(del.statusCode).toBe(204);
  });

  it("If-None-Match on read → 304 when unchanged, 200 after a change", async () => {
    const created = await c.items.create<Doc>({ id: "inm", pk: "p1", n: 1 });
    const notModified = await c
      .item("inm", "p1")
      .read({ accessCondition: { type: "IfNoneMatch", condition: created.etag } });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.resource).toBeFalsy();
    await c.item("inm", "p1").replace<Doc>({ id: "inm", pk: "p1", n: 2 });
    const changed = await c
      .item("inm", "p1")
      .read<Doc>({ accessCondition: { type: "IfNoneMatch", condition: created.etag } });
    expect(changed.statusCode).toBe(200);
    expect(changed.resource?.n).toBe(2);
  });

  it("stores ids with '/', '\\' and '#' as the service does (raw HTTP: the SDK checks some client side)", async () => {
    const path = `/dbs/${db.id}/colls/${c.id}/docs`;
    // '?' is accepted in item ids (ids-and-keys.test.ts); so are '/', '\\' and '#', as the service accepts them
    // (Microsoft's CosmosItemTests.CreateDropItemWithInvalidIdCharactersTest).
    for (const id of ["a/b", "a\\b", "a#b"]) {
      const res = await raw("POST", path, {
        body: { id, pk: "p1" },
        headers: { "x-ms-documentdb-partitionkey": '["p1"]' },
      });
      expect(res.status, `id ${JSON.stringify(id)}`).toBe(201);
    }
    // The SDK refuses '/' itself, before sending.
    await expect(c.items.create({ id: "x/y", pk: "p1" })).rejects.toThrow(/illegal/i);
  });

  it("refuses ids longer than 1,023 bytes and a missing id with 400", async () => {
    const long = await errorOf(() => c.items.create<Doc>({ id: "x".repeat(1024), pk: "p1" }));
    expect(long.code).toBe(400);
    expect(long.message).toMatch(/1023/);
    const ok = await c.items.create<Doc>({ id: "y".repeat(1023), pk: "p1" });
    expect(ok.statusCode).toBe(201);

    const res = await raw("POST", `/dbs/${db.id}/colls/${c.id}/docs`, {
      body: { pk: "p1", n: 1 },
      headers: { "x-ms-documentdb-partitionkey": '["p1"]' },
    });
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(/id/);
    const noId = await errorOf(() =>
      c.items.create({ pk: "p1", n: 1 } as unknown as Doc, { disableAutomaticIdGeneration: true }),
    );
    expect(noId.code).toBe(400);
  });

  it("an item over 2 MB → 413 RequestEntityTooLarge; one just under is accepted", async () => {
    const big = { id: "big", pk: "p1", blob: "x".repeat(2 * 1024 * 1024) };
    const err = await errorOf(() => c.items.create(big));
    expect(err.code).toBe(413);
    expect(err.body?.code).toBe("RequestEntityTooLarge");
    expect((await c.item("big", "p1").read()).statusCode).toBe(404);
    const fits = await c.items.create({ id: "fits", pk: "p1", blob: "x".repeat(2 * 1024 * 1024 - 1024) });
    expect(fits.statusCode).toBe(201);
  });

  it("a partition key header that does not match the document → 400", async () => {
    const res = await raw("POST", `/dbs/${db.id}/colls/${c.id}/docs`, {
      body: { id: "mismatch", pk: "p1" },
      headers: { "x-ms-documentdb-partitionkey": '["p2"]' },
    });
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(/PartitionKey/);
    // Through the SDK: replace addressed to partition p2 with a body in p1.
    await c.items.create<Doc>({ id: "mm", pk: "p1" });
    const err = await errorOf(() => c.item("mm", "p2").replace<Doc>({ id: "mm", pk: "p1", n: 9 }));
    expect(err.code).toBe(400);
    await c.items.create<Doc>({ id: "mm", pk: "p2" });
    const err2 = await errorOf(() => c.item("mm", "p2").replace<Doc>({ id: "mm", pk: "p1", n: 9 }));
    expect(err2.code).toBe(400);
    expect((await c.item("mm", "p1").read<Doc>()).resource?.n).toBeUndefined();
  });

  it("a V1 container with 4 ranges stores, reads and scopes items by partition key", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("c"), partitionKey: { paths: ["/pk"] } },
      { offerThroughput: 24_000 },
    );
    expect((await container.getFeedRanges()).length).toBe(4);
    for (let i = 0; i < 20; i++) await container.items.create<Doc>({ id: `v${i}`, pk: `k${i % 5}`, n: i });
    expect((await container.item("v7", "k2").read<Doc>()).resource?.n).toBe(7);
    const { resources } = await container.items
      .query<Doc>("SELECT * FROM c", { partitionKey: "k3" })
      .fetchAll();
    expect(resources.map((d) => d.n).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([3, 8, 13, 18]);
    const { resources: all } = await container.items.readAll<Doc>().fetchAll();
    expect(all.length).toBe(20);
  });
});

describe("patch", () => {
  let c: Container;
  beforeAll(async () => {
    c = await newContainer(2);
  });

  it("applies add, set, replace, remove, incr and move", async () => {
    await c.items.create({
      id: "p",
      pk: "a",
      n: 1,
      tags: ["x", "z"],
      name: "old",
      gone: true,
      nested: { from: 42 },
    });
    const ops = [
      { op: "add", path: "/tags/1", value: "y" },
      { op: "add", path: "/tags/-", value: "end" },
      { op: "add", path: "/added", value: { deep: 1 } },
      { op: "set", path: "/name", value: "new" },
      { op: "set", path: "/created", value: 7 },
      { op: "replace", path: "/n", value: 10 },
      { op: "remove", path: "/gone" },
      { op: "incr", path: "/n", value: 5 },
      { op: "incr", path: "/counter", value: -2 },
      { op: "move", from: "/nested/from", path: "/moved" },
    ] as unknown as PatchOperation[];
    const res = await c.item("p", "a").patch(ops);
    expect(res.statusCode).toBe(200);
    const doc = res.resource as Record<string, unknown>;
    expect(doc.tags).toEqual(["x", "y", "z", "end"]);
    expect(doc.added).toEqual({ deep: 1 });
    expect(doc.name).toBe("new");
    expect(doc.created).toBe(7);
    expect(doc.n).toBe(15);
    expect(doc.counter).toBe(-2);
    expect("gone" in doc).toBe(false);
    expect(doc.nested).toEqual({});
    expect(doc.moved).toBe(42);
    // The patched version is what is stored.
    expect((await c.item("p", "a").read()).resource).toEqual(doc);
  });

  it("replace or remove of a missing path → 400, and nothing is applied", async () => {
    await c.items.create({ id: "q", pk: "a", n: 1 });
    const err = await errorOf(() =>
      c.item("q", "a").patch([
        { op: "incr", path: "/n", value: 1 },
        { op: "replace", path: "/nope", value: 1 },
      ]),
    );
    expect(err.code).toBe(400);
    expect((await errorOf(() => c.item("q", "a").patch([{ op: "remove", path: "/nope" }]))).code).toBe(400);
    expect((await c.item("q", "a").read()).resource?.n).toBe(1);
  });

  it("a filter condition that holds applies; one that fails → 412", async () => {
    await c.items.create({ id: "cond", pk: "a", status: "open", n: 0 });
    const ok = await c.item("cond", "a").patch({
      condition: "FROM c WHERE c.status = 'open'",
      operations: [{ op: "set", path: "/status", value: "closed" }],
    });
    expect(ok.resource?.status).toBe("closed");
    const err = await errorOf(() =>
      c.item("cond", "a").patch({
        condition: "from c where c.status = 'open'",
        operations: [{ op: "incr", path: "/n", value: 1 }],
      }),
    );
    expect(err.code).toBe(412);
    expect((await c.item("cond", "a").read()).resource?.n).toBe(0);
  });

  it("patching id, a system property or the partition key → 400", async () => {
    await c.items.create({ id: "imm", pk: "a", n: 0 });
    for (const op of [
      { op: "set", path: "/id", value: "other" },
      { op: "set", path: "/pk", value: "b" },
      { op: "remove", path: "/pk" },
      { op: "set", path: "/_etag", value: "x" },
    ] as PatchOperation[]) {
      const err = await errorOf(() => c.item("imm", "a").patch([op]));
      expect(err.code, JSON.stringify(op)).toBe(400);
    }
    expect((await c.item("imm", "a").read()).resource?.id).toBe("imm");
  });

  it("more than 10 operations → 400; exactly 10 succeed", async () => {
    await c.items.create({ id: "many", pk: "a", n: 0 });
    const ops = (k: number): PatchOperation[] =>
      Array.from({ length: k }, () => ({ op: "incr", path: "/n", value: 1 }) as PatchOperation);
    expect((await errorOf(() => c.item("many", "a").patch(ops(11)))).code).toBe(400);
    const ok = await c.item("many", "a").patch(ops(10));
    expect(ok.resource?.n).toBe(10);
  });

  it("patching a missing item → 404", async () => {
    const err = await errorOf(() => c.item("nobody", "a").patch([{ op: "set", path: "/x", value: 1 }]));
    expect(err.code).toBe(404);
  });
});

describe("hierarchical partition keys", () => {
  interface HDoc extends ItemDefinition {
    id: string;
    tenant: string;
    user: string;
    session: string;
  }
  let c: Container;
  const keys: [string, string, string][] = [
    ["t1", "u1", "s1"],
    ["t1", "u1", "s2"],
    ["t1", "u2", "s1"],
    ["t2", "u1", "s1"],
    ["t10", "u1", "s1"],
    ["t3", "u9", "s9"],
  ];

  beforeAll(async () => {
    const res = await db.containers.create(
      {
        id: uniqueName("hpk"),
        partitionKey: {
          paths: ["/tenant", "/user", "/session"],
          kind: PartitionKeyKind.MultiHash,
          version: 2,
        },
      },
      { offerThroughput: 24_000 },
    );
    c = res.container;
    let i = 0;
    for (const [tenant, user, session] of keys) {
      for (let k = 0; k < 3; k++) await c.items.create<HDoc>({ id: `d${i++}`, tenant, user, session });
    }
  });

  it("point reads need the full 3-level key", async () => {
    const read = await c.item("d0", ["t1", "u1", "s1"]).read<HDoc>();
    expect(read.statusCode).toBe(200);
    expect(read.resource?.session).toBe("s1");
    expect((await c.item("d0", ["t1", "u1", "s2"]).read()).statusCode).toBe(404);
    const replaced = await c
      .item("d0", ["t1", "u1", "s1"])
      .replace<HDoc>({ id: "d0", tenant: "t1", user: "u1", session: "s1", extra: 1 } as HDoc);
    expect(replaced.statusCode).toBe(200);
  });

  it("a prefix key query returns exactly that prefix's items", async () => {
    const { resources: t1 } = await c.items
      .query<HDoc>("SELECT * FROM c", { partitionKey: ["t1"] })
      .fetchAll();
    expect(t1.length).toBe(9);
    expect(new Set(t1.map((d) => d.tenant))).toEqual(new Set(["t1"]));

    const { resources: t1u1 } = await c.items
      .query<HDoc>("SELECT * FROM c", { partitionKey: ["t1", "u1"] })
      .fetchAll();
    expect(t1u1.length).toBe(6);
    expect(t1u1.every((d) => d.tenant === "t1" && d.user === "u1")).toBe(true);

    const { resources: full } = await c.items
      .query<HDoc>("SELECT * FROM c", { partitionKey: ["t1", "u1", "s2"] })
      .fetchAll();
    expect(full.map((d) => d.id).sort()).toEqual(["d3", "d4", "d5"]);

    const { resources: all } = await c.items.query<HDoc>("SELECT * FROM c").fetchAll();
    expect(all.length).toBe(keys.length * 3);
  });
});

describe("error shape", () => {
  it("errors have a JSON {code, message} body and every response a unique x-ms-activity-id", async () => {
    const c = await newContainer(1);
    await c.items.create<Doc>({ id: "e", pk: "a" });
    const base = `/dbs/${db.id}/colls/${c.id}`;
    const pk = { "x-ms-documentdb-partitionkey": '["a"]' };
    const responses = [
      await raw("GET", `${base}/docs/nope`, { headers: pk }),
      await raw("POST", `${base}/docs`, { body: { id: "e", pk: "a" }, headers: pk }),
      await raw("POST", `${base}/docs`, { body: "{not json", headers: pk }),
      await raw("GET", `/dbs/${uniqueName("nodb")}`),
      await raw("GET", `${base}/docs/e`, { headers: pk }),
      await raw("GET", `${base}/docs/e`, { headers: pk }),
    ];
    expect(responses.map((r) => r.status)).toEqual([404, 409, 400, 404, 200, 200]);
    for (const r of responses.slice(0, 4)) {
      const body = r.body as { code: unknown; message: unknown };
      expect(typeof body.code).toBe("string");
      expect(typeof body.message).toBe("string");
      expect(r.headers.get("content-type")).toMatch(/application\/json/);
      // The message names the activity, as the service's do.
      expect(body.message).toContain(r.headers.get("x-ms-activity-id"));
    }
    expect(responses.map((r) => (r.body as { code: string }).code).slice(0, 4)).toEqual([
      "NotFound",
      "Conflict",
      "BadRequest",
      "NotFound",
    ]);
    const ids = responses.map((r) => r.headers.get("x-ms-activity-id"));
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);

    // The SDK surfaces the same: code, body and activity id.
    const err = await errorOf(() => c.items.create<Doc>({ id: "e", pk: "a" }));
    expect(err.code).toBe(409);
    expect(err.body).toMatchObject({ code: "Conflict", message: expect.any(String) });
    expect(err.activityId).toBeTruthy();
    expect(ids).not.toContain(err.activityId);
  });
});
