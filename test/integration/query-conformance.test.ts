import type {
  Container,
  Database,
  ErrorResponse,
  FeedOptions,
  ItemDefinition,
  QueryMetrics,
  SqlQuerySpec,
} from "@azure/cosmos";
import { PartitionKeyKind } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

/**
 * Queries as the service answers them, through the unmodified SDK, on containers with 4 physical ranges:
 * every cross-partition feature is checked on the SDK's direct path, through its client-side pipeline
 * (forceQueryPlan: the plan plus one rewritten query per range), and page by page. Expected results are
 * computed here from the documented semantics; several of them differ from what concatenating the ranges'
 * own results would give (order, TOP, OFFSET, duplicates, partial aggregates).
 */

interface Doc extends ItemDefinition {
  id: string;
  pk: string;
  n: number;
  cat: string;
  score: number;
}

const N = 60;
const CATS = ["a", "b", "c"];
const docs: Doc[] = Array.from({ length: N }, (_, i) => ({
  id: `d${i}`,
  pk: `p${i % 12}`,
  n: i,
  cat: CATS[i % 3],
  score: (i * 7) % 10,
}));

let t: TestEmulator;
let db: Database;
/** 4 ranges, no composite index. */
let c: Container;
/** 4 ranges, composite indexes (cat ASC, score DESC) and (score ASC, n ASC). */
let indexed: Container;

const FOUR_RANGES = { initialHeaders: { "x-ms-emulator-partition-count": "4" } };

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("qconf") })).database;
  c = (
    await db.containers.create(
      { id: uniqueName("c"), partitionKey: { paths: ["/pk"], version: 2 } },
      FOUR_RANGES,
    )
  ).container;
  indexed = (
    await db.containers.create(
      {
        id: uniqueName("ix"),
        partitionKey: { paths: ["/pk"], version: 2 },
        indexingPolicy: {
          compositeIndexes: [
            [
              { path: "/cat", order: "ascending" },
              { path: "/score", order: "descending" },
            ],
            [
              { path: "/score", order: "ascending" },
              { path: "/n", order: "ascending" },
            ],
          ],
        },
      },
      FOUR_RANGES,
    )
  ).container;
  for (const d of docs) {
    await c.items.create(d);
    await indexed.items.create(d);
  }
});
afterAll(async () => {
  await t.close();
});

const ns = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

async function fetchAll<T>(
  container: Container,
  q: string | SqlQuerySpec,
  options?: FeedOptions,
): Promise<T[]> {
  return (await container.items.query<T>(q, options).fetchAll()).resources;
}

/** Every page of a query, fetched one by one with fetchNext. */
async function pages<T>(
  container: Container,
  q: string | SqlQuerySpec,
  options: FeedOptions,
): Promise<T[][]> {
  const it = container.items.query<T>(q, options);
  const out: T[][] = [];
  // (The SDK's pipeline may answer a page with no resources at all while it skips an OFFSET.)
  while (it.hasMoreResults()) out.push((await it.fetchNext()).resources ?? []);
  return out;
}

/**
 * The ways the SDK can run a cross-partition query must agree: directly, through its pipeline, and page by
 * page (in the same order, unless the query leaves the order open).
 */
async function everyWay<T>(container: Container, q: string | SqlQuerySpec, unordered = false): Promise<T[]> {
  const same = (xs: T[]) => (unordered ? xs.map((x) => JSON.stringify(x)).sort() : xs);
  const direct = await fetchAll<T>(container, q);
  const pipelined = await fetchAll<T>(container, q, { forceQueryPlan: true });
  const paged = (await pages<T>(container, q, { maxItemCount: 4 })).flat();
  const pipelinedPaged = (await pages<T>(container, q, { maxItemCount: 4, forceQueryPlan: true })).flat();
  expect(same(pipelined), "forceQueryPlan").toEqual(same(direct));
  expect(same(paged), "fetchNext pages").toEqual(same(direct));
  expect(same(pipelinedPaged), "forceQueryPlan pages").toEqual(same(direct));
  return direct;
}

async function errorOf(p: Promise<unknown>): Promise<ErrorResponse> {
  try {
    await p;
  } catch (e) {
    return e as ErrorResponse;
  }
  throw new Error("expected the query to fail");
}

async function rawPlan(container: Container, query: string | SqlQuerySpec) {
  const res = await rawRequest(
    t.emulator.endpoint,
    t.emulator.key,
    "POST",
    `/dbs/${db.id}/colls/${container.id}/docs`,
    {
      headers: {
        "content-type": "application/query+json",
        "x-ms-documentdb-isquery": "True",
        "x-ms-cosmos-is-query-plan-request": "True",
        "x-ms-cosmos-supported-query-features":
          "NonValueAggregate,Aggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,CompositeAggregate,GroupBy,MultipleAggregates",
        "x-ms-cosmos-query-version": "1.4",
      },
      body: typeof query === "string" ? { query } : query,
    },
  );
  return res as { status: number; body: { queryInfo: Record<string, unknown>; queryRanges: unknown[] } };
}

describe("cross-partition queries over 4 physical ranges", () => {
  it("the documents are spread over all 4 ranges", async () => {
    expect((await c.getFeedRanges()).length).toBe(4);
    const stored = t.emulator.account.container(db.id, c.id);
    expect(stored.ranges.length).toBe(4);
    for (const r of stored.ranges) expect(stored.documentsIn({ ranges: [r] }).length).toBeGreaterThan(5);
  });

  it("TOP: n results overall, not n per range", async () => {
    // Without ORDER BY, which 7 is up to the engine (and differs between the direct path and the pipeline).
    for (const options of [{}, { forceQueryPlan: true }, { maxItemCount: 4, forceQueryPlan: true }])
      expect((await fetchAll<Doc>(c, "SELECT TOP 7 * FROM c", options)).length).toBe(7);
    expect(await everyWay<number>(c, "SELECT TOP 5 VALUE c.n FROM c ORDER BY c.n DESC")).toEqual([
      59, 58, 57, 56, 55,
    ]);
    expect(
      await everyWay<number>(c, {
        query: "SELECT TOP @k VALUE c.n FROM c ORDER BY c.n",
        parameters: [{ name: "@k", value: 3 }],
      }),
    ).toEqual([0, 1, 2]);
    expect(await everyWay<number>(c, "SELECT TOP 0 VALUE c.n FROM c")).toEqual([]);
  });

  it("forceQueryPlan really runs range by range (and the direct path in one request)", async () => {
    const stored = t.emulator.account.container(db.id, c.id);
    const queries = () => t.emulator.meter.snapshot()[stored.meterName]?.query?.count ?? 0;
    const q = "SELECT VALUE c.n FROM c ORDER BY c.n DESC";
    let before = queries();
    expect(await fetchAll<number>(c, q, { forceQueryPlan: true })).toEqual(ns(0, N).reverse());
    expect(queries() - before).toBeGreaterThanOrEqual(4);
    before = queries();
    expect(await fetchAll<number>(c, q)).toEqual(ns(0, N).reverse());
    expect(queries() - before).toBe(1);
  });

  it("ORDER BY ascending and descending, merged across ranges", async () => {
    expect(await everyWay<number>(c, "SELECT VALUE c.n FROM c ORDER BY c.n")).toEqual(ns(0, N));
    expect(await everyWay<number>(c, "SELECT VALUE c.n FROM c ORDER BY c.n DESC")).toEqual(
      ns(0, N).reverse(),
    );
    const projected = await everyWay<{ id: string; n: number }>(
      c,
      "SELECT c.id, c.n FROM c WHERE c.cat = 'b' ORDER BY c.n DESC",
    );
    expect(projected.map((d) => d.n)).toEqual(
      ns(0, N)
        .filter((i) => i % 3 === 1)
        .reverse(),
    );
    expect(projected[0]).toEqual({ id: "d58", n: 58 });
  });

  it("ORDER BY several properties (with a matching composite index, or its inverse)", async () => {
    const byCatThenScoreDesc = [...docs].sort((a, b) => a.cat.localeCompare(b.cat) || b.score - a.score);
    const got = await everyWay<Doc>(indexed, "SELECT * FROM c ORDER BY c.cat ASC, c.score DESC");
    expect(got.map((d) => [d.cat, d.score])).toEqual(byCatThenScoreDesc.map((d) => [d.cat, d.score]));
    const inverse = await everyWay<Doc>(indexed, "SELECT * FROM c ORDER BY c.cat DESC, c.score ASC");
    expect(inverse.map((d) => [d.cat, d.score])).toEqual(
      byCatThenScoreDesc.reverse().map((d) => [d.cat, d.score]),
    );
    const byScoreThenN = [...docs].sort((a, b) => a.score - b.score || a.n - b.n).map((d) => d.n);
    expect(await everyWay<number>(indexed, "SELECT VALUE c.n FROM c ORDER BY c.score, c.n")).toEqual(
      byScoreThenN,
    );
  });

  it("OFFSET … LIMIT (literals and parameters) over the merged order", async () => {
    expect(await everyWay<number>(c, "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 10 LIMIT 5")).toEqual(
      ns(10, 15),
    );
    expect(
      await everyWay<number>(c, {
        query: "SELECT VALUE c.n FROM c ORDER BY c.n DESC OFFSET @skip LIMIT @take",
        parameters: [
          { name: "@skip", value: 3 },
          { name: "@take", value: 4 },
        ],
      }),
    ).toEqual([56, 55, 54, 53]);
    for (const options of [{}, { forceQueryPlan: true }, { maxItemCount: 4, forceQueryPlan: true }])
      expect((await fetchAll<Doc>(c, "SELECT * FROM c OFFSET 50 LIMIT 20", options)).length).toBe(10);
    expect(await everyWay<number>(c, "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 0 LIMIT 0")).toEqual([]);
  });

  it("DISTINCT: each value once, across ranges", async () => {
    expect((await everyWay<string>(c, "SELECT DISTINCT VALUE c.cat FROM c", true)).sort()).toEqual(CATS);
    expect(await everyWay<string>(c, "SELECT DISTINCT VALUE c.cat FROM c ORDER BY c.cat DESC")).toEqual([
      "c",
      "b",
      "a",
    ]);
    const pairs = await everyWay<{ cat: string }>(c, "SELECT DISTINCT c.cat FROM c", true);
    expect(pairs.map((p) => p.cat).sort()).toEqual(CATS);
    // (+1: the SDK's unordered DISTINCT drops falsy values such as 0 — `if (item)` in
    // UnorderedDistinctEndpointComponent — whatever the server answers.)
    expect(
      (await everyWay<number>(c, "SELECT DISTINCT VALUE c.score + 1 FROM c", true)).sort((a, b) => a - b),
    ).toEqual(ns(1, 11));
  });

  it("aggregates: one combined result, not one per range", async () => {
    const sum = ns(0, N).reduce((a, b) => a + b, 0);
    expect(await everyWay<number>(c, "SELECT VALUE COUNT(1) FROM c")).toEqual([N]);
    expect(await everyWay<number>(c, "SELECT VALUE COUNT(c.n) FROM c WHERE c.cat = 'a'")).toEqual([20]);
    expect(await everyWay<number>(c, "SELECT VALUE SUM(c.n) FROM c")).toEqual([sum]);
    expect(await everyWay<number>(c, "SELECT VALUE MIN(c.n) FROM c")).toEqual([0]);
    expect(await everyWay<number>(c, "SELECT VALUE MAX(c.n) FROM c")).toEqual([N - 1]);
    expect(await everyWay<number>(c, "SELECT VALUE AVG(c.n) FROM c")).toEqual([sum / N]);
    expect(await everyWay<number>(c, "SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000")).toEqual([0]);
    // MAX of nothing is undefined: no result at all.
    expect(await everyWay<number>(c, "SELECT VALUE MAX(c.n) FROM c WHERE c.n > 1000")).toEqual([]);
    expect(
      await everyWay<{ cnt: number; total: number; lo: number; hi: number; mean: number }>(
        c,
        "SELECT COUNT(1) AS cnt, SUM(c.n) AS total, MIN(c.n) AS lo, MAX(c.n) AS hi, AVG(c.n) AS mean FROM c WHERE c.n < 10",
      ),
    ).toEqual([{ cnt: 10, total: 45, lo: 0, hi: 9, mean: 4.5 }]);
  });

  it("GROUP BY: one row per group with combined aggregates", async () => {
    const expected = CATS.map((cat) => {
      const inCat = docs.filter((d) => d.cat === cat);
      return {
        cat,
        n: inCat.length,
        total: inCat.reduce((s, d) => s + d.n, 0),
        best: Math.max(...inCat.map((d) => d.score)),
        mean: inCat.reduce((s, d) => s + d.n, 0) / inCat.length,
      };
    });
    const byCat = (a: { cat: string }, b: { cat: string }) => a.cat.localeCompare(b.cat);
    const direct = await fetchAll<(typeof expected)[number]>(
      c,
      "SELECT c.cat, COUNT(1) AS n, SUM(c.n) AS total, MAX(c.score) AS best, AVG(c.n) AS mean FROM c GROUP BY c.cat",
    );
    expect(direct.sort(byCat)).toEqual(expected);
    const pipelined = await fetchAll<(typeof expected)[number]>(
      c,
      "SELECT c.cat, COUNT(1) AS n, SUM(c.n) AS total, MAX(c.score) AS best, AVG(c.n) AS mean FROM c GROUP BY c.cat",
      { forceQueryPlan: true },
    );
    expect(pipelined.sort(byCat)).toEqual(expected);
    const counts = await fetchAll<number>(c, "SELECT VALUE COUNT(1) FROM c GROUP BY c.cat", {
      forceQueryPlan: true,
    });
    expect(counts).toEqual([20, 20, 20]);
    const keys = await fetchAll<string>(c, "SELECT VALUE c.cat FROM c GROUP BY c.cat", {
      forceQueryPlan: true,
    });
    expect(keys.sort()).toEqual(CATS);
    const paged = (
      await pages<{ cat: string; n: number }>(c, "SELECT c.cat, COUNT(1) AS n FROM c GROUP BY c.cat", {
        maxItemCount: 2,
      })
    ).flat();
    expect(paged.sort(byCat)).toEqual(CATS.map((cat) => ({ cat, n: 20 })));
  });

  it("GROUP BY validation: a property outside the GROUP BY, or SELECT *, is a 400", async () => {
    const err = await errorOf(fetchAll(c, "SELECT c.id, COUNT(1) AS n FROM c GROUP BY c.cat"));
    expect(err.code).toBe(400);
    expect(err.message).toContain(
      "Property reference 'c.id' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause.",
    );
    expect((await errorOf(fetchAll(c, "SELECT * FROM c GROUP BY c.cat"))).message).toContain(
      "'SELECT *' is not allowed with GROUP BY.",
    );
  });

  it("page by page: continuation tokens resume an ORDER BY query in a new iterator", async () => {
    const q = "SELECT VALUE c.n FROM c WHERE c.n >= 20 ORDER BY c.n DESC";
    const seen: number[] = [];
    let token: string | undefined;
    let requests = 0;
    do {
      const page = await c.items.query<number>(q, { maxItemCount: 7, continuationToken: token }).fetchNext();
      expect(page.resources.length).toBeLessThanOrEqual(7);
      seen.push(...page.resources);
      token = page.continuationToken;
      requests++;
    } while (token && requests < 20);
    expect(seen).toEqual(ns(20, N).reverse());
  });

  it("enableQueryControl: the SDK's own continuation tokens resume a pipelined ORDER BY query", async () => {
    const q = "SELECT * FROM c ORDER BY c.n";
    const seen: number[] = [];
    let token: string | undefined;
    for (let i = 0; i < 40; i++) {
      const it = c.items.query<Doc>(q, {
        maxItemCount: 9,
        enableQueryControl: true,
        continuationToken: token,
      });
      const page = await it.fetchNext();
      seen.push(...page.resources.map((d) => d.n));
      token = page.continuationToken;
      if (!token) break;
    }
    expect(seen).toEqual(ns(0, N));
  });
});

describe("a range split under a per-range continuation", () => {
  // After a 410/1002 the SDK's pipeline re-creates the range's producer for each child range with the
  // parent's continuation and the child's EPK bounds (parallelQueryExecutionContextBase,
  // _enqueueReplacementDocumentProducers). (4.9.3 itself does not refresh its routing map there — it asks the
  // gone range again — so this is the protocol, sent raw.)
  it("each child continues with its own share of the parent's remaining results", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("split"), partitionKey: { paths: ["/pk"], version: 2 } },
      { initialHeaders: { "x-ms-emulator-partition-count": "1" } },
    );
    for (const d of docs) await container.items.create(d);
    const path = `/dbs/${db.id}/colls/${container.id}/docs`;
    const query = { query: "SELECT VALUE c.n FROM c ORDER BY c.n" };
    const post = (headers: Record<string, string>) =>
      rawRequest(t.emulator.endpoint, t.emulator.key, "POST", path, {
        headers: {
          "content-type": "application/query+json",
          "x-ms-documentdb-isquery": "True",
          "x-ms-max-item-count": "10",
          ...headers,
        },
        body: query,
      });
    const first = await post({ "x-ms-documentdb-partitionkeyrangeid": "0" });
    expect((first.body as { Documents: number[] }).Documents).toEqual(ns(0, 10));
    const token = first.headers.get("x-ms-continuation") as string;
    expect(token).toBeTruthy();

    const children = t.emulator.splitRange(db.id, container.id, "0");
    const stored = t.emulator.account.container(db.id, container.id);
    expect(
      (await post({ "x-ms-documentdb-partitionkeyrangeid": "0", "x-ms-continuation": token })).status,
    ).toBe(410);
    const rest: number[] = [];
    for (const id of children) {
      const range = stored.rangeById(id);
      let continuation: string | null = token;
      const fromChild: number[] = [];
      while (continuation) {
        const res = await post({
          "x-ms-documentdb-partitionkeyrangeid": id,
          "x-ms-start-epk": range.minInclusive,
          "x-ms-end-epk": range.maxExclusive,
          "x-ms-continuation": continuation,
        });
        expect(res.status).toBe(200);
        fromChild.push(...(res.body as { Documents: number[] }).Documents);
        continuation = res.headers.get("x-ms-continuation");
      }
      expect(fromChild).toEqual([...fromChild].sort((a, b) => a - b));
      for (const n of fromChild)
        expect(range.contains(stored.documentsIn(undefined).find((d) => d.body.n === n)?.epk ?? "")).toBe(
          true,
        );
      rest.push(...fromChild);
    }
    expect(rest.sort((a, b) => a - b)).toEqual(ns(10, N));
  });
});

describe("the query plan", () => {
  it("describes TOP, OFFSET/LIMIT, ORDER BY, DISTINCT, aggregates and GROUP BY as the service's does", async () => {
    const top = await rawPlan(c, "SELECT TOP 5 * FROM c");
    expect(top.status).toBe(200);
    expect(top.body.queryInfo).toMatchObject({
      top: 5,
      offset: null,
      limit: null,
      orderBy: [],
      rewrittenQuery: "",
    });
    expect(
      (await rawPlan(c, { query: "SELECT TOP @n * FROM c", parameters: [{ name: "@n", value: 42 }] })).body
        .queryInfo.top,
    ).toBe(42);
    expect((await rawPlan(c, "SELECT * FROM c OFFSET 1 LIMIT 2")).body.queryInfo).toMatchObject({
      offset: 1,
      limit: 2,
      rewrittenQuery: "SELECT *\nFROM c\nOFFSET 0 LIMIT 3",
    });
    expect((await rawPlan(c, "SELECT * FROM c ORDER BY c.n DESC")).body.queryInfo).toMatchObject({
      orderBy: ["Descending"],
      orderByExpressions: ["c.n"],
      rewrittenQuery:
        'SELECT c._rid, [{"item": c.n}] AS orderByItems, c AS payload\nFROM c\nWHERE ({documentdb-formattableorderbyquery-filter})\nORDER BY c.n DESC',
    });
    expect((await rawPlan(c, "SELECT DISTINCT VALUE c.cat FROM c")).body.queryInfo).toMatchObject({
      distinctType: "Unordered",
      hasSelectValue: true,
    });
    expect(
      (await rawPlan(c, "SELECT DISTINCT VALUE c.cat FROM c ORDER BY c.cat")).body.queryInfo.distinctType,
    ).toBe("Ordered");
    expect((await rawPlan(c, "SELECT VALUE AVG(c.n) FROM c")).body.queryInfo).toMatchObject({
      aggregates: ["Average"],
      hasSelectValue: true,
      rewrittenQuery: 'SELECT VALUE [{"item": {"sum": SUM(c.n), "count": COUNT(c.n)}}]\nFROM c',
    });
    expect(
      (await rawPlan(c, "SELECT c.cat, COUNT(1) AS n FROM c GROUP BY c.cat")).body.queryInfo,
    ).toMatchObject({
      groupByExpressions: ["c.cat"],
      groupByAliases: ["cat", "n"],
      groupByAliasToAggregateType: { cat: null, n: "Count" },
      rewrittenQuery:
        'SELECT [{"item": c.cat}] AS groupByItems, {"cat": c.cat, "n": {"item": COUNT(1)}} AS payload\nFROM c\nGROUP BY c.cat',
    });
    expect(top.body.queryRanges).toEqual([
      { min: "", max: "FF", isMinInclusive: true, isMaxInclusive: false },
    ]);
  });

  it("an invalid query is a 400 from the plan request too", async () => {
    expect((await rawPlan(c, "SELECT * FORM c")).status).toBe(400);
    expect((await rawPlan(c, "SELECT * FROM c ORDER BY c.cat, c.n")).status).toBe(400);
  });
});

describe("JOIN over values that are not arrays", () => {
  it("skips the documents whose value is a string, an object, null or missing; the query does not fail", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("join"), partitionKey: "/pk" },
      FOUR_RANGES,
    );
    await container.items.create({ id: "arr", pk: "a", tags: ["x", "y"] });
    await container.items.create({ id: "str", pk: "b", tags: "x" });
    await container.items.create({ id: "obj", pk: "c", tags: { x: 1 } });
    await container.items.create({ id: "nul", pk: "d", tags: null });
    await container.items.create({ id: "none", pk: "e" });
    await container.items.create({ id: "empty", pk: "f", tags: [] });
    const rows = await fetchAll<{ id: string; t: string }>(
      container,
      "SELECT c.id, t FROM c JOIN t IN c.tags",
    );
    expect(rows).toEqual([
      { id: "arr", t: "x" },
      { id: "arr", t: "y" },
    ]);
    expect(await fetchAll(container, "SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags WHERE t = 'x'")).toEqual([
      1,
    ]);
    expect(await fetchAll(container, "SELECT VALUE t FROM t IN c.tags", { partitionKey: "b" })).toEqual([]);
  });
});

describe("ORDER BY and the indexing policy", () => {
  it("several ORDER BY items without a matching composite index → 400 with the service's message", async () => {
    const err = await errorOf(fetchAll(c, "SELECT * FROM c ORDER BY c.cat, c.score DESC"));
    expect(err.code).toBe(400);
    expect(err.message).toContain(
      "The order by query does not have a corresponding composite index that it can be served from.",
    );
    // The index has (cat ASC, score DESC): (cat ASC, score ASC) is neither it nor its inverse.
    expect((await errorOf(fetchAll(indexed, "SELECT * FROM c ORDER BY c.cat, c.score"))).code).toBe(400);
    // The paths must come in the index's order.
    expect((await errorOf(fetchAll(indexed, "SELECT * FROM c ORDER BY c.score DESC, c.cat"))).code).toBe(400);
  });

  it("ORDER BY returns the items where the property is undefined too (first ascending, last descending)", async () => {
    // https://learn.microsoft.com/azure/cosmos-db/nosql/query/order-by: all items are returned, including
    // those where the ORDER BY property isn't defined.
    const { container } = await db.containers.create(
      { id: uniqueName("undef"), partitionKey: "/pk" },
      FOUR_RANGES,
    );
    await container.items.create({ id: "one", pk: "a", rank: 1 });
    await container.items.create({ id: "none", pk: "b" });
    await container.items.create({ id: "zero", pk: "c", rank: 0 });
    await container.items.create({ id: "null", pk: "d", rank: null });
    // (Direct path only: the SDK's own cross-partition merge refuses mixed types and null —
    // "Cannot execute cross partition order-by queries on mixed types" — whatever the server returns.)
    expect(await fetchAll(container, "SELECT VALUE c.id FROM c ORDER BY c.rank")).toEqual([
      "none",
      "null",
      "zero",
      "one",
    ]);
    expect(await fetchAll(container, "SELECT VALUE c.id FROM c ORDER BY c.rank DESC")).toEqual([
      "one",
      "zero",
      "null",
      "none",
    ]);
  });

  it("a single ORDER BY property needs no composite index", async () => {
    expect(await fetchAll<number>(c, "SELECT VALUE c.score FROM c WHERE c.n < 5 ORDER BY c.score")).toEqual([
      0, 1, 4, 7, 8,
    ]);
  });
});

describe("query metrics", () => {
  it("x-ms-documentdb-query-metrics when the client asks (populateQueryMetrics), parsed by the SDK", async () => {
    const page = await c.items
      .query("SELECT * FROM c WHERE c.cat = 'a'", { populateQueryMetrics: true, partitionKey: "p0" })
      .fetchNext();
    // The SDK types queryMetrics as a string, but hands out the parsed metrics per partition ("0" here).
    const metrics = (page.queryMetrics as unknown as Record<string, QueryMetrics>)["0"];
    expect(metrics.retrievedDocumentCount).toBe(5);
    expect(metrics.outputDocumentCount).toBe(5);
    expect(metrics.retrievedDocumentSize).toBeGreaterThan(0);
    expect(metrics.outputDocumentSize).toBeGreaterThan(0);

    const raw = await rawRequest(
      t.emulator.endpoint,
      t.emulator.key,
      "POST",
      `/dbs/${db.id}/colls/${c.id}/docs`,
      {
        headers: {
          "content-type": "application/query+json",
          "x-ms-documentdb-isquery": "True",
          "x-ms-documentdb-populatequerymetrics": "True",
        },
        body: { query: "SELECT VALUE COUNT(1) FROM c" },
      },
    );
    const header = raw.headers.get("x-ms-documentdb-query-metrics") ?? "";
    const fields = Object.fromEntries(header.split(";").map((kv) => kv.split("=")));
    for (const key of [
      "totalExecutionTimeInMs",
      "queryCompileTimeInMs",
      "queryLogicalPlanBuildTimeInMs",
      "queryPhysicalPlanBuildTimeInMs",
      "queryOptimizationTimeInMs",
      "VMExecutionTimeInMs",
      "indexLookupTimeInMs",
      "documentLoadTimeInMs",
      "systemFunctionExecuteTimeInMs",
      "userFunctionExecuteTimeInMs",
      "retrievedDocumentCount",
      "retrievedDocumentSize",
      "outputDocumentCount",
      "outputDocumentSize",
      "writeOutputTimeInMs",
      "indexUtilizationRatio",
    ])
      expect(Number.isFinite(Number(fields[key])), key).toBe(true);
    expect(fields.retrievedDocumentCount).toBe(String(N));
    expect(fields.outputDocumentCount).toBe("1");

    const quiet = await c.items.query("SELECT * FROM c", { partitionKey: "p0" }).fetchNext();
    expect(quiet.queryMetrics).toBeUndefined();
  });
});

describe("paging as the service", () => {
  let four: Container;
  beforeAll(async () => {
    four = (await db.containers.create({ id: uniqueName("four"), partitionKey: "/pk" }, FOUR_RANGES))
      .container;
    for (let i = 0; i < 4; i++) await four.items.create({ id: `x${i}`, pk: `k${i}` });
  });

  it("readAll with maxItemCount 2 over 4 documents: the exactly full last page ends the query (no empty page)", async () => {
    const it = four.items.readAll({ maxItemCount: 2 });
    const first = await it.fetchNext();
    expect(first.resources.length).toBe(2);
    expect(first.continuationToken).toBeTruthy();
    expect(it.hasMoreResults()).toBe(true);
    const second = await it.fetchNext();
    expect(second.resources.length).toBe(2);
    expect(second.continuationToken).toBeUndefined();
    expect(it.hasMoreResults()).toBe(false);
    const ids = [...first.resources, ...second.resources].map((d) => d.id).sort();
    expect(ids).toEqual(["x0", "x1", "x2", "x3"]);
    expect((await four.items.readAll({ maxItemCount: 2 }).fetchAll()).resources.length).toBe(4);
  });

  it("a single-range query (hierarchical key, one range) pages as the service: a full last page, then an empty one", async () => {
    const { container: hpk } = await db.containers.create({
      id: uniqueName("hpk1"),
      partitionKey: { paths: ["/t", "/u"], kind: PartitionKeyKind.MultiHash, version: 2 },
    });
    expect((await hpk.readPartitionKeyRanges().fetchAll()).resources.length).toBe(1);
    for (let i = 0; i < 4; i++) await hpk.items.create({ id: `h${i}`, t: "t", u: `u${i}` });
    const it = hpk.items.readAll({ maxItemCount: 2 });
    const sizes: number[] = [];
    while (it.hasMoreResults() && sizes.length < 10) sizes.push((await it.fetchNext()).resources.length);
    expect(sizes).toEqual([2, 2, 0]);
    expect((await hpk.items.readAll({ maxItemCount: 2 }).fetchAll()).resources.length).toBe(4);
  });

  it("the legacy read feed (GET /docs) pages the same way", async () => {
    const path = `/dbs/${db.id}/colls/${four.id}/docs`;
    const seen: number[] = [];
    let token: string | null = null;
    for (let i = 0; i < 5; i++) {
      const res = await rawRequest(t.emulator.endpoint, t.emulator.key, "GET", path, {
        headers: { "x-ms-max-item-count": "2", ...(token ? { "x-ms-continuation": token } : {}) },
      });
      expect(res.status).toBe(200);
      seen.push((res.body as { _count: number })._count);
      token = res.headers.get("x-ms-continuation");
      if (!token) break;
    }
    expect(seen).toEqual([2, 2, 0]);
  });
});

describe("continuation tokens", () => {
  async function tokenOf(container: Container, q: string, options: FeedOptions = {}): Promise<string> {
    const page = await container.items.query(q, { maxItemCount: 3, ...options }).fetchNext();
    expect(page.continuationToken).toBeTruthy();
    return page.continuationToken as string;
  }

  it("a token from another query is refused with 400, not silently restarted", async () => {
    const token = await tokenOf(c, "SELECT * FROM c WHERE c.cat = 'a'");
    const err = await errorOf(
      c.items
        .query("SELECT * FROM c WHERE c.cat = 'b'", { maxItemCount: 3, continuationToken: token })
        .fetchNext(),
    );
    expect(err.code).toBe(400);
    expect(err.message).toContain("Invalid Continuation Token");
    const withParam = await c.items
      .query(
        { query: "SELECT * FROM c WHERE c.cat = @cat", parameters: [{ name: "@cat", value: "a" }] },
        { maxItemCount: 3 },
      )
      .fetchNext();
    const otherParam = await errorOf(
      c.items
        .query(
          { query: "SELECT * FROM c WHERE c.cat = @cat", parameters: [{ name: "@cat", value: "b" }] },
          { maxItemCount: 3, continuationToken: withParam.continuationToken },
        )
        .fetchNext(),
    );
    expect(otherParam.message).toContain("Invalid Continuation Token");
  });

  it("a token from another container, or another logical partition, is refused with 400", async () => {
    const q = "SELECT * FROM c";
    const token = await tokenOf(c, q);
    const err = await errorOf(
      indexed.items.query(q, { maxItemCount: 3, continuationToken: token }).fetchNext(),
    );
    expect(err.code).toBe(400);
    expect(err.message).toContain("Invalid Continuation Token");
    const inP1 = await c.items.query(q, { maxItemCount: 2, partitionKey: "p1" }).fetchNext();
    const inP2 = await errorOf(
      c.items
        .query(q, { maxItemCount: 2, partitionKey: "p2", continuationToken: inP1.continuationToken })
        .fetchNext(),
    );
    expect(inP2.message).toContain("Invalid Continuation Token");
  });

  it("a malformed token → 400 Invalid Continuation Token", async () => {
    for (const bad of ["garbage", '{"snapshot":"x"}', "{}", "[1]", '{"rid":1}']) {
      const err = await errorOf(c.items.query("SELECT * FROM c", { continuationToken: bad }).fetchNext());
      expect(err.code, bad).toBe(400);
      expect(err.message, bad).toContain("Invalid Continuation Token");
    }
  });
});

describe("query text limit", () => {
  it("256 KB of query text is accepted; one byte more is a 400", async () => {
    const prefix = "SELECT VALUE COUNT(1) FROM c WHERE c.id != '";
    const fill = (n: number) => `${prefix}${"x".repeat(n - prefix.length - 1)}'`;
    expect(await fetchAll(c, fill(262_144))).toEqual([N]);
    const err = await errorOf(fetchAll(c, fill(262_145)));
    expect(err.code).toBe(400);
    expect(err.message).toMatch(/262144/);
  });
});

describe("an expensive query does not stall other clients", () => {
  it("while a 256 KB query scans 1500 documents in a worker thread, a point read from another client answers", async () => {
    const { container } = await db.containers.create({ id: uniqueName("heavy"), partitionKey: "/pk" });
    const ops = Array.from({ length: 1500 }, (_, i) => ({
      operationType: "Create" as const,
      resourceBody: { id: `h${i}`, pk: `p${i % 50}`, n: i },
    }));
    for (let i = 0; i < ops.length; i += 100) await container.items.bulk(ops.slice(i, i + 100));
    await container.items.create({ id: "target", pk: "t", n: -1 });

    // An OR chain of equality tests filling the 256 KB limit: every document evaluates thousands of them.
    const terms: string[] = [];
    let length = 60;
    for (let i = 0; length < 262_000; i += 2) {
      const term = `c.id = 'h${i}'`;
      terms.push(term);
      length += term.length + 4;
    }
    const heavyQuery = `SELECT VALUE COUNT(1) FROM c WHERE ${terms.join(" OR ")}`;
    expect(Buffer.byteLength(heavyQuery)).toBeLessThanOrEqual(262_144);

    let heavyDone = false;
    const heavy = t
      .newClient()
      .database(db.id)
      .container(container.id)
      .items.query<number>(heavyQuery)
      .fetchAll()
      .then((r) => {
        heavyDone = true;
        return r.resources;
      });
    // Wait until the heavy query is executing (in a worker thread), then read from another client.
    const { queriesInWorkers } = await import("../../packages/emulator/src/query/pool.js");
    while (queriesInWorkers() === 0 && !heavyDone) await new Promise((r) => setImmediate(r));
    expect(heavyDone).toBe(false);
    const reader = t.newClient().database(db.id).container(container.id);
    const read = await reader.item("target", "t").read();
    expect(read.statusCode).toBe(200);
    expect(heavyDone, "the point read answered before the heavy query").toBe(false);
    // And the heavy query's result is the service's: every even-numbered document up to the chain's end.
    const matched = ops.filter((_, i) => i % 2 === 0 && i < terms.length * 2).length;
    expect(await heavy).toEqual([matched]);
  });
});
