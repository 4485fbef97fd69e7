import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CosmosError } from "../../packages/emulator/src/errors.js";
import { conditionHolds, runQuery } from "../../packages/emulator/src/query/engine.js";

/**
 * The query engine on its own: the language's semantics as documented
 * (https://learn.microsoft.com/azure/cosmos-db/nosql/query/), and hostile query texts (a 400, never a crash).
 */

const docs = [
  { id: "a", n: 1, s: "Alpha", tags: ["x", "y"], nested: { k: 1 }, _rid: "1" },
  { id: "b", n: 2, s: "beta", tags: "x", nested: { k: 2 }, _rid: "2" },
  { id: "c", n: "3", s: "Gamma_1%", tags: [{ name: "x", v: 1 }], _rid: "3" },
  { id: "d", s: null, _rid: "4" },
];

const q = (query: string, parameters: { name: string; value: unknown }[] = []) =>
  runQuery({ query, parameters }, docs);

function statusOf(f: () => unknown): number | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    if (e instanceof CosmosError) return e.status;
    throw e;
  }
}

describe("query semantics", () => {
  it("comparisons between different types are undefined, so neither = nor != keeps the row", () => {
    expect(q("SELECT VALUE c.id FROM c WHERE c.n = 3")).toEqual([]);
    expect(q("SELECT VALUE c.id FROM c WHERE c.n != 3")).toEqual(["a", "b"]);
    expect(q("SELECT VALUE c.id FROM c WHERE NOT (c.n > 1)")).toEqual(["a"]);
    expect(q("SELECT VALUE c.id FROM c WHERE c.n > 1 OR c.s = null")).toEqual(["b", "d"]);
    expect(q("SELECT VALUE c.n + 1 FROM c")).toEqual([2, 3]);
    expect(q("SELECT VALUE c.s || '!' FROM c")).toEqual(["Alpha!", "beta!", "Gamma_1%!"]);
  });

  it("IN, BETWEEN, LIKE (with ESCAPE), ?? and ?:", () => {
    expect(q("SELECT VALUE c.id FROM c WHERE c.id IN ('a', 'd', 'z')")).toEqual(["a", "d"]);
    expect(q("SELECT VALUE c.id FROM c WHERE c.n BETWEEN 1 AND 2")).toEqual(["a", "b"]);
    expect(q("SELECT VALUE c.id FROM c WHERE c.s LIKE '%a'")).toEqual(["a", "b"]);
    expect(q("SELECT VALUE c.id FROM c WHERE c.s LIKE 'G_mma!_1!%' ESCAPE '!'")).toEqual(["c"]);
    expect(q("SELECT VALUE c.id FROM c WHERE c.s NOT LIKE '%a%'")).toEqual([]);
    expect(q("SELECT VALUE c.n ?? 0 FROM c")).toEqual([1, 2, "3", 0]);
    expect(q("SELECT VALUE (c.n = 1 ? 'one' : 'other') FROM c")).toEqual(["one", "other", "other", "other"]);
  });

  it("projections: implicit names, $n for expressions, undefined members left out", () => {
    expect(q("SELECT c.id, c.nested.k, c.n * 2, UPPER(c.id) FROM c WHERE c.id = 'a'")).toEqual([
      { id: "a", k: 1, $1: 2, $2: "A" },
    ]);
    expect(q("SELECT c.missing, c.id FROM c WHERE c.id = 'd'")).toEqual([{ id: "d" }]);
    expect(q("SELECT VALUE {id: c.id, n: c.n, list: [c.n, c.missing]} FROM c WHERE c.id = 'd'")).toEqual([
      { id: "d", list: [] },
    ]);
    expect(q("SELECT VALUE c.missing FROM c")).toEqual([]);
    expect(q("SELECT c[\"id\"], c.tags[0] AS first FROM c WHERE c.id = 'a'")).toEqual([
      { id: "a", first: "x" },
    ]);
  });

  it("inherited properties are not document properties", () => {
    expect(q("SELECT VALUE c.constructor FROM c")).toEqual([]);
    expect(q("SELECT VALUE c['__proto__'] FROM c")).toEqual([]);
    expect(q("SELECT VALUE c.tags.length FROM c")).toEqual([]);
  });

  it("subqueries: ARRAY, EXISTS, scalar, and JOIN on a subquery", () => {
    expect(q("SELECT VALUE ARRAY(SELECT VALUE t.name FROM t IN c.tags) FROM c WHERE c.id = 'c'")).toEqual([
      ["x"],
    ]);
    expect(q("SELECT VALUE c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'y')")).toEqual(
      ["a"],
    );
    expect(q("SELECT VALUE (SELECT VALUE COUNT(1) FROM t IN c.tags) FROM c")).toEqual([2, 0, 1, 0]);
    expect(q("SELECT c.id, t FROM c JOIN (SELECT VALUE t FROM t IN c.tags WHERE t != 'x') t")).toEqual([
      { id: "a", t: "y" },
    ]);
  });

  it("built-in functions, wrong argument types giving undefined", () => {
    expect(q("SELECT VALUE REPLACE(c.s, 'a', '-') FROM c WHERE c.id = 'a'")).toEqual(["Alph-"]);
    expect(q("SELECT VALUE CONTAINS(c.s, 'ALPHA', true) FROM c WHERE c.id = 'a'")).toEqual([true]);
    expect(q("SELECT VALUE ARRAY_CONTAINS(c.tags, {name: 'x'}, true) FROM c WHERE c.id = 'c'")).toEqual([
      true,
    ]);
    expect(q("SELECT VALUE ARRAY_CONTAINS(c.tags, {name: 'x'}) FROM c WHERE c.id = 'c'")).toEqual([false]);
    expect(q("SELECT VALUE ABS(c.n) FROM c")).toEqual([1, 2]);
    expect(q("SELECT VALUE IS_DEFINED(c.n) FROM c")).toEqual([true, true, true, false]);
    expect(q("SELECT VALUE SUBSTRING(c.s, 1, 3) FROM c WHERE c.id = 'a'")).toEqual(["lph"]);
    expect(q("SELECT VALUE IIF(c.n > 1, 'big', 'small') FROM c")).toEqual(["small", "big", "small", "small"]);
  });

  it("aggregates: undefined ignored, SUM/AVG of non-numbers undefined, SUM of nothing 0", () => {
    expect(q("SELECT VALUE COUNT(c.n) FROM c")).toEqual([3]);
    expect(q("SELECT VALUE SUM(c.n) FROM c")).toEqual([]);
    expect(q("SELECT VALUE SUM(c.n) FROM c WHERE IS_NUMBER(c.n)")).toEqual([3]);
    expect(q("SELECT VALUE SUM(c.n) FROM c WHERE false")).toEqual([0]);
    expect(q("SELECT VALUE AVG(c.n) FROM c WHERE false")).toEqual([]);
    expect(q("SELECT VALUE MIN(c.s) FROM c")).toEqual([null]);
    expect(q("SELECT VALUE MAX(c.s) FROM c")).toEqual(["beta"]);
  });

  it("patch/batch conditions", () => {
    expect(conditionHolds("FROM c WHERE c.n = 1", docs[0])).toBe(true);
    expect(conditionHolds("FROM c WHERE c.n = 2", docs[0])).toBe(false);
  });
});

describe("invalid queries are a 400", () => {
  it.each([
    ["SELECT * FORM c", "syntax"],
    ["SELECT * FROM c WHERE", "syntax"],
    ["SELECT * FROM c WHERE x.id = 1", "Identifier 'x' could not be resolved"],
    ["SELECT NOPE(c.id) FROM c", "'NOPE' is not a recognized built-in function name"],
    ["SELECT udf.f(c.id) FROM c", "User-defined functions are not supported"],
    ["SELECT ABS(1, 2) FROM c", "requires 1 argument"],
    ["SELECT * FROM c JOIN t IN c.tags", "'SELECT *' is only valid with a single input set"],
    ["SELECT c.id, c.id FROM c", "Duplicate alias"],
    ["SELECT * FROM c WHERE COUNT(1) > 1", "not allowed in the WHERE clause"],
    ["SELECT * FROM c ORDER BY LOWER(c.id)", "could not be mapped to a document path"],
    ["SELECT TOP -1 * FROM c", "syntax"],
    ["SELECT * FROM c OFFSET 1", "syntax"],
  ])("%s", (text, message) => {
    let err: unknown;
    try {
      runQuery({ query: text }, docs);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CosmosError);
    expect((err as CosmosError).status).toBe(400);
    expect((err as CosmosError).message.toLowerCase()).toContain(message.toLowerCase());
  });

  it("a TOP/OFFSET/LIMIT parameter must be a non-negative integer", () => {
    expect(statusOf(() => q("SELECT TOP @n * FROM c", [{ name: "@n", value: "3" }]))).toBe(400);
    expect(statusOf(() => q("SELECT * FROM c OFFSET @o LIMIT 1", [{ name: "@o", value: -1 }]))).toBe(400);
    expect(q("SELECT TOP @n VALUE c.id FROM c", [{ name: "@n", value: 2 }])).toEqual(["a", "b"]);
  });

  it("deep nesting is refused, long flat chains are fine (no stack overflow either way)", () => {
    expect(statusOf(() => q(`SELECT VALUE ${"(".repeat(5000)}1${")".repeat(5000)} FROM c`))).toBe(400);
    expect(statusOf(() => q(`SELECT VALUE ${"[".repeat(5000)}${"]".repeat(5000)} FROM c`))).toBe(400);
    expect(statusOf(() => q(`SELECT VALUE c${".a".repeat(20_000)} FROM c`))).toBe(400);
    expect(statusOf(() => q(`SELECT VALUE ${"-".repeat(20_000)}1 FROM c`))).toBe(400);
    expect(statusOf(() => q(`SELECT VALUE 1${" + 1".repeat(20_000)} FROM c`))).toBe(400);
    const ors = Array.from({ length: 20_000 }, (_, i) => `c.id = 'x${i}'`).join(" OR ");
    expect(q(`SELECT VALUE c.id FROM c WHERE ${ors} OR c.id = 'b'`)).toEqual(["b"]);
  });

  it("random query texts: a result or a 400, nothing else (fixed seed)", () => {
    const tokens = [
      "SELECT",
      "VALUE",
      "*",
      "FROM",
      "c",
      "WHERE",
      "JOIN",
      "t",
      "IN",
      "c.tags",
      "ORDER",
      "BY",
      "GROUP",
      "TOP",
      "1",
      "OFFSET",
      "LIMIT",
      "DISTINCT",
      "AND",
      "OR",
      "NOT",
      "(",
      ")",
      "[",
      "]",
      "{",
      "}",
      ",",
      ".",
      ":",
      "?",
      "??",
      "=",
      "<",
      ">=",
      "+",
      "-",
      "*",
      "/",
      "%",
      "||",
      "'x'",
      '"y"',
      "@p",
      "c.n",
      "COUNT(1)",
      "SUM(c.n)",
      "ABS",
      "ARRAY",
      "EXISTS",
      "udf.f",
      "null",
      "true",
      "undefined",
      "--",
      "\\",
      "'",
      "0x1F",
      "1e400",
      "BETWEEN",
      "LIKE",
      "ESCAPE",
      "AS",
      "ASC",
      "DESC",
    ];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...tokens), { maxLength: 24 }),
        fc.string({ maxLength: 8 }),
        (parts, noise) => {
          const text = `${parts.join(" ")}${noise}`;
          try {
            const rows = runQuery({ query: text, parameters: [{ name: "@p", value: 1 }] }, docs);
            expect(Array.isArray(rows)).toBe(true);
          } catch (e) {
            expect(e, text).toBeInstanceOf(CosmosError);
            expect((e as CosmosError).status, text).toBe(400);
          }
        },
      ),
      { seed: 8, numRuns: 3000 },
    );
  });
});

describe("the query route on a container with a fake clock", () => {
  it("a document that expires (TTL) leaves the results of a repeated query at once", async () => {
    const { Account } = await import("../../packages/emulator/src/store/account.js");
    const { RuMeter } = await import("../../packages/emulator/src/ru/meter.js");
    const { query } = await import("../../packages/emulator/src/routes/query.js");
    let clock = Date.UTC(2030, 0, 1);
    const account = new Account({ enforceThroughput: false, meter: new RuMeter(), now: () => clock });
    account.createDatabase({ id: "d" }, undefined);
    const c = account.createContainer(
      "d",
      { id: "c", partitionKey: { paths: ["/pk"] }, defaultTtl: 10 },
      undefined,
      2,
    );
    const ws = c.beginWrite();
    ws.create({ id: "short", pk: "a" });
    ws.create({ id: "forever", pk: "b", ttl: -1 });
    c.commit(ws.mutations, ws.nowMs);
    const run = () => {
      const reply = query(
        {
          method: "POST",
          segments: ["dbs", "d", "colls", "c", "docs"],
          headers: { "x-ms-documentdb-isquery": "True" },
          body: Buffer.from(JSON.stringify({ query: "SELECT VALUE c.id FROM c" })),
          origin: "http://127.0.0.1/",
          account,
          activityId: "test",
        },
        c,
      );
      if (reply instanceof Promise) throw new Error("expected an inline answer");
      return (JSON.parse(reply.body as string) as { Documents: string[] }).Documents.sort();
    };
    expect(run()).toEqual(["forever", "short"]);
    clock += 11_000;
    expect(run()).toEqual(["forever"]);
  });
});
