/**
 * The durable HTTP API over a REAL Cosmos DB task hub (CosmosTaskHub on the emulator, over a socket): what a client
 * can send that the store or the hub would refuse is answered 400/413 with a code — a garbage continuation token,
 * a 5 MB input, a 5,000-deep input, a huge `top`, bad dates — and never a 500. Then fast-check (fixed seed) sends
 * random methods, paths, queries, headers and bodies: no answer is a 5xx (but the extension's own 501s and the
 * asked-for 500 of a Failed instance), and the hub reports no failure.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { Database } from "@azure/cosmos";
import { InvocationContext } from "@azure/functions";
import type { OrchestrationContext } from "durable-functions";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createDurableApiHandler,
  type DurableApiHandler,
} from "../../packages/devhost/src/durable/client-api.js";
import { MAX_LIST_PAGE_SIZE } from "../../packages/devhost/src/durable/client-api-input.js";
import { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { DURABLE_LIMITS } from "../../packages/devhost/src/durable/limits.js";
import { DURABLE_HUB_SETTINGS } from "../../packages/devhost/src/durable/settings.js";
import { startInProcessDevHost } from "../support/dev-host.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { processorContainers } from "../support/processor-containers.js";
import { serveDurableApi } from "./client-test-server.js";

/** Fixed, so a failure replays; change it only with a reason. */
const SEED = 20260520;
const RUNS = 300;
const LIMIT = DURABLE_HUB_SETTINGS.maxPayloadBytes.default;

const require = createRequire(import.meta.url);
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (
    f: (ctx: OrchestrationContext) => Generator<unknown, unknown, never>,
  ) => (trigger: unknown, ctx: InvocationContext) => Promise<unknown>;
};
// Returns its input (an echo): instances finish, so purge, restart and 410s are reached too.
const echo = createOrchestrator(function* (ctx) {
  yield* [];
  return ctx.df.getInput();
});

let t: TestEmulator;
let db: Database;
let hub: CosmosTaskHub;
let handler: DurableApiHandler;
let server: Awaited<ReturnType<typeof serveDurableApi>>;
const hubFailures: string[] = [];

beforeAll(async () => {
  // Throughput is not enforced: a 429 → 503 would be capacity, not input handling.
  t = await startTestEmulator({ enforceThroughput: false });
  db = (await t.client.databases.create({ id: uniqueName("durable-api") })).database;
  const { monitored, leases } = await processorContainers(db, 1);
  hub = new CosmosTaskHub({
    container: monitored,
    leaseContainer: leases,
    hubName: "ApiHub",
    feedPollDelayMs: 50,
    timerScanIntervalMs: 200,
    invokeOrchestrator: async (name, input) => {
      if (name !== "echo") return { thrown: new Error(`no orchestrator '${name}'`) };
      try {
        return { returned: JSON.parse(JSON.stringify(await echo(input, new InvocationContext()))) };
      } catch (e) {
        return { thrown: e };
      }
    },
    invokeActivity: async () => ({ failure: { ErrorType: "Error", ErrorMessage: "no activities here" } }),
  });
  await hub.start();
  server = await serveDurableApi((baseUrl) => {
    handler = createDurableApiHandler({
      hub,
      baseUrl,
      isOrchestrator: (name) => name === "echo",
      onError: (message) => hubFailures.push(message),
    });
    return handler;
  });
});

afterAll(async () => {
  await server?.close();
  await hub?.stop();
  await t?.close();
});

const api = (path: string) => `${server.baseUrl}/runtime/webhooks/durabletask/${path}`;
async function answer(res: Response): Promise<{ status: number; code?: string; Message?: string }> {
  const text = await res.text();
  const body = text === "" ? {} : (JSON.parse(text) as { code?: string; Message?: string });
  return { status: res.status, ...body };
}

describe("client mistakes against the real task hub are 4xx with a code, never 500", () => {
  it("a garbage x-ms-continuation-token → 400 InvalidContinuationToken; the real one pages on", async () => {
    for (const id of ["page-a", "page-b", "page-c"]) {
      expect((await fetch(api(`orchestrators/echo/${id}`), { method: "POST", body: "1" })).status).toBe(202);
    }
    const first = await fetch(api("instances?top=2"));
    expect(first.status).toBe(200);
    const token = first.headers.get("x-ms-continuation-token");
    expect(token).toBeTruthy();
    const next = await fetch(api("instances?top=2"), { headers: { "x-ms-continuation-token": token ?? "" } });
    expect(next.status).toBe(200);

    for (const garbage of ["garbage", "{}", '{"rid":"AAAAAQAAAAI=","offset":2}', "[]", "null"]) {
      const res = await answer(
        await fetch(api("instances?top=2"), { headers: { "x-ms-continuation-token": garbage } }),
      );
      expect(res).toMatchObject({ status: 400, code: "InvalidContinuationToken" });
      expect(res.Message).toMatch(/not a continuation token/);
    }
    expect(hubFailures).toEqual([]);
  });

  it("a 5 MB input → 413 PayloadTooLarge naming the limit; nothing is started", async () => {
    const body = JSON.stringify({ blob: "x".repeat(5 * 1024 * 1024) });
    const res = await answer(await fetch(api("orchestrators/echo/big-input"), { method: "POST", body }));
    expect(res).toMatchObject({ status: 413, code: "PayloadTooLarge" });
    expect(res.Message).toBe(
      `The orchestration input is ${Buffer.byteLength(body)} bytes; the task hub stores at most ${LIMIT} (DURABLE_MAX_PAYLOAD_BYTES).`,
    );
    expect(await hub.getStatus("big-input")).toBeUndefined();
  });

  it("a 5,000-deep input → 400 PayloadTooDeep; the same at the depth limit runs to Completed", async () => {
    const deep = `${"[".repeat(5_000)}${"]".repeat(5_000)}`;
    const res = await answer(
      await fetch(api("orchestrators/echo/deep-input"), { method: "POST", body: deep }),
    );
    expect(res).toMatchObject({ status: 400, code: "PayloadTooDeep" });
    expect(res.Message).toMatch(`5000 deep; the task hub allows at most ${DURABLE_LIMITS.payloadDepth}`);
    expect(await hub.getStatus("deep-input")).toBeUndefined();

    const d = DURABLE_LIMITS.payloadDepth;
    const atLimit = `${"[".repeat(d)}${"]".repeat(d)}`;
    const done = await fetch(api("orchestrators/echo/deep-ok?timeout=60"), { method: "POST", body: atLimit });
    expect(done.status).toBe(200);
    expect(JSON.stringify(await done.json())).toBe(atLimit);
  });

  it("a huge or malformed top, and bad dates → 400 InvalidParameter", async () => {
    expect((await fetch(api(`instances?top=${MAX_LIST_PAGE_SIZE}`))).status).toBe(200);
    for (const query of [
      `top=${MAX_LIST_PAGE_SIZE + 1}`,
      "top=2147483648",
      "top=99999999999999999999",
      "top=-5",
      "createdTimeFrom=yesterday",
      "createdTimeTo=2026-13-45T99:00:00Z",
      "createdTimeFrom=%2B275760-09-13T00:00:00.001Z",
    ]) {
      const res = await answer(await fetch(api(`instances?${query}`)));
      expect({ query, ...res }).toMatchObject({ query, status: 400, code: "InvalidParameter" });
    }
    const purge = await answer(
      await fetch(api("instances?createdTimeFrom=not-a-date"), { method: "DELETE" }),
    );
    expect(purge).toMatchObject({ status: 400, code: "InvalidParameter" });
    expect(hubFailures).toEqual([]);
  });
});

// ------------------------------------------------------------------ fuzz

const oddChar = fc.oneof(
  fc.constantFrom("\u0000", "\n", "\u202e", "\ufeff", "\uffff", "😀", "é", "/", "%", "?", "#", "\\", " "),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
);
const hostile = fc.oneof(
  fc.string({ unit: fc.oneof(oddChar, fc.string({ minLength: 1, maxLength: 1 })), maxLength: 12 }),
  fc.constantFrom("", "..", "%ZZ", "%E0%A4%A", "x".repeat(101), "a".repeat(5_000)),
);
const IDS = ["fz-1", "fz-2", "page-a", "deep-ok", "nobody"];
const segment = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("orchestrators", "instances", "Instances", "entities") },
  { weight: 3, arbitrary: fc.constantFrom("echo", "other", ...IDS) },
  {
    weight: 3,
    arbitrary: fc.constantFrom("raiseEvent", "terminate", "suspend", "resume", "restart", "rewind", "Go"),
  },
  { weight: 2, arbitrary: hostile.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, "?"))) },
  { weight: 1, arbitrary: fc.constantFrom("%ZZ", "%E0%A4%A", "%2F", "%00", "") },
);
/** An entity name: mostly the one that exists (any case), sometimes a hostile one. */
const entityName = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("counter", "Counter", "other") },
  { weight: 1, arbitrary: segment },
);
/** An id: mostly one that exists (or did), sometimes a hostile one (percent-encoded as a client would). */
const id = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...IDS) }, { weight: 1, arbitrary: segment });
const OPERATIONS = ["terminate", "suspend", "resume", "restart", "rewind", "Terminate"];
/** Mostly the method the route wants, so that most requests reach the task hub. */
const method = (usual: string) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant(usual) },
    { weight: 1, arbitrary: fc.constantFrom("GET", "POST", "DELETE", "PUT", "HEAD", "PATCH", "get", "BREW") },
  );
const route = fc.oneof(
  fc
    .record({ method: method("POST"), path: fc.tuple(fc.constantFrom("echo", "other"), fc.option(id)) })
    .map((r) => ({
      method: r.method,
      path: `orchestrators/${r.path[0]}${r.path[1] === null ? "" : `/${r.path[1]}`}`,
    })),
  fc.record({ method: method("GET"), id }).map((r) => ({ method: r.method, path: `instances/${r.id}` })),
  fc.record({ method: method("GET") }).map((r) => ({ method: r.method, path: "instances" })),
  fc.record({ method: method("DELETE"), id }).map((r) => ({ method: r.method, path: `instances/${r.id}` })),
  fc.record({ method: method("DELETE") }).map((r) => ({ method: r.method, path: "instances" })),
  fc
    .record({ method: method("POST"), id, operation: fc.constantFrom(...OPERATIONS) })
    .map((r) => ({ method: r.method, path: `instances/${r.id}/${r.operation}` })),
  fc
    .record({ method: method("POST"), id, event: fc.oneof(fc.constant("Go"), segment) })
    .map((r) => ({ method: r.method, path: `instances/${r.id}/raiseEvent/${r.event}` })),
  fc
    .record({ method: method("GET"), name: fc.option(entityName) })
    .map((r) => ({ method: r.method, path: `entities${r.name === null ? "" : `/${r.name}`}` })),
  fc
    .record({
      method: fc.constantFrom("GET", "POST", "DELETE", "PUT"),
      name: entityName,
      key: fc.oneof(fc.constantFrom("k1", "$", "a b"), segment),
    })
    .map((r) => ({ method: r.method, path: `entities/${r.name}/${r.key}` })),
  fc
    .record({ method: method("GET"), parts: fc.array(segment, { maxLength: 5 }) })
    .map((r) => ({ method: r.method, path: r.parts.join("/") })),
);

/** Query values per parameter: mostly valid, some hostile; waits stay short. */
const QUERY: Record<string, fc.Arbitrary<string>> = {
  timeout: fc.constantFrom("0", "0.05", "0.2", "soon", "-1", "3601", "1e9", "NaN"),
  pollingInterval: fc.constantFrom("1", "0", "x"),
  top: fc.constantFrom("1", "2", "1000", "1001", "0", "-1", "1e3", "9".repeat(30), " 5"),
  createdTimeFrom: fc.oneof(
    fc.constantFrom("2020-01-01T00:00:00Z", "yesterday", "0", "+275760-09-13T00:00:00.001Z"),
    hostile,
  ),
  createdTimeTo: fc.oneof(fc.constantFrom("2100-01-01T00:00:00Z", "2026-13-45"), hostile),
  runtimeStatus: fc.oneof(fc.constantFrom("Completed", "Running,Failed", "Canceled", "Runing", ""), hostile),
  instanceIdPrefix: fc.oneof(fc.constantFrom("fz", "page"), hostile),
  showInput: fc.constantFrom("true", "FALSE", "maybe"),
  showHistory: fc.constantFrom("true", "false", "1"),
  showHistoryOutput: fc.constantFrom("true", "x"),
  returnInternalServerErrorOnFailure: fc.constantFrom("true", "false"),
  restartWithNewInstanceId: fc.constantFrom("true", "false", "no"),
  reason: fc.oneof(hostile, fc.constantFrom("x".repeat(LIMIT), "stop")),
  taskHub: fc.constantFrom("ApiHub", "apihub", "OtherHub", ""),
  fetchState: fc.constantFrom("true", "False", "yes", ""),
  lastOperationTimeFrom: fc.oneof(fc.constantFrom("2020-01-01T00:00:00Z", "yesterday", "0"), hostile),
  lastOperationTimeTo: fc.oneof(fc.constantFrom("2100-01-01T00:00:00Z", "2026-02-30"), hostile),
  op: fc.oneof(fc.constantFrom("add", "delete", ""), hostile),
  connection: fc.constantFrom("Storage", ""),
};
const query = fc
  .array(fc.oneof(fc.constantFrom(...Object.keys(QUERY)), hostile), { maxLength: 4 })
  .chain((keys) =>
    fc.tuple(...keys.map((key) => (QUERY[key] ?? hostile).map((value): [string, string] => [key, value]))),
  )
  .map((pairs) => new URLSearchParams(pairs));

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const body = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v))) },
  { weight: 1, arbitrary: fc.constantFrom(64, 65, 5_000).map((d) => Buffer.from(nested(d))) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: -2, max: 2 }).map((d) => Buffer.from(`"${"x".repeat(LIMIT - 2 + d)}"`)),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.constantFrom("", "{oops", " ", "\ufeff{}").map((s) => Buffer.from(s)) },
);
const request = fc.record({
  route,
  query,
  body,
  contentType: fc.constantFrom(
    undefined,
    "application/json",
    "text/plain",
    "application/json; charset=utf-8",
  ),
  token: fc.option(
    fc.oneof(
      fc.constantFrom("garbage", "{}", "x".repeat(20_000)),
      fc.stringMatching(/^[\x20-\x7e\xa0-\xff]{1,40}$/),
    ),
    {
      nil: undefined,
    },
  ),
});

describe("fuzzed requests to the durable API over the real task hub", () => {
  it(`${RUNS} random requests: never a 5xx (but 501 and an asked-for Failed 500), no hub failure logged`, async () => {
    for (const id of ["fz-1", "fz-2"]) await hub.startNew("echo", { instanceId: id, input: '"seed"' });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = { host: "127.0.0.1" };
        if (r.contentType) headers["content-type"] = r.contentType;
        if (r.token !== undefined) headers["x-ms-continuation-token"] = r.token;
        const { method, path } = r.route;
        const out = await handler({
          method,
          path: `/runtime/webhooks/durabletask/${path}`,
          query: r.query,
          headers,
          body: r.body,
        });
        expect(out).toBeDefined();
        const status = out?.status ?? 0;
        const asked = r.query.get("returnInternalServerErrorOnFailure") === "true";
        const failedOnAsk =
          status === 500 &&
          asked &&
          (JSON.parse(out?.body ?? "{}") as { runtimeStatus?: string }).runtimeStatus === "Failed";
        if (status >= 500 && status !== 501 && !failedOnAsk) {
          throw new Error(`${method} ${path}?${r.query} → ${status} ${out?.body.slice(0, 300)}`);
        }
        expect(hubFailures).toEqual([]);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });
});

describe("the dev host's durable API takes its limit from DURABLE_MAX_PAYLOAD_BYTES", () => {
  it("an app setting of 1024: 1,024 bytes start, 1,025 are 413 naming 1024", async () => {
    const host = await startInProcessDevHost({
      appDir: fileURLToPath(new URL("../fixtures/app-durable", import.meta.url)),
      dataDirPrefix: "durable-api-limit-",
      env: { DURABLE_MAX_PAYLOAD_BYTES: "1024" },
    });
    try {
      const api = `${host.started.host.baseUrl}/runtime/webhooks/durabletask/orchestrators/fanOutFanIn`;
      const json = { "content-type": "application/json" };
      const at = await fetch(`${api}/at-limit`, {
        method: "POST",
        headers: json,
        body: JSON.stringify(["x".repeat(1_020)]),
      });
      expect(at.status).toBe(202);
      const over = await answer(
        await fetch(`${api}/over-limit`, {
          method: "POST",
          headers: json,
          body: JSON.stringify(["x".repeat(1_021)]),
        }),
      );
      expect(over).toEqual({
        status: 413,
        code: "PayloadTooLarge",
        Message:
          "The orchestration input is 1025 bytes; the task hub stores at most 1024 (DURABLE_MAX_PAYLOAD_BYTES).",
      });
    } finally {
      await host.stop();
    }
  });
});
