import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runHarness } from "../../bench/lib/dotnet.js";
import { startTlsEmulator, type TlsEmulator } from "../../bench/lib/fleet.js";

/*
 * The .NET SDK (Microsoft.Azure.Cosmos 3.64.0, Gateway mode, over HTTPS) as a second client of the emulator:
 * interop/dotnet/Suite runs each check and prints whether it passed and what the SDK threw. Whatever the SDK
 * rejects is the emulator's bug unless the service's docs say otherwise; each fix has its own test in the normal
 * suite (test/integration/dotnet-wire.test.ts).
 */

let t: TlsEmulator;
beforeAll(async () => {
  t = await startTlsEmulator();
});
afterAll(() => t.close());

/** Every check the suite runs (interop/dotnet/Suite/*Checks.cs): none may go missing unnoticed. */
const CHECKS = [
  "database create/read/if-not-exists/query/delete",
  "container create/read/replace/if-not-exists/list/delete",
  "container with hierarchical partition key",
  "throughput read/replace (manual and autoscale)",
  "items: create/read/replace/upsert/delete, 404 and 409",
  "items: If-Match (412 when stale), If-None-Match (304)",
  "items: stream API and content-response-off (Prefer: return=minimal)",
  "items: read many across partitions",
  "patch: set/add/incr/remove/replace/move and a false condition (412)",
  "transactional batch: commit, and all-or-nothing on a failure",
  "bulk (AllowBulkExecution): 300 concurrent creates over 2 ranges",
  "TTL: container default and per-item ttl expire documents",
  "session consistency: a write's session token reads it back on another client",
  "429: throttled requests are retried by the SDK (and surface with retries off)",
  "query: the container has several ranges",
  "query: cross-partition ORDER BY, pages of 7",
  "query: cross-partition ORDER BY on a string, with continuation tokens resumed",
  "query: OFFSET/LIMIT and TOP across partitions",
  "query: aggregates (COUNT, SUM, AVG, MIN, MAX) across partitions",
  "query: GROUP BY across partitions (a missing key is its own group)",
  "query: DISTINCT across partitions",
  "query: single partition with parameters",
  "query: LINQ (Where, OrderBy, Select)",
  "query: a syntax error is a 400",
  "change feed: each feed range from the beginning, then resumed from its continuation",
  "change feed: whole container from now, and by partition key",
  "change feed: all versions and deletes (create, replace, delete with metadata)",
  "change feed: a transactional batch of 10 is one LSN and one page with pageSizeHint 5",
];

describe("the .NET SDK against the emulator", () => {
  it("passes every check of the suite", async () => {
    const { lines, code, stderr } = await runHarness("suite", { ...t.dotnet(), prefix: "suite" });
    const checks = lines.filter((l) => l.ev === "check");
    expect(checks.map((c) => c.name)).toEqual(CHECKS);
    const failed = checks.filter((c) => c.ok !== true).map((c) => `${String(c.name)}: ${String(c.error)}`);
    expect(failed, stderr).toEqual([]);
    expect(lines.find((l) => l.ev === "summary")).toMatchObject({ passed: CHECKS.length, failed: 0 });
    expect(code).toBe(0);
  });
});
