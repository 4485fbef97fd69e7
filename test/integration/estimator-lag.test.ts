import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { estimateLag } from "../../packages/changefeed/src/estimator.js";
import { createChangeFeedProcessor } from "../../packages/changefeed/src/processor.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { keysPerRange, pendingFor, writeRoundRobin } from "../support/pending-per-range.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";

/*
 * The estimator's figure (session-token LSN − first pending `_lsn` + 1, as .NET computes it) is the true number of
 * pending changes, per lease and in total, with 1, 4 and 16 ranges: each range counts its own LSNs. With one
 * counter for the container, each range's gap took in the other ranges' writes (the figure grew with the ranges).
 */

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("lag") })).database;
});
afterAll(async () => {
  await t.close();
});

describe("estimateLag with several ranges", () => {
  for (const rangeCount of [1, 4, 16]) {
    it(`reports exactly the pending changes per lease and in total with ${rangeCount} range(s)`, async () => {
      const { monitored, leases } = await processorContainers(db, rangeCount);
      const ranges = await keysPerRange(monitored, 3);
      expect(ranges).toHaveLength(rangeCount);
      // Processed first: 4 changes in every range (a replace among them), read and checkpointed by a processor.
      const processed = await writeRoundRobin(monitored, ranges, () => 3, "done");
      await monitored.items.upsert({ id: "done-0-0", pk: ranges[0].keys[0], again: true });
      let handled = 0;
      const p = createChangeFeedProcessor(
        {
          monitoredContainer: monitored,
          leaseContainer: leases,
          instanceName: "est",
          startFromBeginning: true,
          ...FAST_INTERVALS,
        },
        async (docs) => {
          handled += docs.length;
        },
      );
      await p.start();
      await waitUntil("every processed change read", () => handled >= 3 * rangeCount);
      await p.stop();
      expect([...processed.values()].every((n) => n === 3)).toBe(true);
      const idle = await estimateLag({ monitoredContainer: monitored, leaseContainer: leases });
      expect(idle.map((l) => l.estimatedLag)).toEqual(ranges.map(() => 0));

      const pending = await writeRoundRobin(monitored, ranges, (i) => pendingFor(i, rangeCount), "new");
      const lags = await estimateLag({ monitoredContainer: monitored, leaseContainer: leases });
      const byLease = Object.fromEntries(lags.map((l) => [l.leaseToken, l.estimatedLag]));
      expect(byLease).toEqual(Object.fromEntries(pending));
      const total = [...pending.values()].reduce((a, b) => a + b, 0);
      expect(lags.reduce((s, l) => s + l.estimatedLag, 0)).toBe(total);
    });
  }
});
