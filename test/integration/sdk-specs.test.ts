import { BulkOperationType, type Container, type Database, type OfferDefinition } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

// What Microsoft's own @azure/cosmos functional specs (sdk/cosmosdb/cosmos/test in Azure/azure-sdk-for-js) still saw
// differ from the service here: each behaviour as the service has it, through the unmodified SDK over a socket.

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("specs") })).database;
});
afterAll(async () => {
  await t.close();
});

describe("indexing policy of the SDK's specs", () => {
  it.each(["/", "/?"])("accepts the first API's root path %j and answers with /*", async (path) => {
    const { resource } = await db.containers.create({
      id: uniqueName("root"),
      partitionKey: { paths: ["/pk"] },
      indexingPolicy: { includedPaths: [{ path }] },
    });
    expect(resource?.indexingPolicy?.includedPaths).toEqual([{ path: "/*" }]);
  });
});

describe("cross-partition queries of the SDK's specs", () => {
  async function seeded(count: number, doc: (i: number) => Record<string, unknown>) {
    const { container } = await db.containers.create({
      id: uniqueName("xq"),
      partitionKey: { paths: ["/pk"] },
      throughput: 12_000, // two physical partitions: the SDK fans the query out
    });
    const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
    expect(ranges.length).toBeGreaterThan(1);
    for (let i = 0; i < count; i++) await container.items.create({ id: `d${i}`, pk: `p${i}`, ...doc(i) });
    return container;
  }

  it("ends on a last page that is exactly full: no continuation, hasMoreResults() false", async () => {
    const container = await seeded(6, (i) => ({ n: i }));
    const it = container.items.query("SELECT * FROM c", { maxItemCount: 3 });
    const sizes: number[] = [];
    while (it.hasMoreResults()) {
      const { resources } = await it.fetchNext();
      sizes.push(resources.length);
      if (sizes.length > 10) break;
    }
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(6);
    expect(sizes).not.toContain(0);
    expect(it.hasMoreResults()).toBe(false);
  });

  it("GROUP BY over a field missing in some documents returns that group, its key absent", async () => {
    // Two without a team, one with team null: null and undefined are two groups, as the service keeps them.
    const teams = ["a", "b", "a", null, undefined, undefined];
    const container = await seeded(6, (i) => (teams[i] === undefined ? {} : { team: teams[i] }));
    const { resources } = await container.items
      .query("SELECT c.team, COUNT(1) AS n FROM c GROUP BY c.team")
      .fetchAll();
    const byTeam = new Map(resources.map((r: { team?: string | null; n: number }) => [r.team, r.n]));
    expect(byTeam).toEqual(
      new Map<string | null | undefined, number>([
        ["a", 2],
        ["b", 1],
        [null, 1],
        [undefined, 2],
      ]),
    );
    const missing = resources.find((r: { team?: string | null }) => r.team === undefined);
    expect(missing && "team" in missing).toBe(false);
    const { resources: values } = await container.items
      .query("SELECT VALUE c.team FROM c GROUP BY c.team")
      .fetchAll();
    // SELECT VALUE of an undefined value yields no row (as any VALUE projection of undefined).
    expect(values.sort()).toEqual(["a", "b", null]);
  });
});

describe("aggregates of the SDK's specs (aggregateQuery.spec.ts)", () => {
  it("a select-list aggregate across ranges ends in pages of 1: the ranges' one rows carry no continuation", async () => {
    const { container } = await db.containers.create({
      id: uniqueName("agg"),
      partitionKey: { paths: ["/pk"] },
      throughput: 12_000, // two physical partitions: the SDK runs its GROUP BY pipeline over both
    });
    for (let i = 0; i < 8; i++) await container.items.create({ id: `d${i}`, pk: `p${i}`, n: i });
    const it = container.items.query("SELECT COUNT(1) AS c, MAX(c.n) AS m FROM c", { maxItemCount: 1 });
    const rows: unknown[] = [];
    let fetches = 0;
    // Before: each range's row came with a continuation, so the SDK's GroupByEndpointComponent answered its
    // result and then empty pages with hasMoreResults() true for ever.
    while (it.hasMoreResults() && fetches < 10) {
      fetches++;
      const { resources } = await it.fetchNext();
      rows.push(...(resources ?? []));
    }
    expect(rows).toEqual([{ c: 8, m: 7 }]);
    expect(it.hasMoreResults()).toBe(false);
    expect(fetches).toBeLessThan(10);
  });

  it("an aggregate ordered on two fields needs no composite index; rows ordered so still do (SC2206)", async () => {
    const { container } = await db.containers.create({
      id: uniqueName("aggob"),
      partitionKey: { paths: ["/pk"] },
    });
    for (let i = 0; i < 4; i++) await container.items.create({ id: `d${i}`, pk: "p", key: i + 1, field: i });
    const { resources } = await container.items
      .query("SELECT VALUE AVG(r.key) FROM r WHERE IS_NUMBER(r.key) ORDER BY r.key, r.field")
      .fetchAll();
    expect(resources).toEqual([2.5]);
    await expect(container.items.query("SELECT * FROM r ORDER BY r.key, r.field").fetchAll()).rejects.toThrow(
      "The order by query does not have a corresponding composite index that it can be served from.",
    );
  });
});

describe("the offer of a container created without throughput", () => {
  const burst = async (container: Container, round: string): Promise<number[]> => {
    // ~22 RU per 60 KB write (published charges): 100 at once need ~2,200 RU, far more than a 400 RU/s second holds.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) =>
        container.items.create({ id: `${round}${i}`, pk: "a", pad: "y".repeat(60_000) }),
      ),
    );
    return outcomes
      .filter((o) => o.status === "rejected")
      .map((o) => (o as PromiseRejectedResult).reason.code as number);
  };

  it("is 400 RU/s manual, readable and replaceable; enforced only once replaced", async () => {
    const { container: created } = await db.containers.create({
      id: uniqueName("plain"),
      partitionKey: "/pk",
    });
    const { resource: offer, offer: ref } = await created.readOffer();
    if (!offer || !ref) throw new Error("no offer");
    expect(offer.content?.offerThroughput).toBe(400);
    expect(offer.content?.offerAutopilotSettings).toBeUndefined();
    expect(offer.offerResourceId).toBe((await created.read()).resource?._rid);

    const noRetry = t.newClient({
      connectionPolicy: {
        retryOptions: {
          maxRetryAttemptCount: 0,
          fixedRetryIntervalInMilliseconds: 0,
          maxWaitTimeInSeconds: 0,
        },
      },
    });
    const container = noRetry.database(db.id).container(created.id);
    // Nobody chose this figure (the dev host creates its containers without throughput): no 429s.
    expect(await burst(container, "x")).toEqual([]);

    const { resource: replaced } = await ref.replace({
      ...offer,
      content: { offerThroughput: 500 },
    } as unknown as OfferDefinition);
    expect(replaced?.content?.offerThroughput).toBe(500);
    expect((await created.readOffer()).resource?.content?.offerThroughput).toBe(500);
    const after = await burst(container, "y");
    expect(after.length).toBeGreaterThan(0);
    expect(new Set(after)).toEqual(new Set([429]));
  });

  it("is none in a database with shared throughput (the database's offer serves it)", async () => {
    const shared = (await t.client.databases.create({ id: uniqueName("shared"), throughput: 400 })).database;
    const { container } = await shared.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    expect((await container.readOffer()).resource).toBeUndefined();
  });
});

describe("batch and bulk requests", () => {
  const post = (c: Container, body: unknown, headers: Record<string, string>) =>
    rawRequest(t.emulator.endpoint, t.emulator.key, "POST", `/dbs/${db.id}/colls/${c.id}/docs`, {
      body,
      headers: { "x-ms-cosmos-is-batch-request": "true", ...headers },
    });
  const bulk = { "x-ms-cosmos-batch-atomic": "false" };
  const fresh = async () =>
    (await db.containers.create({ id: uniqueName("b"), partitionKey: { paths: ["/pk"] } })).container;
  const create = (id: string, extra: Record<string, unknown> = {}) => ({
    operationType: "Create",
    partitionKey: '["A"]',
    resourceBody: { id, pk: "A", ...extra },
  });

  it("a request over 2 MB is a 413 for the request; nothing is written", async () => {
    const c = await fresh();
    const pad = "x".repeat(700 * 1024);
    const ops = [0, 1, 2].map((i) => create(`big${i}`, { pad }));
    const res = await post(c, ops, bulk);
    expect(res.status).toBe(413);
    expect((res.body as { code?: string }).code).toBe("RequestEntityTooLarge");
    // The SDK's transactional batch gets the same answer for the whole batch (the SDK wraps it in its own error).
    await expect(
      c.items.batch(
        [0, 1, 2].map((i) => ({
          operationType: BulkOperationType.Create,
          resourceBody: { id: `b${i}`, pk: "A", pad },
        })),
        "A",
      ),
    ).rejects.toThrow(/Request size is too large/);
    const { resources } = await c.items.readAll().fetchAll();
    expect(resources).toEqual([]);
  });

  it("an unknown partition key range id is 410 with substatus 1002 (the SDK refreshes its routing map)", async () => {
    const c = await fresh();
    const res = await post(c, [create("r1")], { ...bulk, "x-ms-documentdb-partitionkeyrangeid": "77" });
    expect(res.status).toBe(410);
    expect(res.headers.get("x-ms-substatus")).toBe("1002");
    expect((await c.items.readAll().fetchAll()).resources).toEqual([]);
  });

  it("Prefer: return=minimal answers every operation without its document", async () => {
    const c = await fresh();
    const res = await post(c, [create("m1"), create("m2")], { ...bulk, Prefer: "return=minimal" });
    expect(res.status).toBe(200);
    const results = res.body as { statusCode: number; eTag?: string; resourceBody?: unknown }[];
    expect(results.map((r) => r.statusCode)).toEqual([201, 201]);
    expect(results.every((r) => typeof r.eTag === "string" && r.resourceBody === undefined)).toBe(true);
    const batch = await post(c, [create("m3")], {
      "x-ms-cosmos-batch-atomic": "true",
      "x-ms-documentdb-partitionkey": '["A"]',
      Prefer: "return=minimal",
    });
    expect(batch.status).toBe(200);
    expect((batch.body as { resourceBody?: unknown }[])[0].resourceBody).toBeUndefined();
    const full = await post(c, [create("m4")], bulk);
    expect((full.body as { resourceBody?: { id: string } }[])[0].resourceBody?.id).toBe("m4");
  });
});
