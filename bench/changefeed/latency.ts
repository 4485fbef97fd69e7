/** Change feed bench, phase 2: write → handler latency at a steady write rate. */

import type { Database } from "@azure/cosmos";
import { percentile } from "../lib/stats.js";
import {
  type BenchDoc,
  config,
  createChangeFeedProcessor,
  createContainers,
  DB,
  type EmulatorProcess,
  sleep,
  startWriter,
  waitFor,
} from "./setup.js";
import { newClient } from "./throughput.js";

export async function latencyRun(emu: EmulatorProcess, db: Database, feedPollDelay: number) {
  const { monitored, leases } = await createContainers(db, "lat", config.latency.ranges);
  const hostClient = newClient(emu);
  const writerClient = newClient(emu);
  const latencies = new Map<string, number>();
  let duplicates = 0;
  const processor = createChangeFeedProcessor<BenchDoc>(
    {
      monitoredContainer: hostClient.database(DB).container(monitored.id),
      leaseContainer: hostClient.database(DB).container(leases.id),
      instanceName: "latency-host",
      feedPollDelay,
      handoffTimeout: 0,
    },
    async (changes) => {
      const now = Date.now();
      for (const d of changes) {
        if (latencies.has(d.id)) duplicates++;
        else latencies.set(d.id, now - (d.writtenAt ?? now));
      }
    },
  );
  await processor.start();
  // Let every worker do its first (empty) read, so the run starts from an idle, polling processor.
  await sleep(Math.min(feedPollDelay, 1000) + 200);
  const total = config.latency.ratePerSec * config.latency.seconds;
  const t0 = Date.now();
  const writer = startWriter(
    writerClient.database(DB).container(monitored.id),
    config.latency.ratePerSec,
    total,
  );
  await writer.done;
  const writeSeconds = (Date.now() - t0) / 1000;
  await waitFor(
    () => latencies.size >= writer.writtenAt.size,
    feedPollDelay * 3 + 20_000,
    "all documents handled",
  );
  await processor.stop();
  hostClient.dispose();
  writerClient.dispose();
  const values = [...latencies.values()];
  return {
    feedPollDelay,
    written: writer.writtenAt.size,
    writeErrors: writer.errors,
    achievedRatePerSec: Math.round(writer.writtenAt.size / writeSeconds),
    handled: latencies.size,
    duplicates,
    p50Ms: percentile(values, 50),
    p90Ms: percentile(values, 90),
    p99Ms: percentile(values, 99),
    maxMs: Math.max(...values),
    meanMs: Math.round(values.reduce((a, b) => a + b, 0) / values.length),
  };
}
