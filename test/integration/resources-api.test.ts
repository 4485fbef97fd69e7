import { HttpRequest, type HttpResponseInit, InvocationContext } from "@azure/functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  deleteResource,
  getOperation,
  getResource,
  listResources,
  patchResource,
  putResource,
} from "../../functions/resources.js";
import { OccRetryDefaults } from "../../packages/core/src/cosmos/index.js";
import { ensureContainers } from "../../src/shared/containers.js";
import {
  appContext,
  createAppContext,
  encodeSkipToken,
  MAX_BODY_DEPTH,
  MAX_SKIP_TOKEN_CHARS,
  type OperationDocument,
  ResourceApi,
  type ResourceDocument,
  subscriptionLockName,
} from "../../src/shared/resources/index.js";
import { loadSettings } from "../../src/shared/settings.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

// The real handlers of functions/resources.ts, called as the host calls them (HttpRequest + InvocationContext in the
// library's test mode), against the emulator through the unmodified SDK.

let t: TestEmulator;
const BASE = "http://localhost:7071/api";

beforeAll(async () => {
  t = await startTestEmulator();
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
  await ensureContainers(t.client);
});
afterAll(async () => {
  delete process.env.COSMOS_CONNECTION;
  await t?.close();
});

type Handler = (req: HttpRequest, ctx: InvocationContext) => Promise<HttpResponseInit>;
interface Call {
  method: string;
  sub: string;
  name?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  query?: string;
}

async function call(handler: Handler, c: Call) {
  const path =
    c.name === undefined
      ? `/subscriptions/${c.sub}/resources`
      : `/subscriptions/${c.sub}/resources/${c.name}`;
  const raw = c.rawBody ?? (c.body === undefined ? undefined : JSON.stringify(c.body));
  const req = new HttpRequest({
    method: c.method,
    url: `${BASE}${path}${c.query ?? ""}`,
    headers: { ...(raw !== undefined ? { "content-type": "application/json" } : {}), ...c.headers },
    params: { subscriptionId: c.sub, ...(c.name === undefined ? {} : { resourceName: c.name }) },
    ...(raw !== undefined ? { body: { string: raw } } : {}),
  });
  const res = await handler(req, new InvocationContext({ functionName: "test" }));
  const headers = (res.headers ?? {}) as Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
  return { status: res.status ?? 200, headers, body: res.jsonBody as any };
}

const put = (sub: string, name: string, body: unknown, headers?: Record<string, string>) =>
  call(putResource, { method: "PUT", sub, name, body, headers });
const get = (sub: string, name: string) => call(getResource, { method: "GET", sub, name });

async function operation(url: string) {
  const [, subscriptionId, operationId] =
    /\/subscriptions\/([^/]+)\/operations\/([^/]+)$/.exec(new URL(url).pathname) ?? [];
  const res = await getOperation(
    new HttpRequest({ method: "GET", url, params: { subscriptionId, operationId } }),
    new InvocationContext(),
  );
  // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
  return { status: res.status ?? 200, body: res.jsonBody as any };
}

/** Every stored item of a subscription (resources and their operations), to prove a refused request wrote nothing. */
async function storedCount(sub: string): Promise<number> {
  const { containers } = appContext();
  const q = {
    query: "SELECT VALUE COUNT(1) FROM c WHERE c.subscriptionId = @s",
    parameters: [{ name: "@s", value: sub }],
  };
  const [n] = (await containers.resources.items.query<number>(q).fetchAll()).resources;
  return n ?? 0;
}

const body = (extra: Record<string, unknown> = {}) => ({
  properties: { sku: "basic", ...extra },
  tags: { env: "test" },
});

describe("PUT", () => {
  it("creates: 201, ETag, Azure-AsyncOperation and Location naming an Accepted operation", async () => {
    const res = await put("sub-create", "alpha", body({ nodeCount: 3 }));
    expect(res.status).toBe(201);
    expect(res.headers.ETag).toMatch(/.+/);
    expect(res.headers["Azure-AsyncOperation"]).toMatch(
      /^http:\/\/localhost:7071\/api\/subscriptions\/sub-create\/operations\/[0-9a-f-]{36}$/,
    );
    expect(res.headers.Location).toBe(res.headers["Azure-AsyncOperation"]);
    expect(res.body).toMatchObject({
      id: "/subscriptions/sub-create/resources/alpha",
      name: "alpha",
      properties: { sku: "basic", nodeCount: 3, provisioningState: "Accepted" },
      tags: { env: "test" },
    });
    const op = await operation(res.headers["Azure-AsyncOperation"]);
    expect(op.status).toBe(200);
    expect(op.body).toMatchObject({ status: "Accepted", operation: "Create", resourceId: res.body.id });
    const read = await get("sub-create", "ALPHA"); // names are case-insensitive
    expect(read.status).toBe(200);
    expect(read.headers.ETag).toBe(res.headers.ETag);
  });

  it("replaces: 200, a new ETag and a Replace operation", async () => {
    const first = await put("sub-replace", "beta", body());
    const second = await put("sub-replace", "beta", body({ sku: "premium" }));
    expect(second.status).toBe(200);
    expect(second.headers.ETag).not.toBe(first.headers.ETag);
    expect(second.body.properties.sku).toBe("premium");
    expect((await operation(second.headers["Azure-AsyncOperation"])).body.operation).toBe("Replace");
  });

  it("If-Match: a stale ETag is 412 and changes nothing; the current one succeeds", async () => {
    const first = await put("sub-ifmatch", "gamma", body());
    const second = await put("sub-ifmatch", "gamma", body({ nodeCount: 2 }));
    const before = await storedCount("sub-ifmatch");
    const stale = await put("sub-ifmatch", "gamma", body({ nodeCount: 9 }), {
      "If-Match": first.headers.ETag,
    });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe("PreconditionFailed");
    expect(await storedCount("sub-ifmatch")).toBe(before);
    expect((await get("sub-ifmatch", "gamma")).body.properties.nodeCount).toBe(2);
    const fresh = await put("sub-ifmatch", "gamma", body({ nodeCount: 9 }), {
      "If-Match": second.headers.ETag,
    });
    expect(fresh.status).toBe(200);
    const missing = await put("sub-ifmatch", "nope", body(), { "If-Match": "*" });
    expect(missing.status).toBe(412);
  });

  it("If-None-Match: * creates only: 412 on an existing resource", async () => {
    expect((await put("sub-inm", "delta", body(), { "If-None-Match": "*" })).status).toBe(201);
    const again = await put("sub-inm", "delta", body({ sku: "standard" }), { "If-None-Match": "*" });
    expect(again.status).toBe(412);
    expect((await get("sub-inm", "delta")).body.properties.sku).toBe("basic");
  });

  it("a held subscription lock answers 409 with Retry-After and writes nothing", async () => {
    const lock = await appContext().locks.tryAcquire(subscriptionLockName("sub-held"));
    try {
      const res = await put("sub-held", "epsilon", body());
      expect(res.status).toBe(409);
      expect(Number(res.headers["Retry-After"])).toBeGreaterThanOrEqual(1);
      expect(res.body.error.code).toBe("Conflict");
      expect(await storedCount("sub-held")).toBe(0);
    } finally {
      await lock.release();
    }
    expect((await put("sub-held", "epsilon", body())).status).toBe(201);
  });
});

describe("LOCK_CONTENTION_STATUS=503", () => {
  it("answers a held lock with 503 LockContention + Retry-After (for Azure SDK clients, which retry 5xx)", async () => {
    const api = new ResourceApi(createAppContext(t.client, loadSettings({ LOCK_CONTENTION_STATUS: "503" })));
    const lock = await appContext().locks.tryAcquire(subscriptionLockName("sub-503"));
    try {
      const res = await api.put({
        url: `${BASE}/subscriptions/sub-503/resources/kappa`,
        header: () => null,
        text: async () => JSON.stringify(body()),
        params: { subscriptionId: "sub-503", resourceName: "kappa" },
      });
      expect(res.status).toBe(503);
      expect(res.headers?.["Retry-After"]).toMatch(/^\d+$/);
      expect((res.body as { error: { code: string } }).error.code).toBe("LockContention");
    } finally {
      await lock.release();
    }
  });
});

describe("bad input → 400 with a code, nothing written", () => {
  const cases: [string, Partial<Call>, string][] = [
    ["malformed JSON", { rawBody: '{"properties": {' }, "InvalidJson"],
    ["an empty body", { rawBody: "" }, "MissingBody"],
    ["a JSON array", { rawBody: "[]" }, "InvalidBody"],
    ["a wrong type", { body: { properties: { sku: "basic", nodeCount: "3" } } }, "InvalidBody"],
    ["an unknown sku", { body: { properties: { sku: "huge" } } }, "InvalidBody"],
    ["no properties", { body: { tags: {} } }, "InvalidBody"],
    ["an unknown top-level field", { body: { ...body(), location: "x" } }, "UnknownField"],
    ["an unknown property", { body: { properties: { sku: "basic", color: "red" } } }, "UnknownField"],
    ["a non-string tag", { body: { properties: { sku: "basic" }, tags: { a: 1 } } }, "InvalidBody"],
    ["an invalid name", { name: "bad name!" }, "InvalidResourceName"],
    ["a name ending with '.'", { name: "x." }, "InvalidResourceName"],
    ["a too long name", { name: "n".repeat(64) }, "InvalidResourceName"],
    ["an invalid subscription", { sub: "sub_bad" }, "InvalidSubscriptionId"],
    ["an oversize body", { rawBody: JSON.stringify({ ...body(), pad: "x".repeat(70_000) }) }, "BodyTooLarge"],
    ["If-None-Match other than *", { body: body(), headers: { "If-None-Match": '"abc"' } }, "InvalidHeader"],
  ];
  it.each(cases)("%s", async (_label, c, code) => {
    const sub = c.sub ?? "sub-bad";
    const res = await call(putResource, { method: "PUT", sub, name: "zeta", body: body(), ...c });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message).toEqual(expect.any(String));
    if (sub === "sub-bad") expect(await storedCount(sub)).toBe(0);
  });

  it("a declared Content-Length over the limit is refused before the body is read", async () => {
    const res = await call(putResource, {
      method: "PUT",
      sub: "sub-bad",
      name: "zeta",
      body: body(),
      headers: { "content-length": "10000000" },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("BodyTooLarge");
  });
});

describe("reads", () => {
  it("bad ids are 400s, missing ones 404s with codes", async () => {
    const badOp = await operation(`${BASE}/subscriptions/sub-reads/operations/not-a-uuid`);
    expect(badOp.status).toBe(400);
    expect(badOp.body.error.code).toBe("InvalidOperationId");
    const noOp = await operation(
      `${BASE}/subscriptions/sub-reads/operations/00000000-0000-4000-8000-000000000000`,
    );
    expect(noOp.status).toBe(404);
    expect(noOp.body.error.code).toBe("OperationNotFound");
    const badName = await get("sub-reads", "a/b");
    expect(badName.body.error.code).toBe("InvalidResourceName");
    const missing = await get("sub-reads", "absent");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("ResourceNotFound");
  });
});

describe("concurrency", () => {
  it("20 concurrent PUTs on one subscription: winners serialized by the lock, the rest 409 + Retry-After, no lost or mixed write", async () => {
    const sub = "sub-race";
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        put(sub, "hot", {
          properties: { sku: "standard", nodeCount: i + 1, description: `writer-${i}` },
          tags: { writer: String(i) },
        }),
      ),
    );
    const winners = results.filter((r) => r.status === 201 || r.status === 200);
    const losers = results.filter((r) => r.status === 409);
    expect(winners.length + losers.length).toBe(20);
    expect(winners.length).toBeGreaterThanOrEqual(1);
    expect(losers.length).toBeGreaterThanOrEqual(1);
    for (const l of losers) expect(Number(l.headers["Retry-After"])).toBeGreaterThanOrEqual(1);
    expect(winners.filter((w) => w.status === 201)).toHaveLength(1); // exactly one created it
    // Every winner's operation exists; losers left none behind.
    const ops = await appContext()
      .containers.resources.items.query<string>({
        query: "SELECT VALUE c.operationId FROM c WHERE c.subscriptionId = @s AND c.docType = 'operation'",
        parameters: [{ name: "@s", value: sub }],
      })
      .fetchAll();
    const winnerOps = winners.map((w) => w.headers["Azure-AsyncOperation"].split("/").pop());
    expect(new Set(ops.resources)).toEqual(new Set(winnerOps));
    // The stored resource is one winner's whole body, with that winner's operation.
    const final = await get(sub, "hot");
    const i = Number(final.body.tags.writer);
    expect(final.body.properties).toMatchObject({ nodeCount: i + 1, description: `writer-${i}` });
    const last = winners.find((w) => w.body.tags.writer === String(i));
    expect(last?.headers.ETag).toBe(final.headers.ETag);
  });
});

describe("GET list", () => {
  it("pages with $top and nextLink until every resource was listed once", async () => {
    const sub = "sub-list";
    for (let i = 0; i < 7; i++) expect((await put(sub, `item-${i}`, body())).status).toBe(201);
    await put("sub-other", "item-x", body());
    const names: string[] = [];
    let query: string | undefined = "?$top=3";
    let pages = 0;
    while (query !== undefined) {
      const res = await call(listResources, { method: "GET", sub, query });
      expect(res.status).toBe(200);
      expect(res.body.value.length).toBeLessThanOrEqual(3);
      names.push(...res.body.value.map((r: { name: string }) => r.name));
      pages++;
      query = res.body.nextLink ? new URL(res.body.nextLink).search : undefined;
    }
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(names.sort()).toEqual(Array.from({ length: 7 }, (_, i) => `item-${i}`));
  });

  it("refuses a bad $top or $skipToken with 400", async () => {
    const top = await call(listResources, { method: "GET", sub: "sub-list", query: "?$top=0" });
    expect(top.status).toBe(400);
    expect(top.body.error.code).toBe("InvalidTop");
    const skip = await call(listResources, {
      method: "GET",
      sub: "sub-list",
      query: "?$skipToken=bm90LWEtdG9rZW4",
    });
    expect(skip.status).toBe(400);
    expect(skip.body.error.code).toBe("InvalidSkipToken");
  });

  it("refuses every kind of garbage $skipToken with 400 InvalidSkipToken (no 500), and another subscription's", async () => {
    const sub = "sub-skip";
    for (let i = 0; i < 3; i++) expect((await put(sub, `s-${i}`, body())).status).toBe(201);
    const first = await call(listResources, { method: "GET", sub: "sub-list", query: "?$top=2" });
    const foreign = new URL(first.body.nextLink).searchParams.get("$skipToken") as string;
    const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url");
    const tokens: [string, string][] = [
      ["random base64url", "q7Zp0-Xw_9aLmN3bVc8sRt"],
      ["base64 of non-JSON", b64("not a token at all")],
      ["JSON of the wrong shape", b64('{"token":"-RID:~AAAA#RT:1","range":{"min":"","max":"FF"}}')],
      ["another subscription's token", foreign],
      // Decoded to control characters, these made Node refuse the x-ms-continuation header: 500 before the fix.
      ["bytes that are no header", Buffer.from([0, 1, 2, 0xff, 0x0a]).toString("base64url")],
      ["a NUL inside a well-formed token", encodeSkipToken(sub, "+RID:~\u0000")],
      // Past the emulator's header limit its error answer crashed the SDK (500 before the fix).
      ["huge", b64("x".repeat(20_000))],
      ["just over the length limit", "A".repeat(MAX_SKIP_TOKEN_CHARS + 1)],
      ["a well-formed envelope the database refuses", encodeSkipToken(sub, "not-a-continuation")],
    ];
    for (const [label, token] of tokens) {
      const res = await call(listResources, { method: "GET", sub, query: `?$skipToken=${token}` });
      expect({ label, status: res.status, code: res.body.error?.code }).toEqual({
        label,
        status: 400,
        code: "InvalidSkipToken",
      });
    }
  });
});

describe("DELETE", () => {
  it("marks the resource Deleting with a Delete operation (202); again → the same operation; missing → 204", async () => {
    const sub = "sub-delete";
    await put(sub, "eta", body());
    const del = await call(deleteResource, { method: "DELETE", sub, name: "eta" });
    expect(del.status).toBe(202);
    const op = await operation(del.headers["Azure-AsyncOperation"]);
    expect(op.body).toMatchObject({ operation: "Delete", status: "Accepted" });
    expect((await get(sub, "eta")).body.properties.provisioningState).toBe("Deleting");
    const again = await call(deleteResource, { method: "DELETE", sub, name: "eta" });
    expect(again.status).toBe(202);
    expect(again.headers["Azure-AsyncOperation"]).toBe(del.headers["Azure-AsyncOperation"]);
    const replace = await put(sub, "eta", body());
    expect(replace.status).toBe(409);
    expect(replace.body.error.code).toBe("ResourceBeingDeleted");
    expect((await call(deleteResource, { method: "DELETE", sub, name: "missing" })).status).toBe(204);
  });
});

describe("body depth", () => {
  /** A PATCH body whose description is an object chain making the whole body `depth` levels deep. */
  const deepPatch = (depth: number) =>
    `{"properties":{"description":${'{"a":'.repeat(depth - 2)}1${"}".repeat(depth - 2)}}}`;

  it("refuses a merge patch nested 9,000 deep (under the size limit) with 400 BodyTooDeep, not a stack overflow", async () => {
    const sub = "sub-deep";
    const created = await put(sub, "abyss", body());
    const before = await storedCount(sub);
    const rawBody = deepPatch(9_000);
    expect(rawBody.length).toBeLessThan(65_536);
    const res = await call(patchResource, { method: "PATCH", sub, name: "abyss", rawBody });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("BodyTooDeep");
    expect(await storedCount(sub)).toBe(before);
    expect((await get(sub, "abyss")).headers.ETag).toBe(created.headers.ETag);
  });

  it(`at the limit (${MAX_BODY_DEPTH}) the body is parsed and merged (the field error names it); one past it is BodyTooDeep`, async () => {
    const sub = "sub-deep";
    const atLimit = await call(patchResource, {
      method: "PATCH",
      sub,
      name: "abyss",
      rawBody: deepPatch(MAX_BODY_DEPTH),
    });
    expect(atLimit.status).toBe(400);
    expect(atLimit.body.error.code).toBe("InvalidBody");
    expect(atLimit.body.error.message).toMatch(/properties\.description/);
    const past = await call(patchResource, {
      method: "PATCH",
      sub,
      name: "abyss",
      rawBody: deepPatch(MAX_BODY_DEPTH + 1),
    });
    expect(past.status).toBe(400);
    expect(past.body.error.code).toBe("BodyTooDeep");
    const putPast = await call(putResource, {
      method: "PUT",
      sub,
      name: "abyss2",
      rawBody: deepPatch(MAX_BODY_DEPTH + 1),
    });
    expect(putPast.body.error.code).toBe("BodyTooDeep");
  });
});

describe("PATCH", () => {
  it("applies a JSON merge patch (null removes) and answers 202 with an Update operation", async () => {
    const sub = "sub-patch";
    await put(sub, "theta", { properties: { sku: "basic", description: "d" }, tags: { a: "1", b: "2" } });
    const res = await call(patchResource, {
      method: "PATCH",
      sub,
      name: "theta",
      body: { properties: { nodeCount: 5, description: null }, tags: { b: null, c: "3" } },
    });
    expect(res.status).toBe(202);
    expect(res.body.properties).toEqual({ sku: "basic", nodeCount: 5, provisioningState: "Accepted" });
    expect(res.body.tags).toEqual({ a: "1", c: "3" });
    expect((await operation(res.headers["Azure-AsyncOperation"])).body.operation).toBe("Update");
  });

  it("refuses a patch that leaves an invalid resource, or names an unknown field; 404 for a missing resource", async () => {
    const sub = "sub-patch2";
    await put(sub, "iota", body());
    const before = await storedCount(sub);
    const noSku = await call(patchResource, {
      method: "PATCH",
      sub,
      name: "iota",
      body: { properties: { sku: null } },
    });
    expect(noSku.status).toBe(400);
    expect(noSku.body.error.code).toBe("InvalidBody");
    const unknown = await call(patchResource, {
      method: "PATCH",
      sub,
      name: "iota",
      body: { properties: { x: 1 } },
    });
    expect(unknown.body.error.code).toBe("UnknownField");
    expect(await storedCount(sub)).toBe(before);
    const missing = await call(patchResource, { method: "PATCH", sub, name: "nope", body: { tags: {} } });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("ResourceNotFound");
  });
});

describe("every accepted operation has an owner that ends it", () => {
  it("the write that supersedes an unfinished operation cancels it in the same batch (PUT → PATCH, PATCH → DELETE)", async () => {
    const sub = "sub-supersede";
    const created = await put(sub, "kappa", body());
    const patched = await call(patchResource, {
      method: "PATCH",
      sub,
      name: "kappa",
      body: { properties: { nodeCount: 2 } },
    });
    expect(patched.status).toBe(202);
    // No trigger ran: the PUT's operation was canceled by the PATCH's own write.
    const first = await operation(created.headers["Azure-AsyncOperation"]);
    expect(first.body).toMatchObject({
      status: "Canceled",
      operation: "Create",
      error: { code: "Superseded" },
    });
    expect(first.body.error.message).toContain(patched.headers["Azure-AsyncOperation"].split("/").pop());
    expect(first.body.endTime).toBeDefined();
    const deleted = await call(deleteResource, { method: "DELETE", sub, name: "kappa" });
    expect(deleted.status).toBe(202);
    expect((await operation(patched.headers["Azure-AsyncOperation"])).body.status).toBe("Canceled");
    expect((await operation(deleted.headers["Azure-AsyncOperation"])).body).toMatchObject({
      status: "Accepted",
      operation: "Delete",
    });
    // Exactly one unfinished operation is left: the one the resource names.
    const pending = await appContext()
      .containers.resources.items.query<string>({
        query:
          "SELECT VALUE c.operationId FROM c WHERE c.subscriptionId = @s AND c.docType = 'operation' AND c.status IN ('Accepted', 'Running')",
        parameters: [{ name: "@s", value: sub }],
      })
      .fetchAll();
    expect(pending.resources).toEqual([deleted.headers["Azure-AsyncOperation"].split("/").pop()]);
  });

  it("a finished operation is not touched by the next write", async () => {
    const sub = "sub-supersede2";
    const created = await put(sub, "lambda", body());
    const opId = created.headers["Azure-AsyncOperation"].split("/").pop() as string;
    const ops = appContext().containers.resources;
    const { resource: op } = await ops.item(`op:${opId}`, sub).read<OperationDocument>();
    await ops
      .item(`op:${opId}`, sub)
      .replace({ ...op, status: "Succeeded", endTime: "2026-01-01T00:00:00Z" });
    const { resource: r } = await ops.item("lambda", sub).read<ResourceDocument>();
    await ops.item("lambda", sub).replace({ ...r, provisioningState: "Succeeded" });
    expect((await put(sub, "lambda", body({ nodeCount: 4 }))).status).toBe(200);
    expect((await operation(created.headers["Azure-AsyncOperation"])).body).toMatchObject({
      status: "Succeeded",
      endTime: "2026-01-01T00:00:00Z",
    });
  });

  it("a write refused by the batch (the resource changed under it, every attempt) leaves no operation behind", async () => {
    const sub = "sub-refused";
    await put(sub, "mu", body());
    const before = await storedCount(sub);
    const ops = appContext().containers.resources;
    // Every read of the resource is followed by a change before the batch commits: the batch's If-Match fails.
    const items = ops.items;
    const original = items.batch.bind(items);
    let batches = 0;
    items.batch = async (...args: Parameters<typeof items.batch>) => {
      batches++;
      const { resource } = await ops.item("mu", sub).read<ResourceDocument>();
      await ops.item("mu", sub).replace({ ...resource, lastModifiedAt: new Date().toISOString() });
      return original(...args);
    };
    try {
      const res = await put(sub, "mu", body({ nodeCount: 9 }));
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("Conflict");
    } finally {
      items.batch = original;
    }
    expect(batches).toBe(OccRetryDefaults.maxAttempts);
    expect(await storedCount(sub)).toBe(before);
    expect((await get(sub, "mu")).body.properties.nodeCount).toBe(1);
  });
});
