// The estimator phase of bench:fleet (issue 35): estimateLag (the public API) over a lease container of N leases on
// the embedded emulator (in memory, port 0, throttling off), the lease documents written directly in .NET's
// version-1 (EPK) schema, since the emulator starts a container with at most 64 physical ranges: each range is cut
// into N/64 EPK windows, one lease each, as a fleet whose leases were split by EPK would have. Requests and RU are
// the emulator's meter; the requests at the wire (the container reads the meter leaves out among them) are counted
// by a request plugin of the tool's client; the wall time is this machine's, recorded with its load average, never
// judged.
import os from "node:os";
import { type Container, CosmosClient, type CosmosClientOptions, type PluginConfig } from "@azure/cosmos";
import { estimateLag } from "@cosmos-feed/changefeed";
import { meterDelta, RANGE_COUNT_HEADER, startEmulator } from "@cosmos-feed/emulator";

/** The emulator's most physical ranges at creation (MAX_INITIAL_RANGES). */
const PHYSICAL_RANGES = 64;
/** Documents written to the monitored container before the estimate, so some leases have a backlog. */
const PENDING_DOCUMENTS = 1_000;
const EPK_DIGITS = 32;

export interface EstimatorFigures {
  leases: number;
  physicalRanges: number;
  pendingDocuments: number;
  estimatedLagTotal: number;
  leasesWithLag: number;
  /** Per container ("db/container"), per kind: requests and RU of the estimate alone. */
  requestsByContainer: Record<string, Record<string, { count: number; ru: number }>>;
  requests: number;
  ru: number;
  requestsPerLease: number;
  ruPerLease: number;
  /**
   * HTTP requests the tool's client sent, by kind: "feedRead" (change feed reads), "containerRead" (reads of a
   * container's definition: the SDK reads the monitored container each time a change feed iterator starts, and
   * the emulator's meter counts only the data plane), "other" (the lease listing, account and range reads).
   */
  wireRequests: { feedRead: number; containerRead: number; other: number; total: number };
  /** Feed reads sent again by estimateLag after a timeout or a throttle: wire feed reads − leases read. */
  feedReadRetries: number;
  /** The slowest HTTP request of the estimate (ms, this machine's). */
  slowestRequestMs: number;
  wallMs: number;
  loadAverage1m: number;
}

/** A request plugin counting the client's HTTP requests by kind and the slowest one (the SDK's hidden `plugins`). */
function wireCounter() {
  const counts = { feedRead: 0, containerRead: 0, other: 0, total: 0 };
  let slowestMs = 0;
  const plugins: PluginConfig[] = [
    {
      on: "request",
      plugin: async (context, _diagnostics, next) => {
        const isFeed = context.resourceType === "docs" && context.headers?.["A-IM"] !== undefined;
        const isContainerRead = context.resourceType === "colls" && context.method === "GET";
        counts[isFeed ? "feedRead" : isContainerRead ? "containerRead" : "other"]++;
        counts.total++;
        const t0 = performance.now();
        try {
          return await next(context);
        } finally {
          slowestMs = Math.max(slowestMs, performance.now() - t0);
        }
      },
    },
  ];
  return { options: { plugins } as Partial<CosmosClientOptions>, counts, slowestMs: () => slowestMs };
}

const toBig = (epk: string, isMax: boolean): bigint =>
  isMax && epk === "FF"
    ? 0xffn << BigInt((EPK_DIGITS - 2) * 4)
    : BigInt(`0x${epk.padEnd(EPK_DIGITS, "0") || "0"}`);
const toEpk = (v: bigint): string => v.toString(16).toUpperCase().padStart(EPK_DIGITS, "0");

/** `count` EPK windows covering [min, max) in order (the first keeps min, the last keeps max). */
export function epkWindows(min: string, max: string, count: number): { min: string; max: string }[] {
  const lo = toBig(min, false);
  const hi = toBig(max, true);
  const out: { min: string; max: string }[] = [];
  for (let i = 0; i < count; i++) {
    const a = i === 0 ? min : toEpk(lo + ((hi - lo) * BigInt(i)) / BigInt(count));
    const b = i === count - 1 ? max : toEpk(lo + ((hi - lo) * BigInt(i + 1)) / BigInt(count));
    out.push({ min: a, max: b });
  }
  return out;
}

async function writeLeases(
  leases: Container,
  prefix: string,
  windows: { min: string; max: string }[],
  hosts: number,
): Promise<void> {
  const now = new Date().toISOString();
  const docs = windows.map((w, i) => {
    const token = `${w.min}-${w.max}`;
    return {
      id: `${prefix}..${token}`,
      version: 1,
      LeaseToken: token,
      FeedRange: { Range: { min: w.min, max: w.max, isMinInclusive: true, isMaxInclusive: false } },
      Owner: `host-${i % hosts}`,
      // Processed up to LSN 1 of its range: what was written after it is the backlog.
      ContinuationToken: '"1"',
      properties: {},
      timestamp: now,
      Mode: "LatestVersion",
    };
  });
  for (let i = 0; i < docs.length; i += 100)
    await Promise.all(docs.slice(i, i + 100).map((d) => leases.items.create(d)));
}

/** One estimate of a fleet of `leaseCount` leases (spread evenly over up to 64 physical ranges), on a fresh emulator. */
export async function runEstimator(leaseCount: number): Promise<EstimatorFigures> {
  if (!Number.isInteger(leaseCount) || leaseCount < 1)
    throw new Error(`estimator phase: '${leaseCount}' is not a positive number of leases`);
  const emu = await startEmulator({ port: 0, enforceThroughput: false });
  const client = new CosmosClient({ endpoint: emu.endpoint, key: emu.key });
  try {
    const { database } = await client.databases.create({ id: "fleet" });
    const ranges = Math.min(PHYSICAL_RANGES, leaseCount);
    const { container: monitored } = await database.containers.create(
      { id: "monitored", partitionKey: { paths: ["/pk"], version: 2 } },
      { initialHeaders: { [RANGE_COUNT_HEADER]: String(ranges) } },
    );
    const { container: leases } = await database.containers.create(
      {
        id: "leases",
        partitionKey: { paths: ["/id"] },
        indexingPolicy: { includedPaths: [{ path: "/id/?" }], excludedPaths: [{ path: "/*" }] },
      },
      { initialHeaders: { [RANGE_COUNT_HEADER]: "1" } },
    );
    for (let i = 0; i < PENDING_DOCUMENTS; i += 100)
      await Promise.all(
        Array.from({ length: Math.min(100, PENDING_DOCUMENTS - i) }, (_, j) =>
          monitored.items.create({ id: `d${i + j}`, pk: `k${i + j}` }),
        ),
      );
    const dbRid = (await database.read()).resource?._rid;
    const containerRid = (await monitored.read()).resource?._rid;
    const prefix = `${new URL(emu.endpoint).hostname}_${dbRid}_${containerRid}`;
    const physical = (await monitored.readPartitionKeyRanges().fetchAll()).resources;
    physical.sort((a, b) => (a.minInclusive < b.minInclusive ? -1 : 1));
    const windows = physical.flatMap((r, i) =>
      epkWindows(
        r.minInclusive,
        r.maxExclusive,
        Math.floor(leaseCount / ranges) + (i < leaseCount % ranges ? 1 : 0),
      ),
    );
    await writeLeases(leases, prefix, windows, Math.max(1, Math.round(leaseCount / 10)));

    // A client of its own, as a monitoring tool would have: its first requests (metadata) are the estimate's.
    const wire = wireCounter();
    const tool = new CosmosClient({ endpoint: emu.endpoint, key: emu.key, ...wire.options });
    const db = tool.database("fleet");
    const before = emu.meter.snapshot();
    const load = os.loadavg()[0];
    const t0 = performance.now();
    const lags = await estimateLag({
      monitoredContainer: db.container("monitored"),
      leaseContainer: db.container("leases"),
    });
    const wallMs = performance.now() - t0;
    const after = emu.meter.snapshot();
    tool.dispose();
    if (lags.length !== leaseCount) throw new Error(`estimated ${lags.length} leases of ${leaseCount}`);
    const requestsByContainer: EstimatorFigures["requestsByContainer"] = {};
    let requests = 0;
    let ru = 0;
    for (const container of Object.keys(after)) {
      const kinds = meterDelta(before, after, container);
      const row: Record<string, { count: number; ru: number }> = {};
      for (const [kind, e] of Object.entries(kinds)) {
        if (!e || e.count === 0) continue;
        row[kind] = { count: e.count, ru: Math.round(e.ru * 100) / 100 };
        requests += e.count;
        ru += e.ru;
      }
      if (Object.keys(row).length > 0) requestsByContainer[container] = row;
    }
    return {
      leases: leaseCount,
      physicalRanges: ranges,
      pendingDocuments: PENDING_DOCUMENTS,
      estimatedLagTotal: lags.reduce((s, l) => s + l.estimatedLag, 0),
      leasesWithLag: lags.filter((l) => l.estimatedLag > 0).length,
      requestsByContainer,
      requests,
      ru: Math.round(ru * 100) / 100,
      requestsPerLease: Math.round((requests / leaseCount) * 1000) / 1000,
      ruPerLease: Math.round((ru / leaseCount) * 100) / 100,
      wireRequests: { ...wire.counts },
      // Every lease has a continuation here: one feed read each unless one was sent again.
      feedReadRetries: wire.counts.feedRead - leaseCount,
      slowestRequestMs: Math.round(wire.slowestMs()),
      wallMs: Math.round(wallMs),
      loadAverage1m: Math.round(load * 100) / 100,
    };
  } finally {
    client.dispose();
    await emu.close();
  }
}
