import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceText } from "../../packages/emulator/src/errors.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

/**
 * GROUP BY and aggregates with a select list across partitions: the gateway does not serve them (400/1004 with the
 * query plan), so the rows are the SDK's own pipeline's (GroupByEndpointComponent): every alias is a key, and an
 * aggregate over nothing — MIN/MAX/AVG of a field no document of the group has — is the key with `undefined`.
 */

interface Row {
  cat?: string;
  lo?: number;
  hi?: number;
  mean?: number;
  n: number;
}

let t: TestEmulator;
let db: Database;
let c: Container;

// Groups: "a" has v in both documents, "b" in none, "c" in one of two; every group spans partition keys.
const DOCS = [
  { cat: "a", v: 1 },
  { cat: "a", v: 5 },
  { cat: "b" },
  { cat: "b" },
  { cat: "c", v: 2 },
  { cat: "c" },
  { cat: "b" },
  { cat: "a", v: 3 },
];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("grouped") })).database;
  // 12,000 RU/s: two physical ranges, so the SDK fans the query out.
  c = (
    await db.containers.create({ id: uniqueName("g"), partitionKey: { paths: ["/pk"] }, throughput: 12_000 })
  ).container;
  for (let i = 0; i < DOCS.length; i++) await c.items.create({ id: `d${i}`, pk: `p${i}`, ...DOCS[i] });
});
afterAll(async () => {
  await t.close();
});

const GROUPED =
  "SELECT c.cat, MIN(c.v) AS lo, MAX(c.v) AS hi, AVG(c.v) AS mean, COUNT(c.v) AS n FROM c GROUP BY c.cat";
const EXPECTED: Row[] = [
  { cat: "a", lo: 1, hi: 5, mean: 3, n: 3 },
  { cat: "b", lo: undefined, hi: undefined, mean: undefined, n: 0 },
  { cat: "c", lo: 2, hi: 2, mean: 2, n: 1 },
];
const byCat = (a: Row, b: Row) => (a.cat ?? "").localeCompare(b.cat ?? "");

function post(query: string, headers: Record<string, string> = {}) {
  return rawRequest(t.emulator.endpoint, t.emulator.key, "POST", `/dbs/${db.id}/colls/${c.id}/docs`, {
    headers: {
      "content-type": "application/query+json",
      "x-ms-documentdb-isquery": "True",
      "x-ms-documentdb-query-enablecrosspartition": "True",
      ...headers,
    },
    body: { query },
  });
}

describe("GROUP BY with MIN/MAX/AVG over a missing field, across partitions", () => {
  it("the container has several ranges and each group spans them", async () => {
    expect((await c.getFeedRanges()).length).toBeGreaterThan(1);
    const stored = t.emulator.account.container(db.id, c.id);
    for (const cat of ["a", "b"]) {
      const ranges = new Set(
        stored
          .documentsIn(undefined)
          .filter((d) => d.body.cat === cat)
          .map((d) => stored.rangeFor(d.epk).id),
      );
      expect(ranges.size, cat).toBeGreaterThan(1);
    }
  });

  it("keeps the aggregate's key, its value undefined: directly, through the plan, and page by page", async () => {
    const direct = (await c.items.query<Row>(GROUPED).fetchAll()).resources;
    // toStrictEqual: `{lo: undefined}` is not `{}`.
    expect(direct.sort(byCat)).toStrictEqual(EXPECTED);
    expect(Object.keys(direct[1])).toEqual(["cat", "lo", "hi", "mean", "n"]);
    const planned = (await c.items.query<Row>(GROUPED, { forceQueryPlan: true }).fetchAll()).resources;
    expect(planned.sort(byCat)).toStrictEqual(EXPECTED);
    const it = c.items.query<Row>(GROUPED, { maxItemCount: 1 });
    const paged: Row[] = [];
    // (The SDK's pipeline answers the pages before the groups with no resources at all. After the last group
    // 4.9.3's GroupByEndpointComponent can keep hasMoreResults() true and answer nothing more — it consolidates on
    // the first empty page a range sends while the range still has a continuation — so the loop is bounded.)
    for (let i = 0; i < 20 && it.hasMoreResults(); i++)
      paged.push(...((await it.fetchNext()).resources ?? []));
    expect(paged.sort(byCat)).toStrictEqual(EXPECTED);
  });

  it("aggregates with a select list and no GROUP BY: one row, the empty aggregates' keys undefined", async () => {
    const { resources } = await c.items
      .query("SELECT MIN(c.v) AS lo, AVG(c.v) AS mean, COUNT(1) AS docs FROM c WHERE c.cat = 'b'")
      .fetchAll();
    expect(resources).toStrictEqual([{ lo: undefined, mean: undefined, docs: 3 }]);
  });

  it("the direct query is the gateway's 400/1004 with the query plan; a partition's query is served", async () => {
    const refused = await post(GROUPED);
    expect(refused.status).toBe(400);
    expect(refused.headers.get("x-ms-substatus")).toBe("1004");
    const body = refused.body as { code: string; message: string; additionalErrorInfo: string };
    expect(body.code).toBe("BadRequest");
    expect(body.message.startsWith(ServiceText.CrossPartitionQueryNotServable)).toBe(true);
    const plan = await post(GROUPED, {
      "x-ms-cosmos-is-query-plan-request": "True",
      "x-ms-cosmos-supported-query-features": "NonValueAggregate,Aggregate,GroupBy,MultipleAggregates",
    });
    expect(plan.status).toBe(200);
    expect(JSON.parse(body.additionalErrorInfo)).toEqual(plan.body);

    const partition = await post(GROUPED, { "x-ms-documentdb-partitionkey": '["p2"]' });
    expect(partition.status).toBe(200);
    expect((partition.body as { Documents: unknown[] }).Documents).toEqual([{ cat: "b", n: 0 }]);
  });

  it("a query that has no plan is refused with the plan's own 400, not answered", async () => {
    const res = await post("SELECT c.cat, COUNT(1) AS n FROM c GROUP BY c.cat ORDER BY c.cat");
    expect(res.status).toBe(400);
    expect(res.headers.get("x-ms-substatus")).toBeNull();
    expect((res.body as { message: string }).message).toContain(
      "ORDER BY is not supported together with GROUP BY or aggregates in a cross-partition query.",
    );
  });
});
