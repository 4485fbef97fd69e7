import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawTo } from "../support/raw.js";
import { errorOf } from "../support/sdk-error.js";

/*
 * Where Microsoft's own emulator tests of the .NET SDK (azure-cosmos-dotnet-v3, Microsoft.Azure.Cosmos.EmulatorTests,
 * checked through the .NET SDK in test/interop/emulator-tests.test.ts) found the emulator answering otherwise than
 * the service: each fix's own check here, with the Node SDK or raw HTTP.
 */

let t: TestEmulator;
let db: Database;
let c: Container;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("mset") })).database;
  c = (await db.containers.create({ id: uniqueName("c"), partitionKey: { paths: ["/pk"], version: 2 } }))
    .container;
});
afterAll(async () => {
  await t.close();
});

const raw = rawTo(() => t.emulator);

describe("ids with '/', '\\' or '#' (CosmosItemTests.CreateDropItemWithInvalidIdCharactersTest)", () => {
  it("are stored at create; a name-based read of a '/' id is a 404; a query finds them; the RID address reaches them", async () => {
    const docs = `/dbs/${db.id}/colls/${c.id}/docs`;
    for (const id of ["a/b", "a\\b", "a#b", "Invalid#/\\?Id"]) {
      const res = await raw("POST", docs, {
        body: { id, pk: "inv" },
        headers: { "x-ms-documentdb-partitionkey": '["inv"]' },
      });
      expect(res.status, id).toBe(201);
    }
    const read = await raw("GET", `${docs}/a%2Fb`, {
      headers: { "x-ms-documentdb-partitionkey": '["inv"]' },
    });
    expect(read.status).toBe(404);
    const { resources } = await c.items
      .query<{ id: string; _rid: string }>("SELECT c.id, c._rid FROM c WHERE CONTAINS(c.id, '/')")
      .fetchAll();
    expect(resources.map((r) => r.id).sort()).toEqual(["Invalid#/\\?Id", "a/b"]);
    const { resource: props } = await c.read();
    const [, dbRid, , collRid] = (props?._self as string).split("/");
    const docRid = resources.find((r) => r.id === "a/b")?._rid as string;
    // Signed as the .NET SDK signs a RID address: the addressed resource's RID, lower-cased.
    const renamed = await raw("PUT", `/dbs/${dbRid}/colls/${collRid}/docs/${docRid}`, {
      body: { id: "renamed", pk: "inv" },
      headers: { "x-ms-documentdb-partitionkey": '["inv"]' },
      resourceType: "docs",
      resourceId: docRid.toLowerCase(),
    });
    expect(renamed.status).toBe(200);
    expect((await c.item("renamed", "inv").read()).statusCode).toBe(200);
  });
});

describe("patch (CosmosItemTests.ItemPatchFailureTest)", () => {
  it("an add under a missing parent is a 400 in the service's words, not a path created recursively", async () => {
    await c.items.create({ id: "p", pk: "patch", cost: 1 });
    const err = await errorOf(() =>
      c.item("p", "patch").patch([
        { op: "add", path: "/nonExistentParent/Child", value: "bar" },
        { op: "remove", path: "/cost" },
      ]),
    );
    expect(err.code).toBe(400);
    expect(err.message).toContain(
      "For Operation(1): Add Operation can only create a child object of an existing node(array or object) and cannot create path recursively, no path found beyond: 'nonExistentParent'.",
    );
    const setErr = await errorOf(() =>
      c.item("p", "patch").patch([
        { op: "set", path: "/n", value: 1 },
        { op: "set", path: "/a/b", value: 1 },
      ]),
    );
    expect(setErr.message).toContain("For Operation(2): Set Operation can only create a child object");
    const { resource } = await c.item("p", "patch").read<{ cost?: number; n?: number; a?: unknown }>();
    expect(resource).toMatchObject({ cost: 1 });
    expect(resource?.n).toBeUndefined();
    expect(resource?.a).toBeUndefined();
    const ok = await c.item("p", "patch").patch([{ op: "add", path: "/child", value: { x: 1 } }]);
    expect(ok.resource).toMatchObject({ child: { x: 1 } });
  });
});

describe("queries (CosmosItemTests.ValidateMaxItemCountOnItemQuery, NegativeQueryTest)", () => {
  it("a query of one partition key ends on its exactly full last page: pages of 1 (and 2) over 6 documents, no empty page", async () => {
    for (let i = 0; i < 6; i++) await c.items.create({ id: `q${i}`, pk: "max" });
    for (const size of [1, 2]) {
      const it = c.items.query(
        { query: "SELECT * FROM t WHERE t.pk = @pk", parameters: [{ name: "@pk", value: "max" }] },
        { partitionKey: "max", maxItemCount: size },
      );
      const sizes: number[] = [];
      while (it.hasMoreResults() && sizes.length < 20) sizes.push((await it.fetchNext()).resources.length);
      expect(sizes).toEqual(Array.from({ length: 6 / size }, () => size));
    }
  });

  it("ResponseContinuationTokenLimitInKb 0 is a 400 saying the limit is not large enough", async () => {
    const res = await raw("POST", `/dbs/${db.id}/colls/${c.id}/docs`, {
      body: { query: "SELECT r.id FROM root r WHERE r._ts > 0" },
      headers: {
        "content-type": "application/query+json",
        "x-ms-documentdb-isquery": "true",
        "x-ms-documentdb-query-enablecrosspartition": "true",
        "x-ms-documentdb-responsecontinuationtokenlimitinkb": "0",
      },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain("continuation token limit specified is not large enough");
  });
});
