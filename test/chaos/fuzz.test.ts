/**
 * Hostile input, generated: fast-check (fixed seed) sends signed requests with random operations, ids, partition
 * keys, headers and bodies to an emulator in a real child process, and asserts after each one that
 * - nothing answers 5xx and the process is still alive;
 * - a refused request wrote nothing: the container's LSN (the change feed's "now" etag) did not move when the
 *   answer was an error, or a transactional batch did not commit;
 * and at the end, that a kill -9 and restart give back exactly the documents acknowledged before it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MasterKeyAuth, signedResource } from "../../packages/emulator/src/auth.js";
import { type EmulatorChild, spawnEmulator } from "../support/child.js";

/** Fixed, so a failure replays; change it only with a reason. */
const SEED = 20261123;
const RUNS = 1500;
const DB = "fuzz";
const CONTAINERS = ["hash", "multi", "ttl"] as const;

const dataDir = mkdtempSync(join(tmpdir(), "cosmos-emu-fuzz-"));
let emu: EmulatorChild;
let auth: MasterKeyAuth;

interface FuzzRequest {
  method: string;
  /** Path as sent (already URL-encoded where it should be). */
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** The data container this request may write to, if any (for the LSN check). */
  container?: (typeof CONTAINERS)[number];
  /** An atomic batch: anything but 200 must leave the container unchanged. */
  transactional?: boolean;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function send(req: FuzzRequest): Promise<Answer> {
  const raw = req.path.split("?")[0].split("/").filter(Boolean);
  let segments: string[];
  try {
    segments = raw.map(decodeURIComponent);
  } catch {
    segments = raw;
  }
  const { type, id } = signedResource(segments);
  const date = new Date().toUTCString();
  const sig = auth.sign(req.method, type, id, date);
  const res = await fetch(`${emu.endpoint.replace(/\/$/, "")}${req.path}`, {
    method: req.method,
    headers: {
      authorization: encodeURIComponent(`type=master&ver=1.0&sig=${sig}`),
      "x-ms-date": date,
      "x-ms-version": "2020-07-15",
      ...req.headers,
    },
    body: req.method === "GET" || req.method === "HEAD" ? undefined : req.body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The container's last committed LSN, from a change feed read that starts "now" (304 with etag). */
async function lsnOf(container: string): Promise<string> {
  const res = await send({
    method: "GET",
    path: `/dbs/${DB}/colls/${container}/docs`,
    headers: { "a-im": "Incremental Feed", "if-none-match": "*" },
  });
  expect(res.status).toBe(304);
  return res.headers.get("etag") ?? "";
}

// ------------------------------------------------------------------ generators

/** Short ids collide often, so reads, replaces, deletes and conflicts meet existing documents. */
const simpleId = fc.stringMatching(/^[a-z0-9]{1,3}$/);
const id = fc.oneof(
  simpleId,
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.constantFrom(
    ".",
    "..",
    "a?b",
    "trailing ",
    " ",
    "",
    "中文 id",
    "100%",
    "a+b",
    "a/b",
    "a\\b",
    "a#b",
    "x".repeat(300),
  ),
);
const pkValue = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant({}),
  fc.constant([1]),
);
const pkHeader = fc.oneof(
  pkValue.map((v) => JSON.stringify([v])),
  fc.tuple(pkValue, pkValue).map((t) => JSON.stringify(t)),
  fc.tuple(pkValue, pkValue, pkValue, pkValue).map((t) => JSON.stringify(t)),
  fc.constantFrom("[]", "[{}]", '["a",{}]', "{}", "null", "[", '"a"'),
  fc.string({ maxLength: 10 }),
);
// No short positive TTLs: a document expiring between the two snapshots of the restart check is not a loss.
const ttl = fc.constantFrom(-2, -1, 0, 3600, 2 ** 31 - 1, 2 ** 31, 2 ** 40, 1.5, "1", null);
const doc = fc.record(
  {
    id,
    pk: pkValue,
    a: pkValue,
    b: pkValue,
    ttl,
    n: fc.integer(),
    tags: fc.oneof(fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }), fc.string(), fc.constant(null)),
    payload: fc.jsonValue({ maxDepth: 3 }),
  },
  { requiredKeys: [] },
);
const deep = fc
  .integer({ min: 100, max: 20_000 })
  .map((n) => `{"id":"d","pk":"p","v":${"[".repeat(n)}${"]".repeat(n)}}`);
const bytes = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b));
const body = fc.oneof(
  { weight: 4, arbitrary: doc.map((d) => JSON.stringify(d)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: bytes },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
);
const container = fc.constantFrom(...CONTAINERS);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const optionalHeaders = fc.record(
  {
    "x-ms-documentdb-partitionkey": pkHeader,
    "if-match": fc.oneof(fc.constant("*"), fc.string({ maxLength: 12 })),
    "x-ms-max-item-count": fc.oneof(fc.integer({ min: -3, max: 5 }).map(String), fc.string({ maxLength: 4 })),
    "x-ms-continuation": fc.oneof(
      fc.string({ maxLength: 20 }),
      fc.constantFrom('{"snapshot":"x","offset":1}', "1", "-1", "99999"),
    ),
  },
  { requiredKeys: [] },
);

const patchOp = fc.record(
  {
    op: fc.constantFrom("add", "set", "replace", "remove", "incr", "move", "bogus"),
    path: fc.constantFrom("/n", "/id", "/pk", "/a/b", "/tags/0", "/tags/-", "/_etag", "", "n", "/x/y/z"),
    value: fc.jsonValue({ maxDepth: 2 }),
    from: fc.constantFrom("/n", "/x", "/pk"),
  },
  { requiredKeys: ["op"] },
);
const batchOp = fc.oneof(
  fc.record(
    {
      operationType: fc.constantFrom(
        "Create",
        "Upsert",
        "Replace",
        "Delete",
        "Read",
        "Patch",
        "Bogus",
        "create",
      ),
      id,
      partitionKey: pkHeader,
      resourceBody: fc.oneof(
        doc,
        fc.record({ operations: fc.array(patchOp, { maxLength: 3 }) }),
        fc.jsonValue(),
      ),
      ifMatch: fc.string({ maxLength: 6 }),
    },
    { requiredKeys: ["operationType"] },
  ),
  fc.constantFrom(null, 1, "x", [], {}),
);
const queryText = fc.oneof(
  fc.constantFrom(
    "SELECT * FROM c",
    "SELECT TOP 3 * FROM c ORDER BY c.n",
    "SELECT * FROM c ORDER BY c.n DESC, c.id",
    "SELECT VALUE COUNT(1) FROM c",
    "SELECT * FROM c OFFSET 1 LIMIT 2",
    "SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk",
    "SELECT t FROM c JOIN t IN c.tags",
    "SELECT DISTINCT VALUE c.pk FROM c",
    "SELECT * FROM c WHERE c.n > @n",
    "SELECT",
  ),
  fc.integer({ min: 1, max: 3000 }).map((n) => `SELECT * FROM c WHERE ${"(".repeat(n)}1${")".repeat(n)}`),
  fc.string({ maxLength: 30 }),
);

/** Well-formed writes, so that reads, replaces and deletes find documents and accepted writes happen. */
const wellFormedWrite: fc.Arbitrary<FuzzRequest> = fc
  .tuple(simpleId, fc.constantFrom("p", "q"), fc.integer(), fc.boolean())
  .map(([i, pk, n, upsert]) => ({
    method: "POST",
    path: `/dbs/${DB}/colls/hash/docs`,
    headers: {
      "content-type": "application/json",
      "x-ms-documentdb-partitionkey": JSON.stringify([pk]),
      ...(upsert ? { "x-ms-documentdb-is-upsert": "true" } : {}),
    },
    body: JSON.stringify({ id: i, pk, n, tags: ["x"] }),
    container: "hash",
  }));

const request: fc.Arbitrary<FuzzRequest> = fc.oneof(
  { weight: 2, arbitrary: wellFormedWrite },
  // create / upsert
  fc
    .tuple(container, body, optionalHeaders, fc.boolean())
    .map(([c, b, h, upsert]) => ({
      method: "POST",
      path: `/dbs/${DB}/colls/${c}/docs`,
      headers: {
        ...h,
        "content-type": "application/json",
        ...(upsert ? { "x-ms-documentdb-is-upsert": "true" } : {}),
      },
      body: b,
      container: c,
    })),
  // point operations on a document
  fc
    .tuple(
      container,
      id,
      fc.constantFrom("GET", "PUT", "PATCH", "DELETE", "POST"),
      optionalHeaders,
      body,
      fc.array(patchOp, { maxLength: 4 }),
    )
    .map(([c, i, method, h, b, ops]) => ({
      method,
      path: `/dbs/${DB}/colls/${c}/docs/${encodeURIComponent(i)}`,
      headers: { ...h, "content-type": "application/json" },
      body: method === "PATCH" ? JSON.stringify({ operations: ops }) : b,
      container: c,
    })),
  // queries
  fc
    .tuple(container, queryText, maybe(fc.jsonValue()), optionalHeaders, fc.boolean())
    .map(([c, q, n, h, plan]) => ({
      method: "POST",
      path: `/dbs/${DB}/colls/${c}/docs`,
      headers: {
        ...h,
        "x-ms-documentdb-isquery": "true",
        "content-type": "application/query+json",
        ...(plan ? { "x-ms-cosmos-is-query-plan-request": "true" } : {}),
      },
      body: JSON.stringify({ query: q, parameters: n === undefined ? [] : [{ name: "@n", value: n }] }),
      container: c,
    })),
  // batch and bulk
  fc
    .tuple(
      container,
      fc.array(batchOp, { minLength: 0, maxLength: 6 }),
      fc.boolean(),
      maybe(fc.boolean()),
      optionalHeaders,
    )
    .map(([c, ops, atomic, continueOnError, h]) => ({
      method: "POST",
      path: `/dbs/${DB}/colls/${c}/docs`,
      headers: {
        ...h,
        "content-type": "application/json",
        "x-ms-cosmos-is-batch-request": "true",
        "x-ms-cosmos-batch-atomic": String(atomic),
        ...(continueOnError === undefined
          ? {}
          : { "x-ms-cosmos-batch-continue-on-error": String(continueOnError) }),
      },
      body: JSON.stringify(ops),
      container: c,
      transactional: atomic,
    })),
  // change feed and read feed
  fc
    .tuple(
      container,
      maybe(fc.constantFrom("Incremental Feed", "Full-Fidelity Feed", "bogus")),
      maybe(fc.oneof(fc.constantFrom("*", '"0"', '"1"', '"-1"', '"x"'), fc.string({ maxLength: 8 }))),
      maybe(fc.oneof(fc.constantFrom("0", "1", "99", "x"), fc.string({ maxLength: 4 }))),
      maybe(fc.string({ maxLength: 30 })),
      optionalHeaders,
    )
    .map(([c, aim, inm, range, since, h]) => ({
      method: "GET",
      path: `/dbs/${DB}/colls/${c}/docs`,
      headers: {
        ...h,
        ...(aim ? { "a-im": aim } : {}),
        ...(inm !== undefined ? { "if-none-match": inm } : {}),
        ...(range !== undefined ? { "x-ms-documentdb-partitionkeyrangeid": range } : {}),
        ...(since !== undefined ? { "if-modified-since": since } : {}),
      },
    })),
  // delete all items of a partition key
  fc
    .tuple(container, pkHeader)
    .map(([c, pk]) => ({
      method: "POST",
      path: `/dbs/${DB}/colls/${c}/operations/partitionkeydelete`,
      headers: { "x-ms-documentdb-partitionkey": pk },
      container: c,
    })),
  // containers: random definitions and throughput
  fc
    .tuple(
      fc.record(
        {
          id,
          partitionKey: fc.oneof(
            fc.record(
              {
                paths: fc.array(fc.string({ maxLength: 5 }), { maxLength: 4 }),
                kind: fc.string(),
                version: fc.integer(),
              },
              { requiredKeys: [] },
            ),
            fc.jsonValue(),
          ),
          defaultTtl: ttl,
          indexingPolicy: fc.oneof(
            fc.jsonValue({ maxDepth: 3 }),
            fc.record({
              compositeIndexes: fc.constant([[{ path: "/n", order: "sideways" }, { path: "/id" }]]),
            }),
          ),
        },
        { requiredKeys: [] },
      ),
      maybe(fc.oneof(fc.integer().map(String), fc.constantFrom("1e12", "1000000000", "400", "x"))),
      maybe(
        fc.oneof(
          fc.constantFrom('{"maxThroughput":1e12}', '{"maxThroughput":4000}', "{", "null"),
          fc.string({ maxLength: 8 }),
        ),
      ),
    )
    .map(([def, manual, autoscale]) => ({
      method: "POST",
      path: `/dbs/${DB}/colls`,
      headers: {
        "content-type": "application/json",
        ...(manual !== undefined ? { "x-ms-offer-throughput": manual } : {}),
        ...(autoscale !== undefined ? { "x-ms-cosmos-offer-autopilot-settings": autoscale } : {}),
      },
      body: JSON.stringify(def),
    })),
  // offers
  fc
    .tuple(
      fc.constantFrom("GET", "PUT", "POST", "DELETE"),
      fc.string({ maxLength: 10 }),
      fc.jsonValue({ maxDepth: 3 }),
    )
    .map(([method, rid, b]) => ({
      method,
      path: rid === "" ? "/offers" : `/offers/${encodeURIComponent(rid)}`,
      headers: {
        "content-type": "application/json",
        ...(method === "POST" ? { "x-ms-documentdb-isquery": "true" } : {}),
      },
      body: JSON.stringify(b),
    })),
  // anything at all under the account
  fc
    .tuple(
      fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
      fc.array(
        fc.oneof(
          fc.constantFrom("dbs", DB, "colls", "hash", "docs", "pkranges", "operations", "%", "%zz", ".."),
          fc.string({ maxLength: 6 }).map(encodeURIComponent),
        ),
        { maxLength: 7 },
      ),
      body,
    )
    .map(([method, segs, b]) => ({
      method,
      path: `/${segs.join("/")}`,
      headers: { "content-type": "application/json" },
      body: b,
    })),
);

// ------------------------------------------------------------------ the run

beforeAll(async () => {
  emu = await spawnEmulator({ port: 0, dataDir, ttlSweepIntervalMs: 3_600_000, enforceThroughput: false });
  auth = new MasterKeyAuth(emu.key);
  expect(
    (await send({ method: "POST", path: "/dbs", headers: {}, body: JSON.stringify({ id: DB }) })).status,
  ).toBe(201);
  const definitions = {
    hash: { paths: ["/pk"], kind: "Hash", version: 2 },
    multi: { paths: ["/a", "/b"], kind: "MultiHash", version: 2 },
    ttl: { paths: ["/pk"], kind: "Hash" },
  };
  for (const c of CONTAINERS) {
    const res = await send({
      method: "POST",
      path: `/dbs/${DB}/colls`,
      headers: { "x-ms-emulator-partition-count": "3" },
      body: JSON.stringify({
        id: c,
        partitionKey: definitions[c],
        ...(c === "ttl" ? { defaultTtl: 3600 } : {}),
      }),
    });
    expect(res.status).toBe(201);
  }
});

afterAll(async () => {
  emu?.process.kill("SIGKILL");
  await emu?.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

async function allDocuments(): Promise<string[]> {
  const out: string[] = [];
  for (const c of CONTAINERS) {
    let continuation: string | null = null;
    do {
      const res = await send({
        method: "GET",
        path: `/dbs/${DB}/colls/${c}/docs`,
        headers: {
          "x-ms-max-item-count": "1000",
          ...(continuation ? { "x-ms-continuation": continuation } : {}),
        },
      });
      expect(res.status).toBe(200);
      const page = JSON.parse(res.text) as { Documents: { _rid: string; _etag: string }[] };
      out.push(...page.Documents.map((d) => `${c}/${d._rid}/${d._etag}`));
      continuation = res.headers.get("x-ms-continuation");
    } while (continuation);
  }
  return out.sort();
}

describe("fuzzed requests", () => {
  it(`${RUNS} random requests: no 5xx, the process alive, refused requests write nothing`, async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        const before = req.container ? await lsnOf(req.container) : undefined;
        const res = await send(req);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        expect(emu.process.exitCode, "the emulator process exited").toBeNull();
        expect(
          res.status,
          `${req.method} ${req.path} → ${res.status} ${res.text.slice(0, 300)}`,
        ).toBeLessThan(500);
        const refused = res.status >= 400 || (req.transactional === true && res.status !== 200);
        if (req.container && refused) {
          expect(await lsnOf(req.container), `${req.method} ${req.path} → ${res.status} wrote`).toBe(before);
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The generators reach the handlers: successes and refusals both happen.
    const ok = [...statuses].filter(([s]) => s < 300).reduce((n, [, k]) => n + k, 0);
    const refusedCount = [...statuses].filter(([s]) => s >= 400).reduce((n, [, k]) => n + k, 0);
    expect(ok).toBeGreaterThan(RUNS / 10);
    expect(refusedCount).toBeGreaterThan(RUNS / 10);
  });

  it("gives back exactly the acknowledged documents after kill -9 and a restart", async () => {
    const before = await allDocuments();
    expect(before.length).toBeGreaterThan(0);
    emu.process.kill("SIGKILL");
    await emu.exited;
    emu = await spawnEmulator({
      port: emu.port,
      dataDir,
      ttlSweepIntervalMs: 3_600_000,
      enforceThroughput: false,
    });
    auth = new MasterKeyAuth(emu.key);
    expect(await allDocuments()).toEqual(before);
  });
});
