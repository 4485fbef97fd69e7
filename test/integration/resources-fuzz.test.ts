/**
 * Hostile input to the app's API, generated: fast-check (fixed seed) calls the real handlers of
 * functions/resources.ts (HttpRequest + InvocationContext, the library's test mode) against the emulator through
 * the SDK, with deep and oversize bodies, unicode (lone surrogates, NUL, RTL, emoji) in names, keys and values,
 * wrong types at every field, odd headers (If-Match, If-None-Match, Content-Length lies, Content-Type) and odd
 * parameters ($top, $skipToken, ids). After each request:
 * - nothing answers 5xx, and nothing logs an error line;
 * - a refused request (4xx) wrote nothing: every document of every container of the app's database (read from
 *   containerDefinition, so any container layout is covered) has the same _rid and _etag as before.
 */
import { HttpRequest, type HttpResponseInit, InvocationContext } from "@azure/functions";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  deleteResource,
  getOperation,
  getResource,
  listResources,
  patchResource,
  putResource,
} from "../../functions/resources.js";
import { containerDefinition, ensureContainers } from "../../src/shared/containers.js";
import { MAX_BODY_DEPTH, MAX_SKIP_TOKEN_CHARS } from "../../src/shared/resources/index.js";
import { loadSettings } from "../../src/shared/settings.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

/** Fixed, so a failure replays; change it only with a reason. */
const SEED = 20260519;
const RUNS = 200;
const BASE = "http://localhost:7071/api";
const BODY_LIMIT = loadSettings({}).maxRequestBodyBytes;

let t: TestEmulator;

beforeAll(async () => {
  // Throughput is not enforced: a 429 → 503 ServiceBusy would be capacity, not input handling.
  t = await startTestEmulator({ enforceThroughput: false });
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
  await ensureContainers(t.client);
});
afterAll(async () => {
  delete process.env.COSMOS_CONNECTION;
  await t?.close();
});

/** Every document of every container of the app's database, as `container/_rid/_etag`. */
async function snapshot(): Promise<string[]> {
  const database = t.client.database(containerDefinition.database.name);
  const perContainer = await Promise.all(
    containerDefinition.containers.map(async (c) => {
      const { resources } = await database
        .container(c.name)
        .items.query<{ _rid: string; _etag: string }>("SELECT c._rid, c._etag FROM c")
        .fetchAll();
      return resources.map((d) => `${c.name}/${d._rid}/${d._etag}`);
    }),
  );
  return perContainer.flat().sort();
}

// ------------------------------------------------------------------ generators

/** Characters that break naive code: NUL, controls, lone surrogates, RTL override, combining marks, emoji. */
const oddChar = fc.oneof(
  fc.constantFrom(
    "\u0000",
    "\u0007",
    "\n",
    "\u202e",
    "\u200f",
    "\u0301",
    "\ufeff",
    "\uffff",
    "😀",
    "👩‍👩‍👧",
    "ש",
    "é",
  ),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
);
const hostileText = fc.oneof(
  fc.string({ unit: fc.oneof(oddChar, fc.string({ minLength: 1, maxLength: 1 })), maxLength: 10 }),
  fc.constantFrom(
    "",
    " ",
    "..",
    "a/b",
    "%2F",
    "x.",
    "sub_bad",
    "a".repeat(64),
    "a".repeat(65),
    "x".repeat(600),
  ),
);
const SUBS = ["fz-a", "FZ-A", "fz-b"];
const NAMES = ["r1", "R1", "r2", "r.3"];
const sub = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...SUBS) },
  { weight: 1, arbitrary: hostileText },
);
const name = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...NAMES) },
  { weight: 1, arbitrary: hostileText },
);
/** Deletes aim mostly elsewhere: a resource marked Deleting stays so here (no trigger runs) and refuses writes. */
const doomed = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom("r2", "d1") },
  { weight: 1, arbitrary: hostileText },
);

/** Any JSON-ish value: the wrong type for whichever field it lands in. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, "", [], {}, [1, "a"], { sku: "basic" }),
  fc.jsonValue({ maxDepth: 2 }),
  hostileText,
);
// Each field is valid most of the time, so that a request often fails on one field only (or succeeds).
const sku = fc.oneof({ weight: 8, arbitrary: fc.constantFrom("basic", "standard", "premium") }, anyValue);
const nodeCount = fc.oneof(
  { weight: 10, arbitrary: fc.integer({ min: 1, max: 100 }) },
  fc.constantFrom(0, 101, 2.5, -1, "3", 2 ** 53, Number.MAX_VALUE),
  anyValue,
);
const description = fc.oneof(
  { weight: 8, arbitrary: hostileText },
  fc.string({ minLength: 510, maxLength: 514 }),
  anyValue,
);
const tagKey = fc.oneof(
  fc.constantFrom("env", "ENV", "__proto__", "constructor", "k".repeat(129)),
  hostileText,
);
const tags = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.dictionary(tagKey, fc.oneof({ weight: 8, arbitrary: hostileText }, anyValue), {
      maxKeys: 4,
    }),
  },
  fc.constant(Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`t${i}`, "v"]))),
  anyValue,
);
const someProperties = fc.record({ sku, nodeCount, description }, { requiredKeys: ["sku"] });
const properties = fc.oneof(
  { weight: 8, arbitrary: someProperties },
  { weight: 1, arbitrary: fc.record({ nodeCount, description }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.tuple(someProperties, anyValue).map(([p, color]) => ({ ...p, color })) },
  { weight: 1, arbitrary: anyValue },
);
const resourceBody = fc.oneof(
  { weight: 8, arbitrary: fc.record({ properties, tags }, { requiredKeys: ["properties"] }) },
  { weight: 1, arbitrary: fc.record({ properties, tags }, { requiredKeys: [] }) },
  {
    weight: 1,
    arbitrary: fc.record({ properties, tags, location: anyValue }, { requiredKeys: ["location"] }),
  },
);

/** `{"properties":{"sku":"basic","description":…}}` nesting `depth` levels of objects or arrays in all. */
const deepBody = fc
  .tuple(
    fc.constantFrom(MAX_BODY_DEPTH - 1, MAX_BODY_DEPTH, MAX_BODY_DEPTH + 1, 1_000, 9_000, 30_000),
    fc.constantFrom("object", "array"),
    fc.constantFrom("description", "tags"),
  )
  .map(([depth, kind, where]) => {
    const n = where === "description" ? depth - 2 : depth - 1;
    const inner =
      kind === "object" ? `${'{"a":'.repeat(n)}1${"}".repeat(n)}` : `${"[".repeat(n)}${"]".repeat(n)}`;
    return where === "description"
      ? `{"properties":{"sku":"basic","description":${inner}}}`
      : `{"properties":{"sku":"basic"},"tags":${inner}}`;
  });

/** A body of exactly BODY_LIMIT + delta bytes (UTF-8), padded with one- to four-byte characters. */
const sizedBody = fc
  .tuple(fc.integer({ min: -6, max: 6 }), fc.constantFrom("x", "é", "😀"))
  .map(([delta, ch]) => {
    const head = '{"properties":{"sku":"basic"},"tags":{"pad":"';
    const tail = '"}}';
    const room = BODY_LIMIT + delta - Buffer.byteLength(head + tail);
    const unit = Buffer.byteLength(ch);
    return head + ch.repeat(Math.floor(room / unit)) + "x".repeat(room % unit) + tail;
  });

const rawText = fc.oneof(
  fc.constantFrom(
    "",
    " \n",
    "{",
    "[]",
    "null",
    "1",
    '"str"',
    "\ufeff{}",
    '{"properties":{"sku":"basic"}}\u0000',
    '{"properties":{"sku":"basic"},"properties":5}',
    '{"properties":{"sku":"basic","sku":"huge"}}',
    '{"__proto__":{"sku":"basic"}}',
    '{"properties":{"sku":"basic"},"tags":{"__proto__":"x"}}',
    '{"properties":{"sku":"\\ud800"}}',
  ),
  fc.string({ unit: fc.oneof(oddChar, fc.string({ minLength: 1, maxLength: 1 })), maxLength: 30 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
);

type Body = { string: string } | { bytes: Uint8Array };
const body: fc.Arbitrary<Body | undefined> = fc.oneof(
  { weight: 8, arbitrary: resourceBody.map((b) => ({ string: JSON.stringify(b) })) },
  { weight: 2, arbitrary: deepBody.map((s) => ({ string: s })) },
  { weight: 2, arbitrary: sizedBody.map((s) => ({ string: s })) },
  { weight: 3, arbitrary: rawText.map((s) => ({ string: s })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => ({ bytes: b })) },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

/** Header values as a host delivers them: Latin-1 without CR, LF or NUL. */
const headerText = fc.stringMatching(/^[\x20-\x7e\xa0-\xff]{0,40}$/);
const CURRENT_ETAG = "<the resource's current etag>";
const ACTUAL_LENGTH = "<the body's length ± 1>";
/** A header that is usually absent. */
const sometimes = <T>(a: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });
const headers = fc.record({
  "if-match": sometimes(
    fc.oneof(
      fc.constantFrom(
        "*",
        CURRENT_ETAG,
        CURRENT_ETAG,
        '"00000000-0000-0000-0000-000000000000"',
        'W/"x"',
        "",
        "*, *",
      ),
      headerText,
    ),
  ),
  "if-none-match": sometimes(
    fc.oneof(
      { weight: 3, arbitrary: fc.constant("*") },
      { weight: 1, arbitrary: fc.constantFrom('"x"', "", " *", "*,*", "W/*") },
      { weight: 1, arbitrary: headerText },
    ),
  ),
  "content-length": sometimes(
    fc.oneof(
      fc.constantFrom(
        ACTUAL_LENGTH,
        "0",
        "-1",
        "abc",
        "1e3",
        "999999999999",
        String(BODY_LIMIT + 1),
        "NaN",
        "0x10",
      ),
      headerText,
    ),
  ),
  "content-type": sometimes(
    fc.oneof(
      fc.constantFrom(
        "application/json",
        "text/plain",
        "application/merge-patch+json",
        "application/json; charset=utf-16",
        "multipart/form-data; boundary=x",
        "",
      ),
      headerText,
    ),
  ),
});

const REAL_TOKEN = "<a real $skipToken of another subscription>";
const base64url = fc.stringMatching(/^[A-Za-z0-9_-]{1,60}$/);
const top = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom("1", "2", "3") },
  fc.constantFrom(
    "1",
    "2",
    "1000",
    "1001",
    "0",
    "-1",
    "1e2",
    "abc",
    "",
    " 5",
    "0x10",
    "١٢",
    "5.0",
    "9".repeat(30),
  ),
  hostileText,
);
const skipToken = fc.oneof(
  fc.constant(REAL_TOKEN),
  base64url,
  base64url.map((s) => `${s}=`),
  fc.constant("A".repeat(MAX_SKIP_TOKEN_CHARS + 1)),
  hostileText,
);
const query = fc.oneof(
  fc.record({ $top: top, $skipToken: skipToken }, { requiredKeys: [] }).map((q) => ({ params: q })),
  fc
    .constantFrom("?$top=1&$top=2", "?$skipToken", "?$skipToken=%ZZ", "?%24top=2", "?$top=%00")
    .map((raw) => ({ raw })),
);

/** Percent-encodes the UTF-8 bytes of `s` (a lone surrogate becomes U+FFFD, as any encoder would send it). */
const pct = (s: string) =>
  [...Buffer.from(s, "utf8")].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");

const operationId = fc.oneof(
  fc.constant("<an operation id a response named>"),
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  hostileText,
);

type Handler = (req: HttpRequest, ctx: InvocationContext) => Promise<HttpResponseInit>;
const call = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("PUT" as const), sub, name, body, headers }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("PATCH" as const), sub, name, body, headers }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("DELETE" as const), sub, name: doomed, body, headers }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("GET" as const), sub, name, headers }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("LIST" as const), sub, query, headers }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("OPERATION" as const), sub, operationId, headers }) },
);
type Call = typeof call extends fc.Arbitrary<infer C> ? C : never;

// ------------------------------------------------------------------ state the markers resolve against

const etags = new Map<string, string>();
const operations: string[] = [];
let realToken = "";

function resolveHeaders(c: Call, bodyBytes: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.headers)) {
    if (v === undefined) continue;
    if (v === CURRENT_ETAG) {
      const key = "name" in c ? `${c.sub.toLowerCase()}/${c.name.toLowerCase()}` : "";
      out[k] = etags.get(key) ?? '"none"';
    } else if (v === ACTUAL_LENGTH) out[k] = String(bodyBytes + (bodyBytes % 3) - 1);
    else out[k] = v;
  }
  return out;
}

function build(c: Call): { handler: Handler; request: HttpRequest } {
  const b = "body" in c ? c.body : undefined;
  const bodyBytes = b === undefined ? 0 : "string" in b ? Buffer.byteLength(b.string) : b.bytes.length;
  const common = { headers: resolveHeaders(c, bodyBytes), ...(b === undefined ? {} : { body: b }) };
  switch (c.kind) {
    case "PUT":
    case "PATCH":
    case "DELETE":
    case "GET": {
      const handler = { PUT: putResource, PATCH: patchResource, DELETE: deleteResource, GET: getResource }[
        c.kind
      ];
      const url = `${BASE}/subscriptions/${pct(c.sub)}/resources/${pct(c.name)}`;
      const params = { subscriptionId: c.sub, resourceName: c.name };
      // GET carries no body (the host drops one).
      const init = c.kind === "GET" ? { headers: common.headers } : common;
      return { handler, request: new HttpRequest({ method: c.kind, url, params, ...init }) };
    }
    case "LIST": {
      let search: string;
      if ("raw" in c.query) search = c.query.raw;
      else {
        const q = c.query.params;
        const parts = Object.entries(q).map(([k, v]) => `${k}=${pct(v === REAL_TOKEN ? realToken : v)}`);
        search = parts.length ? `?${parts.join("&")}` : "";
      }
      const url = `${BASE}/subscriptions/${pct(c.sub)}/resources${search}`;
      return {
        handler: listResources,
        request: new HttpRequest({
          method: "GET",
          url,
          params: { subscriptionId: c.sub },
          headers: common.headers,
        }),
      };
    }
    case "OPERATION": {
      const id = c.operationId.startsWith("<") ? (operations.at(-1) ?? "none") : c.operationId;
      // Both the subscription and the id: the route may name either.
      const url = `${BASE}/subscriptions/${pct(c.sub)}/operations/${pct(id)}`;
      return {
        handler: getOperation,
        request: new HttpRequest({
          method: "GET",
          url,
          params: { subscriptionId: c.sub, operationId: id },
          headers: common.headers,
        }),
      };
    }
  }
}

describe("fuzzed API requests", () => {
  it(`${RUNS} hostile requests through the handlers: never a 5xx or an error line; a 4xx writes nothing`, async () => {
    // Resources to patch, and a real token of another subscription for the $skipToken replay.
    const seeds = [
      ...["fz-a", "fz-b"].flatMap((s) => ["r1", "r2", "r.3"].map((n) => [s, n])),
      ...["t1", "t2", "t3"].map((n) => ["fz-token", n]),
    ];
    for (const [s, n] of seeds) {
      const res = await putResource(
        new HttpRequest({
          method: "PUT",
          url: `${BASE}/subscriptions/${s}/resources/${n}`,
          params: { subscriptionId: s, resourceName: n },
          body: { string: JSON.stringify({ properties: { sku: "basic" } }) },
        }),
        new InvocationContext(),
      );
      expect(res.status).toBe(201);
      etags.set(`${s}/${n}`, (res.headers as Record<string, string>).ETag);
    }
    const page = await listResources(
      new HttpRequest({
        method: "GET",
        url: `${BASE}/subscriptions/fz-token/resources?$top=1`,
        params: { subscriptionId: "fz-token" },
      }),
      new InvocationContext(),
    );
    realToken =
      new URL((page.jsonBody as { nextLink: string }).nextLink).searchParams.get("$skipToken") ?? "";
    expect(realToken).not.toBe("");

    const statuses = new Map<number, number>();
    const codes = new Set<string>();
    let state = await snapshot();
    await fc.assert(
      fc.asyncProperty(call, async (c) => {
        const { handler, request } = build(c);
        const errorLines: string[] = [];
        const context = new InvocationContext({
          invocationId: "fuzz",
          logHandler: (level, ...args) => {
            if (level === "error") errorLines.push(args.map(String).join(" "));
          },
        });
        const res = await handler(request, context);
        const status = res.status ?? 200;
        const json = res.jsonBody as { error?: { code: string } } | undefined;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        const what = `${c.kind} ${request.url.slice(0, 200)} → ${status} ${String(JSON.stringify(json)).slice(0, 300)}`;
        expect(status, what).toBeLessThan(500);
        expect(errorLines, what).toEqual([]);
        const after = await snapshot();
        if (status >= 400) {
          expect(json?.error?.code, what).toEqual(expect.any(String));
          codes.add(json?.error?.code ?? "");
          expect(after, `${what} wrote`).toEqual(state);
        }
        state = after;
        // Remember what successes named, for the markers of later requests.
        const headers = (res.headers ?? {}) as Record<string, string>;
        if (status < 300 && "name" in c && headers.ETag) {
          etags.set(`${c.sub.toLowerCase()}/${c.name.toLowerCase()}`, headers.ETag);
        }
        const op = headers["Azure-AsyncOperation"]?.split("/").pop();
        if (op) operations.push(op);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The generators reach every check and the success paths too.
    const count = (f: (s: number) => boolean) =>
      [...statuses].filter(([s]) => f(s)).reduce((n, [, k]) => n + k, 0);
    expect(count((s) => s < 300)).toBeGreaterThan(RUNS / 20);
    expect(count((s) => s >= 400)).toBeGreaterThan(RUNS / 2);
    expect([...codes].sort()).toEqual(
      expect.arrayContaining([
        "BodyTooDeep",
        "BodyTooLarge",
        "InvalidBody",
        "InvalidHeader",
        "InvalidJson",
        "InvalidOperationId",
        "InvalidResourceName",
        "InvalidSkipToken",
        "InvalidSubscriptionId",
        "InvalidTop",
        "MissingBody",
        "PreconditionFailed",
        "UnknownField",
      ]),
    );
  });
});
