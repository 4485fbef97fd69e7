import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { epkWindows } from "../../bench/fleet/estimator-run.js";
import { ESTIMATE_CONCURRENCY, estimateLag } from "../../packages/changefeed/src/estimator.js";
import { RANGE_COUNT_HEADER } from "../../packages/emulator/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

/*
 * estimateLag keeps at most ESTIMATE_CONCURRENCY feed reads in flight: sent all at once, 10,000 leases' reads
 * queued past the default requestTimeout (docs/bench-fleet.md). The real SDK reads the emulator; the monitored
 * container is only watched (its change feed iterators count the readNext calls pending), nothing is faked.
 */

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("lagcap") })).database;
});
afterAll(async () => {
  await t.close();
});

/** The container, whose change feed iterators report how many reads are pending at most. */
function watched(container: Container) {
  const stats = { pending: 0, maxPending: 0, reads: 0 };
  const items = new Proxy(container.items, {
    get(target, prop, receiver) {
      if (prop !== "getChangeFeedIterator") return Reflect.get(target, prop, receiver);
      return (...args: Parameters<Container["items"]["getChangeFeedIterator"]>) => {
        const it = target.getChangeFeedIterator(...args);
        const readNext = it.readNext.bind(it);
        it.readNext = async () => {
          stats.reads++;
          stats.maxPending = Math.max(stats.maxPending, ++stats.pending);
          try {
            return await readNext();
          } finally {
            stats.pending--;
          }
        };
        return it;
      };
    },
  });
  const proxy = new Proxy(container, {
    get: (target, prop, receiver) => (prop === "items" ? items : Reflect.get(target, prop, receiver)),
  });
  return { container: proxy, stats };
}

describe("estimateLag at more leases than its concurrency", () => {
  it(`reads every lease, never more than ${ESTIMATE_CONCURRENCY} at once`, async () => {
    const leaseCount = ESTIMATE_CONCURRENCY * 3 + 5;
    const { container: monitored } = await db.containers.create(
      { id: "monitored", partitionKey: { paths: ["/pk"], version: 2 } },
      { initialHeaders: { [RANGE_COUNT_HEADER]: "1" } },
    );
    const { container: leases } = await db.containers.create({
      id: "leases",
      partitionKey: { paths: ["/id"] },
    });
    // Three changes: a continuation of LSN 1 is one the range has passed.
    for (const id of ["a", "b", "c"]) await monitored.items.create({ id, pk: id });
    const dbRid = (await db.read()).resource?._rid;
    const rid = (await monitored.read()).resource?._rid;
    const prefix = `${new URL(t.emulator.endpoint).hostname}_${dbRid}_${rid}`;
    // EPK windows of the one range, each a version-1 lease in .NET's schema, one without a continuation.
    const windows = epkWindows("", "FF", leaseCount);
    for (let i = 0; i < windows.length; i += 50)
      await Promise.all(
        windows.slice(i, i + 50).map((w, j) =>
          leases.items.create({
            id: `${prefix}..${w.min}-${w.max}`,
            version: 1,
            LeaseToken: `${w.min}-${w.max}`,
            FeedRange: { Range: { min: w.min, max: w.max, isMinInclusive: true, isMaxInclusive: false } },
            Owner: "host",
            ContinuationToken: i + j === 0 ? null : '"1"',
            properties: {},
            timestamp: new Date().toISOString(),
            Mode: "LatestVersion",
          }),
        ),
      );
    const w = watched(monitored);
    const lags = await estimateLag({ monitoredContainer: w.container, leaseContainer: leases });
    expect(lags).toHaveLength(leaseCount);
    expect(new Set(lags.map((l) => l.leaseToken)).size).toBe(leaseCount);
    const first = `${windows[0].min}-${windows[0].max}`;
    expect(lags.find((l) => l.leaseToken === first)?.estimatedLag).toBe(1); // no continuation: 1, nothing read
    expect(w.stats.reads).toBe(leaseCount - 1);
    expect(w.stats.maxPending).toBeLessThanOrEqual(ESTIMATE_CONCURRENCY);
    expect(w.stats.maxPending).toBeGreaterThan(1); // still concurrent
  });
});
