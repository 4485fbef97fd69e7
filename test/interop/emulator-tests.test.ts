import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runHarness } from "../../bench/lib/dotnet.js";
import { startTlsEmulator, type TlsEmulator } from "../../bench/lib/fleet.js";

/*
 * The behaviours Microsoft's own emulator tests of the .NET SDK assert (azure-cosmos-dotnet-v3,
 * Microsoft.Azure.Cosmos.EmulatorTests: the processor, the estimator, the change feed iterator and items), each a check
 * of our own in interop/dotnet/Suite (EmulatorTests.cs runs them; docs/emulator.md lists which test each one
 * answers): the judge is the service's behaviour as Microsoft tests it, through the unmodified SDK (3.64.0).
 */

let t: TlsEmulator;
beforeAll(async () => {
  t = await startTlsEmulator();
});
afterAll(() => t.close());

/** Every check of the `emulator-tests` command, in the order it runs them: none may go missing unnoticed. */
const CHECKS = [
  "processor: changes written after the lease is acquired arrive in order, each batch's context with lease, session and charge",
  "processor: documents written right after StartAsync are delivered",
  "processor: 100 documents without a partition key value arrive in order",
  "processor: manual checkpoint — after a handler error the lease resumes from the last checkpoint",
  "processor: a batch whose handler throws is delivered again",
  "processor: leases carry LeaseToken, no PartitionId and no partitionKey",
  "processor: V2 leases (PartitionId, no LeaseToken) are resumed and then carry both",
  "processor: WithStartTime(t) delivers only documents written after t",
  "processor: WithStartTime(DateTime.MinValue) reads from the beginning",
  "processor: StartAsync with a missing lease container is a 404",
  "AVAD processor: cold start; create, replace, delete with lsn, previousImageLSN, crts, delete's id, key and previous image",
  "AVAD processor: a TTL expiry is a delete with timeToLiveExpired, id and key, and no previous image",
  "processor: leases remember their mode; switching latest version ↔ all versions and deletes is refused",
  "estimator: with no leases the push estimator reports 1 and the pull estimator 0",
  "estimator: a lease never checkpointed reports the sentinel lag 1 (push and pull)",
  "estimator: documents written after the last checkpoint are the lag (push and pull)",
  "estimator: StartAsync on a missing monitored container is a 404",
  "change feed: from the beginning over several ranges, then the saved continuation reads only the next 25",
  "change feed: ChangeFeedStartFrom.Time reads only documents written after that time",
  "change feed: an iterator that began on an empty container picks up later writes",
  "change feed: PageSizeHint 1 gives pages of one document",
  "change feed: a new iterator per page from the last continuation drains every range",
  "change feed: breadth first — after a page the continuation's first range is another one",
  "change feed: a continuation from another container is a 400",
  "change feed: a malformed continuation is a 400 with a substatus",
  "change feed: latest version shows nothing of documents created then deleted (304)",
  "change feed: all versions and deletes from the beginning is a 400",
  "change feed: all versions and deletes by partition key from now — create then replace, other keys left out",
  "items: an id with / # ? \\ is stored; read by it is a 404; a query finds it; replaced through RID addresses",
  "items: a document without its partition key property is PartitionKey.None",
  "items: a nested partition key path (/a/b/c)",
  "items: delete all items by partition key removes that key's items only",
  "items: a document without an id is a 400 (no id is generated)",
  "items: a body whose partition key differs from the request's is a 400",
  "items: a stale If-Match is a 412 with the service's message and a charge",
  "items: replace under a new id renames; a replace that moves the partition key is a 400",
  "patch: a missing item is a 404, an add under a missing parent a 400 with the service's message, a stale If-Match a 412",
  "items: a point read in a missing container or database is a 404 (stream and typed)",
  "query: MaxItemCount 1 and 2 give pages of exactly that size",
  "query: a continuation limit of 0 KB and a syntax error are 400s with the service's messages",
  "read feed: pages of one from a new iterator per continuation; the last continuation is null",
];

describe("Microsoft's emulator tests' behaviours, through the .NET SDK", () => {
  it("passes every check", async () => {
    const { lines, code, stderr } = await runHarness("emulator-tests", { ...t.dotnet(), prefix: "emu" });
    const checks = lines.filter((l) => l.ev === "check");
    const failed = checks.filter((c) => c.ok !== true).map((c) => `${String(c.name)}: ${String(c.error)}`);
    expect(failed, stderr.slice(-4000)).toEqual([]);
    expect(checks.map((c) => c.name)).toEqual(CHECKS);
    expect(lines.find((l) => l.ev === "summary")).toMatchObject({ passed: CHECKS.length, failed: 0 });
    expect(code).toBe(0);
  });
});
