/**
 * `cosmos-feed leases` as a user runs it (a child process, the real SDK against the emulator): the leases a processor
 * wrote, plus one in the .NET / Functions host's shape, grouped by prefix, with owner, continuation, estimated lag
 * and expiry; JSON and table output; a bad connection is one clear line.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";
import { waitUntil } from "../../bench/lib/until.js";
import { createChangeFeedProcessor } from "../../packages/changefeed/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";

const run = promisify(execFile);
let t: TestEmulator;
let db: Database;
let monitored: Container;
let leases: Container;

async function cli(args: string[]) {
  return run(
    process.execPath,
    [join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"), "leases", ...args],
    {
      cwd: repoRoot,
    },
  );
}

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("leases-cli") })).database;
  ({ monitored, leases } = await processorContainers(db, 2));
  let handled = 0;
  const processor = createChangeFeedProcessor(
    {
      monitoredContainer: monitored,
      leaseContainer: leases,
      leaseContainerPrefix: "p1-",
      instanceName: "host-a",
      startFromBeginning: true,
      ...FAST_INTERVALS,
    },
    async (docs) => {
      handled += docs.length;
    },
  );
  let checkpointed = 0;
  processor.on("checkpointed", (_token, _continuation, documents) => {
    checkpointed += documents;
  });
  await processor.start();
  for (let i = 0; i < 10; i++) await monitored.items.create({ id: `a${i}`, pk: `k${i}` });
  await waitUntil("the 10 changes handled and checkpointed", () => handled === 10 && checkpointed === 10);
  // A crash: the leases keep their owner, and are no longer renewed.
  await processor.abandon();
  // Five changes nobody processes: the lag.
  for (let i = 0; i < 5; i++) await monitored.items.create({ id: `b${i}`, pk: `m${i}` });
  // A lease in the .NET / Functions host's shape, for the same monitored container, never started.
  const { resources } = await leases.items
    .query<{ id: string }>("SELECT c.id FROM c WHERE STARTSWITH(c.id, 'p1-') AND IS_DEFINED(c.LeaseToken)")
    .fetchAll();
  const sample = resources[0].id;
  await leases.items.create({
    id: `dotnet-${sample.slice("p1-".length, sample.lastIndexOf(".."))}..0`,
    LeaseToken: "0",
    Owner: null,
    ContinuationToken: null,
    timestamp: new Date().toISOString(),
    properties: {},
    version: 0,
  });
  // A lease of another monitored container in the same lease container: its lag is not this container's to
  // estimate (its continuation is far ahead of this one's LSNs, so estimating it here would fail).
  const other = (await db.containers.create({ id: "other", partitionKey: { paths: ["/pk"] } })).resource;
  const storeOfSample = sample.slice("p1-".length, sample.lastIndexOf(".."));
  await leases.items.create({
    id: `other-${storeOfSample.slice(0, storeOfSample.lastIndexOf("_"))}_${other?._rid}..0`,
    LeaseToken: "0",
    Owner: "host-z",
    ContinuationToken: '"999"',
    timestamp: new Date().toISOString(),
    properties: {},
    version: 0,
  });
  expect(handled).toBe(10);
});

afterAll(async () => {
  await t?.close();
});

describe("cosmos-feed leases", () => {
  it("lists each prefix's leases with owner, continuation, lag and expiry (JSON)", async () => {
    await new Promise((r) => setTimeout(r, 300));
    const { stdout } = await cli([
      "--connection",
      t.emulator.connectionString,
      "--database",
      db.id,
      "--container",
      monitored.id,
      "--lease-container",
      leases.id,
      "--expiration",
      "200",
      "--json",
    ]);
    const report = JSON.parse(stdout) as {
      leases: {
        prefix: string;
        leaseToken: string;
        owner: string | null;
        continuation: string | null;
        estimatedLag: number | null;
        expired: boolean;
      }[];
      lagErrors: Record<string, string>;
      lagNotes: Record<string, string>;
    };
    expect(report.lagErrors).toEqual({});
    // Its `?` is explained: the container its id names, by name, to run again with.
    expect(report.lagNotes).toEqual({
      "other-": `1 lease(s) of another monitored container than '${monitored.id}': 'other' (--container other estimates their lag)`,
    });
    const p1 = report.leases.filter((l) => l.prefix === "p1-");
    expect(p1.map((l) => l.leaseToken).sort()).toEqual(["0", "1"]);
    for (const l of p1) {
      expect(l.owner).toBe("host-a");
      expect(l.continuation).not.toBeNull();
      expect(l.expired).toBe(true); // not renewed since the abandon, and --expiration is 200 ms
    }
    // .NET's estimate (session LSN − first pending change's LSN + 1) counts each range's own LSNs: exactly the 5
    // unprocessed changes (one counter for the container would count the other range's LSNs too).
    const lag = p1.reduce((n, l) => n + (l.estimatedLag ?? 0), 0);
    expect(lag).toBe(5);
    // Listed, but without a lag: it belongs to another monitored container.
    expect(report.leases.filter((l) => l.prefix === "other-")).toEqual([
      expect.objectContaining({ leaseToken: "0", owner: "host-z", estimatedLag: null }),
    ]);
    const dotnet = report.leases.filter((l) => l.prefix === "dotnet-");
    expect(dotnet).toEqual([
      expect.objectContaining({
        leaseToken: "0",
        owner: null,
        continuation: null,
        estimatedLag: 1,
        expired: false,
      }),
    ]);
  });

  it("prints a table per prefix, and filters by prefix", async () => {
    const { stdout } = await cli([
      "--connection",
      t.emulator.connectionString,
      "--database",
      db.id,
      "--lease-container",
      leases.id,
      "--prefix",
      "p1-",
    ]);
    expect(stdout).toContain("prefix 'p1-': 2 lease(s), 1 owner(s)");
    expect(stdout).toMatch(/TOKEN\/RANGE\s+OWNER\s+CONTINUATION\s+LAST WRITE\s+LAG\s+EXPIRED/);
    expect(stdout).toContain("host-a");
    expect(stdout).not.toContain("dotnet-");
    // Without --container every lag is `?`, and the table says why under the prefix's rows.
    expect(stdout).toContain(
      "  LAG ?: not estimated: name the monitored container (--container) to estimate lag",
    );
  });

  it("a bad connection or a missing lease container is one clear line and exit 1", async () => {
    const bad = (await cli(["--connection", "nonsense", "--database", "x"]).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toContain("--connection is a Cosmos DB connection string");
    const missing = (await cli([
      "--connection",
      t.emulator.connectionString,
      "--database",
      db.id,
      "--lease-container",
      "nope",
    ]).catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("does not exist");
  });
});
