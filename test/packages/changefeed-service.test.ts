// Scenario 2 (issue 33): a plain Node.js service with no Functions (as on Container Apps or AKS) — two instances of
// fixtures/service/worker.mjs, installed from the changefeed and core tarballs — processes one container's change
// feed against the emulator package (fixtures/service/emulator.mjs, from its tarball), sharing one lease container.
// One instance is killed (SIGKILL: no release, no last checkpoint), its leases move to the other, and every written
// id is seen at least once. The lease documents are then read as KEDA's Azure Cosmos DB scaler reads them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CosmosClient, type Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settled, until } from "../../bench/lib/until.js";
import { type CliRun, killAll } from "../support/start-cli.js";
import { jsonLine, outside, runOutside } from "./support/outside.js";
import { PROCESSOR_INTERVALS } from "./support/settings.js";

const PROCESSOR = "orders-worker";
const RANGES = 4;
const runs: CliRun[] = [];
let client: CosmosClient;
let db: Database;
let dir = "";
let cosmos = { endpoint: "", key: "" };

interface LeaseDoc {
  id: string;
  version?: unknown;
  LeaseToken?: unknown;
  FeedRange?: {
    Range?: { min?: unknown; max?: unknown; isMinInclusive?: unknown; isMaxInclusive?: unknown };
  };
  Owner?: unknown;
  ContinuationToken?: unknown;
  timestamp?: unknown;
  properties?: unknown;
  _etag?: unknown;
  _ts?: unknown;
}

beforeAll(async () => {
  dir = outside().scenarios.changefeedService.dir;
  const emulator = runOutside(process.execPath, ["emulator.mjs"], dir, { RANGES: String(RANGES) });
  runs.push(emulator);
  const { endpoint, key } = await jsonLine<{ endpoint: string; key: string }>(emulator);
  client = new CosmosClient({ endpoint, key });
  ({ database: db } = await client.databases.createIfNotExists({ id: "shop" }));
  await db.containers.createIfNotExists({ id: "orders", partitionKey: "/id" });
  await db.containers.createIfNotExists({ id: "leases", partitionKey: "/id", defaultTtl: -1 });
  cosmos = { endpoint, key };
});
afterAll(() => {
  client?.dispose();
  killAll(runs);
});

function startWorker(name: string): CliRun {
  const run = runOutside(process.execPath, ["worker.mjs"], dir, {
    COSMOS_ENDPOINT: cosmos.endpoint,
    COSMOS_KEY: cosmos.key,
    PROCESSOR_NAME: PROCESSOR,
    INSTANCE_NAME: name,
    SEEN_FILE: join(dir, `seen-${name}.jsonl`),
    ...Object.fromEntries(Object.entries(PROCESSOR_INTERVALS).map(([k, v]) => [k, String(v)])),
  });
  runs.push(run);
  return run;
}

/** The ids an instance wrote to its file (every handled batch, appended before its handler returned). */
function seenBy(name: string): Set<string> {
  let text = "";
  try {
    text = readFileSync(join(dir, `seen-${name}.jsonl`), "utf8");
  } catch {
    return new Set();
  }
  return new Set(
    text
      .split("\n")
      .filter(Boolean)
      .flatMap((l) => (JSON.parse(l) as { ids: string[] }).ids),
  );
}

/** The lease documents of the processor: `<prefix>..<token>`, not its .info, .lock and .fleet documents. */
async function leases(): Promise<LeaseDoc[]> {
  const { resources } = await db
    .container("leases")
    .items.query<LeaseDoc>({
      query: "SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)",
      parameters: [{ name: "@prefix", value: PROCESSOR }],
    })
    .fetchAll();
  return resources.filter((d) => d.id.includes(".."));
}

async function write(prefix: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  for (const id of ids) await db.container("orders").items.create({ id, total: 1 });
  return ids;
}

const missing = (ids: string[], seen: Set<string>) => ids.filter((id) => !seen.has(id));

describe("the change feed package in a plain Node service, two instances", () => {
  it("one instance is killed, its leases move to the other, no change is lost", async () => {
    const a = startWorker("a");
    const b = startWorker("b");
    await a.waitFor(/started a/);
    await b.waitFor(/started b/);
    // Both own leases: the lease container is shared.
    await until("every lease owned, by both instances", async () => {
      const docs = await leases();
      const owners = new Set(docs.map((d) => d.Owner));
      return docs.length === RANGES && owners.size === 2 && owners.has("a") && owners.has("b")
        ? true
        : undefined;
    });
    const before = await write("before", 40);
    await until("every id written before the kill seen", async () =>
      missing(before, new Set([...seenBy("a"), ...seenBy("b")])).length === 0 ? true : undefined,
    );

    const aLeases = (await leases()).filter((d) => d.Owner === "a").map((d) => d.LeaseToken);
    expect(aLeases.length).toBeGreaterThan(0);
    a.signalGroup("SIGKILL");
    await settled("the killed instance's exit", a.exited);
    const after = await write("after", 40);

    // Its leases expire (it never renews them again) and the other instance takes them.
    await until("every lease owned by b", async () => {
      const docs = await leases();
      return docs.length === RANGES && docs.every((d) => d.Owner === "b") ? true : undefined;
    });
    await until("every id written after the kill seen by b", async () =>
      missing(after, seenBy("b")).length === 0 ? true : undefined,
    );
    // At least once: nothing written is missing from what the two saw.
    expect(missing([...before, ...after], new Set([...seenBy("a"), ...seenBy("b")]))).toEqual([]);
    expect(seenBy("a").has("after-0")).toBe(false);
  });

  // What KEDA's Azure Cosmos DB scaler reads from the lease container: kedacore/external-scaler-azure-cosmos-db,
  // src/Scaler/Services/CosmosDbMetricProvider.cs (GetPartitionCountAsync, at 01a2505c57422ad12b10d85314b1763bedcbbd0a):
  // `GetChangeFeedEstimator(ProcessorName, leaseContainer).GetCurrentStateIterator()` and the count of states with
  // `EstimatedLag > 0` — the .NET SDK's estimator (Microsoft.Azure.Cosmos 3.48.0, its csproj). That estimator
  // (azure-cosmos-dotnet-v3 ChangeFeedProcessor/ChangeFeedEstimatorIterator.cs) lists the documents whose id starts
  // with the processor's lease prefix, deserializes each by its `version` (1: LeaseManagement/DocumentServiceLeaseCoreEpk.cs:
  // id, _etag, LeaseToken, FeedRange, Owner, ContinuationToken, timestamp or _ts, properties), reads one page of the
  // monitored container's change feed for the lease's FeedRange from its ContinuationToken (from the beginning when
  // it is empty), and reports LeaseToken, the lag and Owner (InstanceName). The .NET estimator itself runs on our
  // leases in test/interop/estimator-lag.test.ts; here, the documents a plain Node service wrote have that shape.
  it("its lease documents are what KEDA's scaler (the .NET estimator) parses", async () => {
    const docs = await leases();
    expect(docs).toHaveLength(RANGES);
    const prefixes = new Set<string>();
    // The monitored container's physical ranges, as the estimator's change feed reads address them.
    const { resources: pkRanges } = await db.container("orders").readPartitionKeyRanges().fetchAll();
    const physical = new Map(pkRanges.map((r) => [r.id, { min: r.minInclusive, max: r.maxExclusive }]));
    expect(physical.size).toBe(RANGES);
    const covered: { min: string; max: string }[] = [];
    for (const d of docs) {
      // The converter's choice (DocumentServiceLeaseConverter): no `version` or 0 is a partition key range lease
      // (DocumentServiceLeaseCore: LeaseToken is the range's id), 1 an EPK lease (FeedRange.Range).
      expect([undefined, 0, 1]).toContain(d.version);
      expect(typeof d.LeaseToken).toBe("string");
      if (d.version === 1) {
        const range = d.FeedRange?.Range;
        expect(typeof range?.min).toBe("string");
        expect(typeof range?.max).toBe("string");
        expect(d.LeaseToken).toBe(`${range?.min}-${range?.max}`);
        if (range?.isMinInclusive !== undefined) expect(range.isMinInclusive).toBe(true);
        if (range?.isMaxInclusive !== undefined) expect(range.isMaxInclusive).toBe(false);
        covered.push({ min: range?.min as string, max: range?.max as string });
      } else {
        expect(physical.has(d.LeaseToken as string), `LeaseToken ${String(d.LeaseToken)} names a range`).toBe(
          true,
        );
        covered.push(physical.get(d.LeaseToken as string) as { min: string; max: string });
      }
      // The id is <prefix>..<LeaseToken>, one prefix for all: what STARTSWITH(c.id, prefix) finds.
      expect(d.id.endsWith(`..${d.LeaseToken}`)).toBe(true);
      prefixes.add(d.id.slice(0, -`..${d.LeaseToken}`.length));
      expect(d.Owner).toBe("b");
      // Everything is processed: each lease has a continuation for the estimator to read from.
      expect(typeof d.ContinuationToken).toBe("string");
      expect(d.ContinuationToken).not.toBe("");
      expect(typeof d.timestamp).toBe("string");
      expect(Number.isNaN(Date.parse(d.timestamp as string))).toBe(false);
      expect(typeof d.properties).toBe("object");
      for (const v of Object.values(d.properties as object)) expect(typeof v).toBe("string");
      expect(typeof d._etag).toBe("string");
      expect(typeof d._ts).toBe("number");
    }
    expect(prefixes.size).toBe(1);
    expect([...prefixes][0].startsWith(PROCESSOR)).toBe(true);
    // One lease per range, covering the whole key space with no gap or overlap: one estimator state each, so
    // the scaler's partition count is at most the number of ranges.
    covered.sort((x, y) => (x.min < y.min ? -1 : 1));
    expect(covered[0].min).toBe("");
    expect(covered.at(-1)?.max).toBe("FF");
    for (let i = 1; i < covered.length; i++) expect(covered[i].min).toBe(covered[i - 1].max);
  });

  it("the surviving instance stops on SIGTERM and releases its leases", async () => {
    const b = runs.find((r) => r.output().includes("started b")) as CliRun;
    b.signalGroup("SIGTERM");
    expect(await settled("b's exit", b.exited)).toBe(0);
    const docs = await leases();
    expect(docs.every((d) => d.Owner === null || d.Owner === "")).toBe(true);
  });
});
