import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DotnetProcessorHost, type HarnessLine, runHarness } from "../../bench/lib/dotnet.js";
import { readLeases, startTlsEmulator, TEST_INTERVALS, type TlsEmulator } from "../../bench/lib/fleet.js";
import { waitUntil } from "../../bench/lib/until.js";
import { estimateLag } from "../../packages/changefeed/src/estimator.js";
import { keysPerRange, pendingFor, writeRoundRobin } from "../support/pending-per-range.js";

/*
 * .NET's change feed estimator as the judge of the emulator's LSNs: leases checkpointed by the .NET processor, then
 * a known number of changes left pending in each range (written round-robin across the ranges), then .NET's
 * estimator (per lease: ChangeFeedEstimatorIterator; in total: the push-model estimator) and ours on the same
 * leases. Each must report exactly the pending changes, with 1, 4 and 16 ranges: each range counts its own LSNs,
 * as the service's partitions do (with one counter for the container, a range's gap took in the others' writes).
 */

const PREFIX = "lag";

let t: TlsEmulator;
let db: Database;
const hosts: DotnetProcessorHost[] = [];

beforeAll(async () => {
  t = await startTlsEmulator();
  db = (await t.client().databases.create({ id: "estimator" })).database;
});
afterAll(async () => {
  await Promise.allSettled(hosts.map((h) => h.kill()));
  await t.close();
});

async function dotnetEstimate(monitored: Container, leases: Container): Promise<HarnessLine[]> {
  const run = await runHarness("estimator", {
    ...t.dotnet(),
    database: db.id,
    monitored: monitored.id,
    leases: leases.id,
    processorName: PREFIX,
  });
  if (run.code !== 0)
    throw new Error(`estimator exited ${run.code}: ${JSON.stringify(run.lines)} ${run.stderr}`);
  return run.lines;
}

const perLease = (lines: HarnessLine[]) =>
  Object.fromEntries(lines.filter((l) => l.ev === "lease").map((l) => [l.lease as string, l.lag as number]));
const figure = (lines: HarnessLine[], ev: string) => lines.find((l) => l.ev === ev)?.lag;

describe(".NET's change feed estimator on the emulator", () => {
  for (const rangeCount of [1, 4, 16]) {
    it(`reports exactly the pending changes per lease and in total with ${rangeCount} range(s), as ours does`, async () => {
      const client = t.client();
      const monitored = (
        await client
          .database(db.id)
          .containers.create(
            { id: `data-${rangeCount}`, partitionKey: { paths: ["/pk"], version: 2 } },
            { offerThroughput: rangeCount * 6_000 },
          )
      ).container;
      const leases = (
        await client
          .database(db.id)
          .containers.create({ id: `leases-${rangeCount}`, partitionKey: { paths: ["/id"] }, defaultTtl: -1 })
      ).container;
      const ranges = await keysPerRange(monitored, 3);
      expect(ranges).toHaveLength(rangeCount);

      // Processed: 3 changes per range, read and checkpointed by the .NET processor, which then stops.
      await writeRoundRobin(monitored, ranges, () => 3, "done");
      const host = new DotnetProcessorHost(t.dotnet(), {
        database: db.id,
        monitored: monitored.id,
        leases: leases.id,
        processorName: PREFIX,
        instanceName: "net",
        startFromBeginning: true,
        ...TEST_INTERVALS,
      });
      hosts.push(host);
      await waitUntil(`.NET read the ${3 * rangeCount} changes and checkpointed every lease`, async () => {
        if (host.events("doc").length < 3 * rangeCount) return false;
        const docs = await readLeases(leases, PREFIX);
        return docs.length === rangeCount && docs.every((d) => d.ContinuationToken);
      });
      await host.stop();
      const idle = await dotnetEstimate(monitored, leases);
      expect(perLease(idle)).toEqual(Object.fromEntries(ranges.map((r) => [r.id, 0])));

      const pending = await writeRoundRobin(monitored, ranges, (i) => pendingFor(i, rangeCount), "new");
      const expected = Object.fromEntries(pending);
      const total = [...pending.values()].reduce((a, b) => a + b, 0);
      const lines = await dotnetEstimate(monitored, leases);
      expect(perLease(lines)).toEqual(expected);
      expect(figure(lines, "sum")).toBe(total);
      expect(figure(lines, "total")).toBe(total);

      const ours = await estimateLag({
        monitoredContainer: monitored,
        leaseContainer: leases,
        leaseContainerPrefix: PREFIX,
      });
      expect(Object.fromEntries(ours.map((l) => [l.leaseToken, l.estimatedLag]))).toEqual(expected);
    });
  }
});
