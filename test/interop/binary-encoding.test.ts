import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runHarness } from "../../bench/lib/dotnet.js";
import { startTlsEmulator, type TlsEmulator } from "../../bench/lib/fleet.js";

/*
 * The .NET SDK with AZURE_COSMOS_BINARY_ENCODING_ENABLED=true: it then sends item bodies of creates, replaces and
 * upserts in Cosmos binary JSON and asks for binary answers on point operations
 * (x-ms-cosmos-supported-serialization-formats: CosmosBinary; Azure/azure-cosmos-dotnet-v3
 * Microsoft.Azure.Cosmos/src/Handler/RequestInvokerHandler.cs). The emulator reads the binary bodies and answers in
 * JSON text, which the SDK reads as well (it looks at the first byte of every answer). interop/dotnet/BinaryChecks.cs
 * records what went over the wire, so these tests know the binary path was taken.
 */

const BINARY = { AZURE_COSMOS_BINARY_ENCODING_ENABLED: "true" };

let t: TlsEmulator;
beforeAll(async () => {
  t = await startTlsEmulator();
});
afterAll(() => t.close());

interface WireLine {
  binaryBodies: Record<string, number>;
  textBodies: Record<string, number>;
  binaryAnswers: Record<string, number>;
  supportedFormats: string[];
  /** The first bulk request's body (HybridRow), hex. */
  bulkBody?: string;
}

describe("the .NET SDK with binary encoding on", () => {
  it("creates, reads, replaces, upserts, patches, batches, queries, reads the change feed and bulk-creates, with binary bodies", async () => {
    const { lines, code, stderr } = await runHarness(
      "binary-checks",
      { ...t.dotnet(), prefix: "bin" },
      BINARY,
    );
    const checks = lines.filter((l) => l.ev === "check");
    expect(checks.map((c) => c.name)).toEqual([
      "binary: create/read/replace/upsert (typed)",
      "binary: create/read/upsert (stream)",
      "binary: patch",
      "binary: transactional batch",
      "binary: query",
      "binary: change feed",
      "binary: bulk",
      "binary: delete",
    ]);
    const failed = checks.filter((c) => c.ok !== true).map((c) => `${String(c.name)}: ${String(c.error)}`);
    expect(failed, stderr).toEqual([]);
    const wire = lines.find((l) => l.ev === "wire") as unknown as WireLine;
    // Typed create ×2 (one a 409), typed upsert, stream create and upsert: POSTs to the item feed; replace: a PUT.
    expect(wire.binaryBodies).toEqual({ "POST docs": 5, "PUT doc": 1 });
    // The bodies sent as text with binary encoding on too: the database and container, patch, the batch
    // (HybridRow) and queries.
    expect(Object.keys(wire.textBodies).sort()).toEqual(["PATCH doc", "POST colls", "POST dbs", "POST docs"]);
    expect(wire.supportedFormats).toEqual(
      expect.arrayContaining(["POST docs: CosmosBinary", "PUT doc: CosmosBinary", "GET doc: CosmosBinary"]),
    );
    // Bulk packs each item as its serializer wrote it: in binary (an object: 0x80, then 0xEA).
    expect(wire.bulkBody).toContain("80ea");
    // The emulator answers in JSON text, which the service may do (and the SDK reads).
    expect(wire.binaryAnswers).toEqual({});
    expect(code).toBe(0);
  });

  it("without the setting the same operations send no binary body (the count above is the setting's doing)", async () => {
    const { lines, code } = await runHarness(
      "binary-checks",
      { ...t.dotnet(), prefix: "txt" },
      {
        AZURE_COSMOS_BINARY_ENCODING_ENABLED: "false",
      },
    );
    expect(lines.filter((l) => l.ev === "check" && l.ok !== true)).toEqual([]);
    const wire = lines.find((l) => l.ev === "wire") as unknown as WireLine;
    expect(wire.binaryBodies).toEqual({});
    expect(wire.bulkBody).not.toContain("80ea");
    expect(wire.supportedFormats.filter((f) => f.startsWith("PUT doc") || f.startsWith("GET doc"))).toEqual(
      [],
    );
    expect(code).toBe(0);
  });

  it("passes the checks of the SDK suite (bulk, TTL, session, queries, change feed) with binary encoding on", async () => {
    const { lines, stderr } = await runHarness("suite", { ...t.dotnet(), prefix: "bsuite" }, BINARY);
    // Not the 429 check: it needs the client to outrun 400 RU/s, which on a loaded machine it may not, with binary
    // encoding or without (sdk-suite.test.ts runs it); every other check must pass.
    const checks = lines.filter((l) => l.ev === "check" && !String(l.name).startsWith("429:"));
    expect(checks.length).toBeGreaterThanOrEqual(26);
    const failed = checks.filter((c) => c.ok !== true).map((c) => `${String(c.name)}: ${String(c.error)}`);
    expect(failed, stderr).toEqual([]);
  });
});
