/**
 * Hostile bodies in Cosmos binary JSON, generated: fast-check (fixed seeds) cuts, mutates and splices the documents
 * the .NET SDK wrote (test/fixtures/cosmos-binary/vectors.ndjson) and makes random ones, then
 * - gives each to the decoder, which must return a value or throw its own error (never a RangeError, a stack
 *   overflow or a TypeError), and
 * - sends each to the emulator as a create and a replace, which must answer 2xx or a 4xx with a code and a
 *   message — never a 5xx — and, when it refused, write nothing.
 */
import { readFileSync } from "node:fs";
import type { Container } from "@azure/cosmos";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BinaryJsonError, decodeCosmosBinary } from "../../packages/emulator/src/binary-json/decode.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

/** Fixed, so a failure replays; change them only with a reason. */
const DECODER_SEED = 20261202;
const SERVER_SEED = 20261203;

const VECTORS: Buffer[] = readFileSync(
  new URL("../fixtures/cosmos-binary/vectors.ndjson", import.meta.url),
  "utf8",
)
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => Buffer.from((JSON.parse(l) as { hex: string }).hex, "hex"))
  // The 66 KB one makes each run slow without adding markers the others lack.
  .filter((b) => b.length < 8192);

/** {"id": id (5 characters), "pk": "p", "n": 300} in binary: a document the emulator stores. */
const writable = (id: string): Buffer =>
  Buffer.concat([
    Buffer.from("80ea112c85", "hex"),
    Buffer.from(id),
    Buffer.from("82706b8170816ec92c01", "hex"),
  ]);
VECTORS.push(writable("fuzz0"));

/**
 * A body: a vector cut short, a vector with bytes overwritten, two vectors spliced, 0x80 and random bytes, or a
 * well-formed document (so that the emulator's answers include stored writes, not only refusals).
 */
const hostileBody: fc.Arbitrary<Buffer> = fc.oneof(
  fc.stringMatching(/^[a-z0-9]{5}$/).map(writable),
  fc
    .tuple(fc.constantFrom(...VECTORS), fc.double({ min: 0, max: 1, noNaN: true }))
    .map(([v, cut]) => v.subarray(0, 1 + Math.floor(cut * (v.length - 1)))),
  fc
    .tuple(
      fc.constantFrom(...VECTORS),
      fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 255 })), {
        minLength: 1,
        maxLength: 4,
      }),
    )
    .map(([v, edits]) => {
      const b = Buffer.from(v);
      for (const [where, byte] of edits)
        b[Math.min(b.length - 1, 1 + Math.floor(where * (b.length - 1)))] = byte;
      return b;
    }),
  fc
    .tuple(
      fc.constantFrom(...VECTORS),
      fc.constantFrom(...VECTORS),
      fc.double({ min: 0, max: 1, noNaN: true }),
    )
    .map(([a, b, at]) => Buffer.concat([a.subarray(0, 1 + Math.floor(at * (a.length - 1))), b.subarray(1)])),
  fc.uint8Array({ minLength: 0, maxLength: 64 }).map((r) => Buffer.concat([Buffer.from([0x80]), r])),
);

describe("the decoder on hostile binary bodies", () => {
  it("returns a value or refuses with its own error, for every body", () => {
    let refused = 0;
    fc.assert(
      fc.property(hostileBody, (body) => {
        try {
          decodeCosmosBinary(body, { maxDepth: 131, maxChars: 1 << 22 });
        } catch (e) {
          if (!(e instanceof BinaryJsonError)) throw e;
          expect(e.offset).toBeGreaterThanOrEqual(0);
          expect(e.offset).toBeLessThanOrEqual(body.length);
          refused++;
        }
      }),
      { seed: DECODER_SEED, numRuns: 5000 },
    );
    // Most hostile bodies are refused (the count shows the generator makes broken ones, not only valid ones).
    expect(refused).toBeGreaterThan(2000);
  });
});

describe("the emulator on hostile binary bodies", () => {
  let t: TestEmulator;
  let container: Container;
  let docsPath: string;

  beforeAll(async () => {
    t = await startTestEmulator();
    const { database } = await t.client.databases.create({ id: uniqueName("binfuzz") });
    ({ container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } }));
    docsPath = `/dbs/${database.id}/colls/c/docs`;
    await container.items.create({ id: "target", pk: "p" });
  });
  afterAll(() => t.close());

  /** The container's last committed LSN, from a change feed read that starts "now" (304 with etag). */
  async function lsn(): Promise<string | null> {
    const res = await rawRequest(t.emulator.endpoint, t.emulator.key, "GET", docsPath, {
      headers: { "a-im": "Incremental Feed", "if-none-match": "*" },
    });
    expect(res.status).toBe(304);
    return res.headers.get("etag");
  }

  it("answers every create and replace with 2xx or a 4xx that has a code and a message, and writes nothing when it refuses", async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(hostileBody, fc.boolean(), async (body, replace) => {
        const before = await lsn();
        const res = await rawRequest(
          t.emulator.endpoint,
          t.emulator.key,
          replace ? "PUT" : "POST",
          replace ? `${docsPath}/target` : docsPath,
          { headers: { "x-ms-documentdb-partitionkey": '["p"]', "x-ms-documentdb-is-upsert": "true" }, body },
        );
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
        if (res.status >= 400) {
          const b = res.body as { code?: string; message?: string };
          expect(typeof b.code).toBe("string");
          expect(b.message?.length).toBeGreaterThan(0);
          expect(await lsn()).toBe(before);
        }
      }),
      { seed: SERVER_SEED, numRuns: 400 },
    );
    // Mostly 400s, and the well-formed documents stored; the property held for every one of them.
    expect(statuses.get(400) ?? 0).toBeGreaterThan(200);
    expect((statuses.get(200) ?? 0) + (statuses.get(201) ?? 0)).toBeGreaterThan(20);
    // Still serving.
    expect((await container.read()).statusCode).toBe(200);
  });
});
