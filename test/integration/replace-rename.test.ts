/**
 * Replace with a body id other than the URL's renames the document, as the service does (.NET's
 * `ReplaceItemAsync(item with a new id, oldId, pk)`): the old id is gone, the new one has the same `_rid`, the
 * change feeds show a replace of the new id, and a restart keeps it so.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChangeFeedMode, ChangeFeedStartFrom, type Container } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { errorOf } from "../support/sdk-error.js";

interface Doc {
  id: string;
  pk: string;
  n: number;
  _rid?: string;
}

let t: TestEmulator;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "rename-"));
  t = await startTestEmulator({ dataDir });
});
afterAll(async () => {
  await t.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function newContainer(client = t.client, dbId = uniqueName("rename")): Promise<Container> {
  const { database } = await client.databases.createIfNotExists({ id: dbId });
  const { container } = await database.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
  return container;
}

describe("replace with another id", () => {
  it("renames: the old id is gone, the new id has the document's rid, the feeds show one replace", async () => {
    const c = await newContainer();
    const created = (await c.items.create<Doc>({ id: "old", pk: "A", n: 1 })).resource as Doc;
    const avad = c.items.getChangeFeedIterator<{ current: Doc; metadata: { operationType: string } }>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    expect((await avad.readNext()).statusCode).toBe(304);

    const replaced = await c.item("old", "A").replace<Doc>({ id: "new", pk: "A", n: 2 });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.resource?.id).toBe("new");
    expect(replaced.resource?._rid).toBe(created._rid);

    expect((await c.item("old", "A").read()).statusCode).toBe(404);
    expect((await c.item("new", "A").read<Doc>()).resource?.n).toBe(2);
    const { resources } = await c.items.readAll<Doc>().fetchAll();
    expect(resources.map((d) => d.id)).toEqual(["new"]);

    const page = await avad.readNext();
    expect(page.result.map((x) => `${x.metadata.operationType}:${x.current.id}`)).toEqual(["replace:new"]);
    const latest = c.items.getChangeFeedIterator<Doc>({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
    });
    expect((await latest.readNext()).result.map((d) => d.id)).toEqual(["new"]);

    // The old id is free again: a create there is a new document.
    expect((await c.items.create<Doc>({ id: "old", pk: "A", n: 3 })).statusCode).toBe(201);
  });

  it("to an id that exists in the partition → 409; to another partition key → 400; nothing changes", async () => {
    const c = await newContainer();
    await c.items.create<Doc>({ id: "a", pk: "A", n: 1 });
    await c.items.create<Doc>({ id: "b", pk: "A", n: 2 });
    const taken = await errorOf(() => c.item("a", "A").replace<Doc>({ id: "b", pk: "A", n: 9 }));
    expect(taken.code).toBe(409);
    const moved = await errorOf(() => c.item("a", "A").replace<Doc>({ id: "a", pk: "B", n: 9 }));
    expect(moved.code).toBe(400);
    const { resources } = await c.items.readAll<Doc>().fetchAll();
    expect(resources.map((d) => `${d.id}:${d.n}`).sort()).toEqual(["a:1", "b:2"]);
  });

  it("a rename survives a restart (the log replays it)", async () => {
    const dbId = uniqueName("rename-restart");
    const c = await newContainer(t.client, dbId);
    await c.items.create<Doc>({ id: "x", pk: "A", n: 1 });
    await c.item("x", "A").replace<Doc>({ id: "y", pk: "A", n: 2 });
    await t.close();
    t = await startTestEmulator({ dataDir });
    const again = t.client.database(dbId).container(c.id);
    const { resources } = await again.items.readAll<Doc>().fetchAll();
    expect(resources.map((d) => `${d.id}:${d.n}`)).toEqual(["y:2"]);
    expect((await again.item("x", "A").read()).statusCode).toBe(404);
  });
});
