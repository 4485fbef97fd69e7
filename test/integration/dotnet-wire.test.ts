import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { crc32 } from "node:zlib";
import {
  ChangeFeedMode,
  ChangeFeedStartFrom,
  type Container,
  type Database,
  PartitionKeyKind,
} from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { masterKeyHeaders } from "../../packages/emulator/src/auth.js";
import { decodeRid, documentSeqOfRid } from "../../packages/emulator/src/store/rid.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

/*
 * What the .NET SDK (Microsoft.Azure.Cosmos 3.64, Gateway mode) needs from the wire that @azure/cosmos never asked
 * for — each found by `npm run test:interop` (test/interop) and checked here without .NET.
 */

let t: TestEmulator;
let db: Database;
beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("dotnet-wire") })).database;
});
afterAll(() => t.close());

const raw = (method: string, path: string, options: Parameters<typeof rawRequest>[4] = {}) =>
  rawRequest(t.emulator.endpoint, t.emulator.key, method, path, options);

async function newContainer(ranges: number, paths = ["/pk"]): Promise<{ container: Container; rid: string }> {
  const { container, resource } = await db.containers.create(
    {
      id: uniqueName("c"),
      partitionKey: {
        paths,
        version: 2,
        kind: paths.length > 1 ? PartitionKeyKind.MultiHash : PartitionKeyKind.Hash,
      },
    },
    { offerThroughput: ranges * 6_000 },
  );
  return { container, rid: resource?._rid as string };
}

/**
 * .NET's ResourceId.TryParse, for the parts the SDK relies on: a container rid's 4 bytes after the database's have
 * the high bit of their first byte set (else they name a *user*), and a document rid's last 8 bytes are a
 * little-endian key whose top nibble (the child type) is 0.
 */
function parsesAsDotnetContainer(rid: string): boolean {
  const b = decodeRid(rid);
  return b.length === 8 && (b[4] & 0x80) !== 0;
}
function parsesAsDotnetDocument(rid: string): boolean {
  const b = decodeRid(rid);
  return b.length === 16 && (b[4] & 0x80) !== 0 && b[15] >> 4 === 0;
}

describe("resource ids as .NET parses them", () => {
  it("container and document rids have the layout .NET's ResourceId reads, and document keys grow", async () => {
    const { container, rid } = await newContainer(1);
    expect(parsesAsDotnetContainer(rid)).toBe(true);
    const rids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const { resource } = await container.items.create({ id: `d${i}`, pk: "p" });
      rids.push(resource?._rid as string);
    }
    expect(rids.every(parsesAsDotnetDocument)).toBe(true);
    expect(rids.every((r) => decodeRid(r).subarray(0, 8).equals(decodeRid(rid)))).toBe(true);
    const seqs = rids.map(documentSeqOfRid);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(20);
  });

  it("still reads the document key of a rid written by an older emulator (0x80 then the key big-endian)", () => {
    const old = Buffer.alloc(16);
    old[8] = 0x80;
    old.writeUInt32BE(300, 12);
    expect(documentSeqOfRid(old.toString("base64"))).toBe(300);
  });
});

describe("requests addressed by rid (the .NET SDK's partition key range reads)", () => {
  it("serves dbs/{rid}/colls/{rid}/pkranges signed with the container rid lower-cased, and 304 once unchanged", async () => {
    const { container, rid } = await newContainer(2);
    const dbRid = (await db.read()).resource?._rid as string;
    const path = `dbs/${dbRid}/colls/${rid}/pkranges`;
    const signedAs = { resourceType: "pkranges", resourceId: rid.toLowerCase() };
    const first = await raw("GET", path, { ...signedAs, headers: { "a-im": "Incremental feed" } });
    expect(first.status).toBe(200);
    const ranges = (first.body as { PartitionKeyRanges: { id: string }[] }).PartitionKeyRanges;
    expect(ranges.map((r) => r.id)).toEqual(["0", "1"]);
    const etag = first.headers.get("etag") as string;
    // Signed with the path (name-based style) instead: refused, as the service refuses it.
    expect((await raw("GET", path)).status).toBe(401);
    // The SDK reads the ranges as a change feed until a 304.
    const again = await raw("GET", path, {
      ...signedAs,
      headers: { "a-im": "Incremental feed", "if-none-match": etag },
    });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
    t.emulator.splitRange(db.id, container.id, "0");
    const afterSplit = await raw("GET", path, {
      ...signedAs,
      headers: { "a-im": "Incremental feed", "if-none-match": etag },
    });
    expect(afterSplit.status).toBe(200);
    expect(afterSplit.headers.get("etag")).not.toBe(etag);
    // The container itself, by rid.
    const coll = await raw("GET", `dbs/${dbRid}/colls/${rid}`, {
      resourceType: "colls",
      resourceId: rid.toLowerCase(),
    });
    expect(coll.status).toBe(200);
    expect((coll.body as { id: string }).id).toBe(container.id);
  });
});

describe("headers the .NET SDK reads", () => {
  it("an empty change feed read (304) carries x-ms-item-count 0", async () => {
    const { container } = await newContainer(1);
    const it = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    const res = await it.readNext();
    expect(res.statusCode).toBe(304);
    expect(res.headers["x-ms-item-count"]).toBe("0");
  });

  it("Prefer: return=minimal answers a write with its headers and no body", async () => {
    const { container } = await newContainer(1);
    const path = `dbs/${db.id}/colls/${container.id}/docs`;
    const pk = { "x-ms-documentdb-partitionkey": '["p"]' };
    const minimal = await raw("POST", path, {
      body: { id: "m", pk: "p" },
      headers: { ...pk, prefer: "return=minimal" },
    });
    expect(minimal.status).toBe(201);
    expect(minimal.body).toBeUndefined();
    expect(minimal.headers.get("etag")).toMatch(/^"/);
    const full = await raw("POST", path, { body: { id: "f", pk: "p" }, headers: pk });
    expect((full.body as { id: string }).id).toBe("f");
    const replaced = await raw("PUT", `${path}/m`, {
      body: { id: "m", pk: "p", v: 2 },
      headers: { ...pk, prefer: "return=minimal" },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toBeUndefined();
    expect((await container.item("m", "p").read()).resource?.v).toBe(2);
  });
});

describe("ORDER BY resumed as the .NET SDK resumes it", () => {
  /** The SDK's per-range ORDER BY query (the plan's rewritten query with its filter placeholder set to true). */
  const rewritten = (dir: "ASC" | "DESC") =>
    `SELECT c._rid, [{"item": c.n}] AS orderByItems, c AS payload FROM c WHERE ((true)) ORDER BY c.n ${dir}`;

  async function rangeQuery(container: Container, query: string, resumeFilter?: unknown) {
    const res = await raw("POST", `dbs/${db.id}/colls/${container.id}/docs`, {
      body: { query, parameters: [], ...(resumeFilter ? { resumeFilter } : {}) },
      headers: {
        "content-type": "application/query+json",
        "x-ms-documentdb-isquery": "true",
        "x-ms-documentdb-partitionkeyrangeid": "0",
      },
    });
    expect(res.status).toBe(200);
    return (res.body as { Documents: { _rid: string; payload: { id: string; n: number } }[] }).Documents;
  }

  it("returns only the rows after the resume values (exclude), or from a document on (rid)", async () => {
    const { container } = await newContainer(1);
    // n: 0,0,1,1,2,2,... — ties in pairs.
    for (let i = 0; i < 10; i++)
      await container.items.create({ id: `d${i}`, pk: `p${i}`, n: Math.floor(i / 2) });
    const all = await rangeQuery(container, rewritten("ASC"));
    expect(all.map((d) => d.payload.id)).toEqual([
      "d0",
      "d1",
      "d2",
      "d3",
      "d4",
      "d5",
      "d6",
      "d7",
      "d8",
      "d9",
    ]);
    const afterTwo = await rangeQuery(container, rewritten("ASC"), { value: [2], exclude: true });
    expect(afterTwo.map((d) => d.payload.id)).toEqual(["d6", "d7", "d8", "d9"]);
    const fromTwo = await rangeQuery(container, rewritten("ASC"), { value: [2], exclude: false });
    expect(fromTwo.map((d) => d.payload.id)).toEqual(["d4", "d5", "d6", "d7", "d8", "d9"]);
    const fromD5 = await rangeQuery(container, rewritten("ASC"), {
      value: [2],
      rid: all[5]._rid,
      exclude: false,
    });
    expect(fromD5.map((d) => d.payload.id)).toEqual(["d5", "d6", "d7", "d8", "d9"]);
    // Descending: ties come in reverse document order, and the resume point follows that direction.
    const desc = await rangeQuery(container, rewritten("DESC"));
    expect(desc.map((d) => d.payload.id)).toEqual([
      "d9",
      "d8",
      "d7",
      "d6",
      "d5",
      "d4",
      "d3",
      "d2",
      "d1",
      "d0",
    ]);
    const descFromD4 = await rangeQuery(container, rewritten("DESC"), {
      value: [2],
      rid: all[4]._rid,
      exclude: false,
    });
    expect(descFromD4.map((d) => d.payload.id)).toEqual(["d4", "d3", "d2", "d1", "d0"]);
    // Undefined is sent as [] and sorts first.
    await container.items.create({ id: "none", pk: "x" });
    const afterUndefined = await rangeQuery(container, rewritten("ASC"), { value: [[]], exclude: true });
    expect(afterUndefined.map((d) => d.payload.id)).toEqual(all.map((d) => d.payload.id));
  });

  it("a resume filter that does not fit the query is a 400", async () => {
    const { container } = await newContainer(1);
    const path = `dbs/${db.id}/colls/${container.id}/docs`;
    const headers = { "content-type": "application/query+json", "x-ms-documentdb-isquery": "true" };
    const wrongCount = await raw("POST", path, {
      body: { query: rewritten("ASC"), resumeFilter: { value: [1, 2], exclude: false } },
      headers,
    });
    expect(wrongCount.status).toBe(400);
    const notOrderBy = await raw("POST", path, {
      body: { query: "SELECT * FROM c", resumeFilter: { value: [1], exclude: false } },
      headers,
    });
    expect(notOrderBy.status).toBe(400);
    const malformed = await raw("POST", path, {
      body: { query: rewritten("ASC"), resumeFilter: { value: 1 } },
      headers,
    });
    expect(malformed.status).toBe(400);
  });

  it("cross-partition ties come range by range, each range's in the ORDER BY's direction", async () => {
    const { container } = await newContainer(2);
    for (let i = 0; i < 12; i++) await container.items.create({ id: `t${i}`, pk: `k${i}`, n: 1 });
    const { resources: asc } = await container.items
      .query("SELECT c.id, c._rid FROM c ORDER BY c.n")
      .fetchAll();
    const { resources: desc } = await container.items
      .query("SELECT c.id, c._rid FROM c ORDER BY c.n DESC")
      .fetchAll();
    const pkranges = await container.readPartitionKeyRanges().fetchAll();
    const rangeOf = async (id: string) =>
      String((await container.item(id, `k${id.slice(1)}`).read()).headers["x-ms-session-token"]).split(
        ":",
      )[0];
    const ascRanges = await Promise.all(asc.map((d) => rangeOf(d.id)));
    const descRanges = await Promise.all(desc.map((d) => rangeOf(d.id)));
    expect(pkranges.resources.length).toBe(2);
    expect(ascRanges).toEqual([...ascRanges].sort());
    expect(descRanges).toEqual([...descRanges].sort());
    for (const range of ["0", "1"]) {
      const ascSeqs = asc.filter((_, i) => ascRanges[i] === range).map((d) => documentSeqOfRid(d._rid));
      const descSeqs = desc.filter((_, i) => descRanges[i] === range).map((d) => documentSeqOfRid(d._rid));
      expect(ascSeqs).toEqual([...ascSeqs].sort((a, b) => a - b));
      expect(descSeqs).toEqual([...ascSeqs].reverse());
    }
  });
});

describe("all versions and deletes as .NET reads it", () => {
  it("metadata.partitionKey is an object from each key path to its value", async () => {
    const { container } = await newContainer(1, ["/tenant", "/user"]);
    const it = container.items.getChangeFeedIterator<{ metadata: { partitionKey: unknown } }>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    expect((await it.readNext()).statusCode).toBe(304);
    await container.items.create({ id: "a", tenant: "t1", user: "u1" });
    await container.item("a", ["t1", "u1"]).delete();
    const page = await it.readNext();
    // Only a delete's metadata names the partition key (a create's has none, as the service).
    expect(page.result.map((x) => x.metadata.partitionKey)).toEqual([
      undefined,
      { tenant: "t1", user: "u1" },
    ]);
  });
});

describe("transactional batch and bulk as the .NET SDK sends them (HybridRow RecordIO)", () => {
  const fixture = (name: string) =>
    readFileSync(fileURLToPath(new URL(`../fixtures/dotnet-batch/${name}.bin`, import.meta.url)));

  /**
   * Reads the answer as the .NET SDK does (written here from the format, not with the emulator's code): a
   * Segment row, then per operation a Record row (body length, CRC-32) and a BatchResult row — presence bits
   * (statusCode, subStatusCode, eTag, resourceBody), the two int32s, then eTag and resourceBody when present.
   */
  function readResults(
    body: Buffer,
  ): { status: number; substatus: number; etag?: string; doc?: Record<string, unknown> }[] {
    expect(body[0]).toBe(0x81);
    expect(body.readUInt32LE(1)).toBe(2147473648);
    let at = body.readInt32LE(6);
    const results = [];
    const varuint = () => {
      let v = 0;
      for (let shift = 0; ; shift += 7) {
        const b = body[at++];
        v |= (b & 0x7f) << shift;
        if ((b & 0x80) === 0) return v;
      }
    };
    while (at < body.length) {
      expect(body.readUInt32LE(at + 1)).toBe(2147473649);
      const length = body.readInt32LE(at + 5);
      const crc = body.readUInt32LE(at + 9);
      at += 13;
      const row = body.subarray(at, at + length);
      expect(crc32(row)).toBe(crc);
      expect(row.readUInt32LE(1)).toBe(2145473649);
      const presence = row[5];
      const result: { status: number; substatus: number; etag?: string; doc?: Record<string, unknown> } = {
        status: row.readInt32LE(6),
        substatus: row.readInt32LE(10),
      };
      const end = at + length;
      at += 14;
      if (presence & 0b100) {
        const n = varuint();
        result.etag = body.subarray(at, at + n).toString("utf8");
        at += n;
      }
      if (presence & 0b1000) {
        const n = varuint();
        result.doc = JSON.parse(body.subarray(at, at + n).toString("utf8"));
        at += n;
      }
      results.push(result);
      at = end;
    }
    return results;
  }

  async function postBatch(container: Container, body: Buffer, headers: Record<string, string>) {
    const res = await fetch(new URL(`dbs/${db.id}/colls/${container.id}/docs`, t.emulator.endpoint), {
      method: "POST",
      headers: {
        ...masterKeyHeaders(t.emulator.key, "POST", `dbs/${db.id}/colls/${container.id}/docs`),
        "x-ms-cosmos-is-batch-request": "true",
        ...headers,
      },
      body,
    });
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  }

  it("commits a transactional batch and answers each operation in HybridRow", async () => {
    const { container } = await newContainer(1);
    await container.items.create({ id: "tb0", pk: "tb", n: 0 });
    // Create tb1, upsert tb2, replace tb0, read tb1, patch tb2 (incr /n): as the .NET SDK 3.64 sent them.
    const res = await postBatch(container, fixture("transactional-commit"), {
      "x-ms-cosmos-batch-atomic": "true",
      "x-ms-documentdb-partitionkey": '["tb"]',
    });
    expect(res.status).toBe(200);
    const results = readResults(res.body);
    expect(results.map((r) => r.status)).toEqual([201, 201, 200, 200, 200]);
    expect(results[3].doc).toMatchObject({ id: "tb1", n: 1 });
    expect(results[4].doc).toMatchObject({ id: "tb2", n: 3 });
    expect(results.every((r) => r.etag?.startsWith('"'))).toBe(true);
    expect((await container.item("tb0", "tb").read()).resource?.n).toBe(10);
  });

  it("a failing operation fails the batch: 409 for it, 424 for the other, nothing written", async () => {
    const { container } = await newContainer(1);
    await container.items.create({ id: "tb1", pk: "tb" });
    // Create tb3, create tb1 (exists).
    const res = await postBatch(container, fixture("transactional-conflict"), {
      "x-ms-cosmos-batch-atomic": "true",
      "x-ms-documentdb-partitionkey": '["tb"]',
    });
    expect(res.status).toBe(207);
    expect(readResults(res.body).map((r) => r.status)).toEqual([424, 409]);
    expect((await container.item("tb3", "tb").read()).statusCode).toBe(404);
  });

  it("runs bulk operations each with its own partition key", async () => {
    const { container } = await newContainer(1);
    await container.items.create({ id: "bulk3", pk: "bk3" });
    // Create bulk1, bulk3 (exists), bulk4.
    const res = await postBatch(container, fixture("bulk-creates"), { "x-ms-cosmos-batch-atomic": "false" });
    expect(res.status).toBe(207);
    expect(readResults(res.body).map((r) => r.status)).toEqual([201, 409, 201]);
    expect((await container.item("bulk4", "bk4").read()).statusCode).toBe(200);
  });

  it("bulk with binary encoding on: items in Cosmos binary JSON inside the HybridRow operations are stored", async () => {
    const { container } = await newContainer(1);
    // Create k2 {n: 302} and k0 {n: 300} in partition "bulk": as the .NET SDK 3.64 sent them with
    // AZURE_COSMOS_BINARY_ENCODING_ENABLED=true (each resourceBody starts 0x80).
    const body = fixture("bulk-binary-creates");
    expect(body.includes(Buffer.from([0x80, 0xea]))).toBe(true);
    const res = await postBatch(container, body, { "x-ms-cosmos-batch-atomic": "false" });
    expect(res.status).toBe(200);
    expect(readResults(res.body).map((r) => r.status)).toEqual([201, 201]);
    expect((await container.item("k2", "bulk").read()).resource).toMatchObject({
      id: "k2",
      pk: "bulk",
      n: 302,
    });
    expect((await container.item("k0", "bulk").read()).resource).toMatchObject({
      id: "k0",
      pk: "bulk",
      n: 300,
    });
  });

  it("a stream whose record does not match its CRC is a 400 and writes nothing", async () => {
    const { container } = await newContainer(1);
    const body = Buffer.from(fixture("bulk-creates"));
    body[body.length - 3] ^= 0xff;
    const res = await postBatch(container, body, { "x-ms-cosmos-batch-atomic": "false" });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.toString()).message).toMatch(/HybridRow/);
    expect((await container.items.readAll().fetchAll()).resources).toEqual([]);
  });
});
