import { createHmac } from "node:crypto";
import type { ErrorResponse } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MasterKeyAuth } from "../../packages/emulator/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

let t: TestEmulator;
let dbId: string;
let collId: string;

beforeAll(async () => {
  t = await startTestEmulator();
  dbId = uniqueName("auth");
  collId = uniqueName("c");
  const { database } = await t.client.databases.createIfNotExists({ id: dbId });
  const { container } = await database.containers.createIfNotExists({ id: collId, partitionKey: "/pk" });
  await container.items.create({ id: "doc1", pk: "a" });
});
afterAll(async () => {
  await t.close();
});

interface RawOptions {
  /** What to sign; defaults to the request's own verb, type, id and date. */
  sign?: { verb?: string; type?: string; id?: string; date?: string; key?: string };
  date?: string;
  authorization?: string | null;
  headers?: Record<string, string>;
  body?: unknown;
}

/** A hand-built request: signed with MasterKeyAuth.sign over `verb\ntype\nid\ndate\n\n` unless told otherwise. */
async function request(method: string, path: string, type: string, id: string, options: RawOptions = {}) {
  const date = options.date ?? new Date().toUTCString();
  const s = options.sign ?? {};
  const sig = new MasterKeyAuth(s.key ?? t.emulator.key).sign(
    s.verb ?? method,
    s.type ?? type,
    s.id ?? id,
    s.date ?? date,
  );
  const headers: Record<string, string> = {
    "x-ms-date": date,
    "x-ms-version": "2020-07-15",
    ...options.headers,
  };
  if (options.authorization !== null) {
    headers.authorization = options.authorization ?? encodeURIComponent(`type=master&ver=1.0&sig=${sig}`);
  }
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(new URL(path, t.emulator.endpoint), {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
  };
}

function expectErrorBody(body: Record<string, unknown> | undefined, code: string) {
  expect(body?.code).toBe(code);
  expect(typeof body?.message).toBe("string");
  expect(String(body?.message).length).toBeGreaterThan(10);
}

const minutes = (n: number) => new Date(Date.now() + n * 60_000).toUTCString();

describe("master key auth", () => {
  it("a client with the wrong key gets 401 from the SDK", async () => {
    const wrongKey = Buffer.from("definitely not the emulator key, 64 bytes long ...............").toString(
      "base64",
    );
    const bad = t.newClient({ key: wrongKey });
    let err: ErrorResponse | undefined;
    try {
      await bad.database(dbId).read();
    } catch (e) {
      err = e as ErrorResponse;
    }
    expect(err?.code).toBe(401);
    // The same with a data-plane call.
    await expect(bad.database(dbId).container(collId).item("doc1", "a").read()).rejects.toMatchObject({
      code: 401,
    });
    // The right key still works.
    const good = await t.client.database(dbId).container(collId).item("doc1", "a").read();
    expect(good.statusCode).toBe(200);
  });

  it("a request without an authorization header → 401 with a JSON {code, message}", async () => {
    const res = await request("GET", "/dbs", "dbs", "", { authorization: null });
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    expectErrorBody(res.body, "Unauthorized");
    expect(res.body?.message).toMatch(/authorization/i);
  });

  it("a correctly signed raw request → 200 (account, database feed, database, document)", async () => {
    const account = await request("GET", "/", "", "");
    expect(account.status).toBe(200);
    expect(account.body?.writableLocations).toEqual([
      { name: expect.any(String), databaseAccountEndpoint: t.emulator.endpoint },
    ]);

    const feed = await request("GET", "/dbs", "dbs", "");
    expect(feed.status).toBe(200);
    expect(((feed.body?.Databases ?? []) as { id: string }[]).map((d) => d.id)).toContain(dbId);

    const db = await request("GET", `/dbs/${dbId}`, "dbs", `dbs/${dbId}`);
    expect(db.status).toBe(200);
    expect(db.body?.id).toBe(dbId);

    const doc = await request(
      "GET",
      `/dbs/${dbId}/colls/${collId}/docs/doc1`,
      "docs",
      `dbs/${dbId}/colls/${collId}/docs/doc1`,
      {
        headers: { "x-ms-documentdb-partitionkey": '["a"]' },
      },
    );
    expect(doc.status).toBe(200);
    expect(doc.body?.id).toBe("doc1");

    // A write: the feed is signed with the parent's id.
    const created = await request(
      "POST",
      `/dbs/${dbId}/colls/${collId}/docs`,
      "docs",
      `dbs/${dbId}/colls/${collId}`,
      {
        headers: { "x-ms-documentdb-partitionkey": '["b"]' },
        body: { id: "raw", pk: "b" },
      },
    );
    expect(created.status).toBe(201);
  });

  it("the signature is HMAC-SHA256 over `verb\\ntype\\nid\\ndate\\n\\n`, lower-cased except the resource id", async () => {
    const date = new Date().toUTCString();
    const text = `get\ndbs\ndbs/${dbId}\n${date.toLowerCase()}\n\n`;
    const sig = createHmac("sha256", Buffer.from(t.emulator.key, "base64")).update(text).digest("base64");
    expect(new MasterKeyAuth(t.emulator.key).sign("GET", "dbs", `dbs/${dbId}`, date)).toBe(sig);
    const ok = await request("GET", `/dbs/${dbId}`, "dbs", `dbs/${dbId}`, {
      date,
      authorization: encodeURIComponent(`type=master&ver=1.0&sig=${sig}`),
    });
    expect(ok.status).toBe(200);
    // The resource id is signed as it is: another case is another resource.
    const wrongCase = await request("GET", `/dbs/${dbId}`, "dbs", `dbs/${dbId}`, {
      sign: { id: `dbs/${dbId.toUpperCase()}` },
    });
    expect(wrongCase.status).toBe(401);
  });

  it("a signature for another verb, resource, date or key → 401", async () => {
    const path = `/dbs/${dbId}`;
    const id = `dbs/${dbId}`;
    for (const sign of [
      { verb: "DELETE" },
      { id: `dbs/${dbId}-other` },
      { type: "colls" },
      { date: minutes(-1) },
      { key: Buffer.from("another key").toString("base64") },
    ]) {
      const res = await request("GET", path, "dbs", id, { sign });
      expect(res.status, JSON.stringify(sign)).toBe(401);
      expectErrorBody(res.body, "Unauthorized");
    }
    // Nothing was deleted by the DELETE-signed GET.
    expect((await request("GET", path, "dbs", id)).status).toBe(200);
  });

  it("a DELETE signed for a GET is refused and deletes nothing", async () => {
    const path = `/dbs/${dbId}/colls/${collId}/docs/doc1`;
    const res = await request("DELETE", path, "docs", path.slice(1), {
      sign: { verb: "GET" },
      headers: { "x-ms-documentdb-partitionkey": '["a"]' },
    });
    expect(res.status).toBe(401);
    const still = await t.client.database(dbId).container(collId).item("doc1", "a").read();
    expect(still.statusCode).toBe(200);
  });

  it("an x-ms-date 20 minutes old (or ahead) → 403; 10 minutes of skew is accepted", async () => {
    const old = await request("GET", "/dbs", "dbs", "", { date: minutes(-20) });
    expect(old.status).toBe(403);
    expectErrorBody(old.body, "Forbidden");
    const ahead = await request("GET", "/dbs", "dbs", "", { date: minutes(20) });
    expect(ahead.status).toBe(403);
    const skewed = await request("GET", "/dbs", "dbs", "", { date: minutes(-10) });
    expect(skewed.status).toBe(200);
  });

  it("a missing or malformed x-ms-date and a non-master token type → 401", async () => {
    const noDate = await fetch(new URL("dbs", t.emulator.endpoint), {
      headers: { authorization: encodeURIComponent("type=master&ver=1.0&sig=abc") },
    });
    expect(noDate.status).toBe(401);
    expectErrorBody((await noDate.json()) as Record<string, unknown>, "Unauthorized");
    const badDate = await request("GET", "/dbs", "dbs", "", { date: "yesterday-ish" });
    expect(badDate.status).toBe(401);
    const aad = await request("GET", "/dbs", "dbs", "", {
      authorization: encodeURIComponent("type=aad&ver=1.0&sig=eyJhbGciOi.x.y"),
    });
    expect(aad.status).toBe(401);
    expectErrorBody(aad.body, "Unauthorized");
  });
});
