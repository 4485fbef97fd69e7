import { ChangeFeedStartFrom, type Database, StatusCodes } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("defs") })).database;
});
afterAll(async () => {
  await t.close();
});

const errorOf = (p: Promise<unknown>): Promise<{ code?: number; message?: string }> =>
  p.then(
    () => ({}),
    (e: { code?: number; message?: string }) => e,
  );

const ETAG_EXCLUDED = { path: '/"_etag"/?' };

describe("indexing policy", () => {
  it("defaults to the service's policy", async () => {
    const { resource } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    expect(resource?.indexingPolicy).toEqual({
      indexingMode: "consistent",
      automatic: true,
      includedPaths: [{ path: "/*" }],
      excludedPaths: [ETAG_EXCLUDED],
    });
  });

  it("returns a user policy as given, with what the service fills in (mode, automatic, the _etag exclusion)", async () => {
    const { resource } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      indexingPolicy: { includedPaths: [{ path: "/*" }], excludedPaths: [{ path: "/secret/?" }] },
    });
    expect(resource?.indexingPolicy).toEqual({
      indexingMode: "consistent",
      automatic: true,
      includedPaths: [{ path: "/*" }],
      excludedPaths: [{ path: "/secret/?" }, ETAG_EXCLUDED],
    });
    // A policy that names _etag itself keeps it as given.
    const withEtag = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      indexingPolicy: { includedPaths: [{ path: "/*" }, { path: '/"_etag"/?' }], excludedPaths: [] },
    });
    expect(withEtag.resource?.indexingPolicy?.excludedPaths).toEqual([]);
    // Exclude-all with selected included paths.
    const selective = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      indexingPolicy: { includedPaths: [{ path: "/name/?" }], excludedPaths: [{ path: "/*" }] },
    });
    expect(selective.resource?.indexingPolicy?.includedPaths).toEqual([{ path: "/name/?" }]);
    expect(selective.resource?.indexingPolicy?.excludedPaths).toEqual([{ path: "/*" }, ETAG_EXCLUDED]);
  });

  it("refuses a policy without the root path, the lazy mode and unknown modes", async () => {
    for (const indexingPolicy of [
      { includedPaths: [{ path: "/name/?" }], excludedPaths: [] },
      { indexingMode: "lazy" },
      { indexingMode: "sometimes" },
      { includedPaths: [{ path: "name" }] },
    ]) {
      const e = await errorOf(
        db.containers.create({
          id: uniqueName("c"),
          partitionKey: "/pk",
          indexingPolicy: indexingPolicy as never,
        }),
      );
      expect(e.code, JSON.stringify(indexingPolicy)).toBe(400);
    }
  });

  it("fills in composite index order (ascending) and refuses any other order", async () => {
    const { resource } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      // The SDK's type makes `order` required; the service fills it in when omitted.
      indexingPolicy: {
        compositeIndexes: [[{ path: "/name" }, { path: "/age", order: "descending" }]],
      } as never,
    });
    expect(resource?.indexingPolicy?.compositeIndexes).toEqual([
      [
        { path: "/name", order: "ascending" },
        { path: "/age", order: "descending" },
      ],
    ]);
    for (const compositeIndexes of [
      [[{ path: "/name", order: "asc" }, { path: "/age" }]],
      [[{ path: "/name", order: "up" }, { path: "/age" }]],
      [[{ path: "/name" }]],
      [[{ path: "/name/*" }, { path: "/age" }]],
    ]) {
      const e = await errorOf(
        db.containers.create({
          id: uniqueName("c"),
          partitionKey: "/pk",
          indexingPolicy: { compositeIndexes } as never,
        }),
      );
      expect(e.code, JSON.stringify(compositeIndexes)).toBe(400);
    }
  });

  it("normalizes a replaced policy the same way", async () => {
    const { container, resource } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    if (!resource) throw new Error("no container");
    const { resource: replaced } = await container.replace({
      ...resource,
      indexingPolicy: {
        indexingMode: "consistent",
        includedPaths: [{ path: "/*" }],
        excludedPaths: [],
        compositeIndexes: [[{ path: "/a" }, { path: "/b" }]],
      } as never,
    });
    expect(replaced?.indexingPolicy?.excludedPaths).toEqual([ETAG_EXCLUDED]);
    expect(replaced?.indexingPolicy?.compositeIndexes?.[0]?.[0]?.order).toBe("ascending");
    const bad = await errorOf(
      container.replace({
        ...resource,
        indexingPolicy: { compositeIndexes: [[{ path: "/a", order: "sideways" }, { path: "/b" }]] } as never,
      }),
    );
    expect(bad.code).toBe(400);
  });
});

describe("container response headers", () => {
  it("reports index transformation progress, and quota and usage when populateQuotaInfo is set", async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    for (let i = 0; i < 3; i++) await container.items.create({ id: `d${i}`, pk: "a", pad: "x".repeat(1500) });
    const plain = await container.read();
    expect(plain.headers["x-ms-documentdb-collection-index-transformation-progress"]).toBe("100");
    expect(plain.headers["x-ms-resource-quota"]).toBeUndefined();
    const withQuota = await container.read({ populateQuotaInfo: true });
    expect(withQuota.headers["x-ms-documentdb-collection-index-transformation-progress"]).toBe("100");
    expect(withQuota.headers["x-ms-resource-quota"]).toBe(
      "documentSize=10240;documentsSize=10485760;documentsCount=-1;collectionSize=10485760;",
    );
    const usage = Object.fromEntries(
      String(withQuota.headers["x-ms-resource-usage"])
        .split(";")
        .filter(Boolean)
        .map((kv) => kv.split("=")),
    );
    expect(usage.documentsCount).toBe("3");
    expect(Number(usage.documentsSize)).toBeGreaterThanOrEqual(5);
  });
});

describe("defaultTtl", () => {
  it("is bounded to a 32-bit signed integer, as the service", async () => {
    const max = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      defaultTtl: 2147483647,
    });
    expect(max.resource?.defaultTtl).toBe(2147483647);
    expect(
      await errorOf(
        db.containers.create({ id: uniqueName("c"), partitionKey: "/pk", defaultTtl: 2147483648 }),
      ),
    ).toMatchObject({ code: 400 });
    if (!max.resource) throw new Error("no container");
    expect(await errorOf(max.container.replace({ ...max.resource, defaultTtl: 2 ** 40 }))).toMatchObject({
      code: 400,
    });
    expect((await max.container.read()).resource?.defaultTtl).toBe(2147483647);
  });
});

describe("ids outside Latin-1", () => {
  it("a database and container named 'sample 中文 database' work end to end", async () => {
    const name = "sample 中文 database";
    const { database } = await t.client.databases.create({ id: name });
    const { container, headers } = await database.containers.create({ id: name, partitionKey: "/pk" });
    // Header values are ASCII: the path is percent-encoded per segment.
    expect(headers["x-ms-alt-content-path"]).toBe(`dbs/${encodeURIComponent(name)}`);
    expect((await database.read()).resource?.id).toBe(name);
    expect((await container.read()).resource?.id).toBe(name);
    await container.items.create({ id: "文档 1", pk: "键" });
    const read = await container.item("文档 1", "键").read();
    expect(read.statusCode).toBe(200);
    const { resources } = await container.items.query("SELECT c.id FROM c").fetchAll();
    expect(resources).toEqual([{ id: "文档 1" }]);
    const feed = await container.items
      .getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() })
      .readNext();
    expect(feed.result.map((d) => d.id)).toEqual(["文档 1"]);
    const { resources: listed } = await database.containers.readAll().fetchAll();
    expect(listed.map((c) => c.id)).toEqual([name]);
    expect((await container.delete()).statusCode).toBe(StatusCodes.NoContent);
    expect((await database.delete()).statusCode).toBe(StatusCodes.NoContent);
    // Still serving.
    expect((await db.read()).statusCode).toBe(200);
  });
});
