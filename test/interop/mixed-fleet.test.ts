import type { Container, CosmosClient } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DotnetProcessorHost } from "../../bench/lib/dotnet.js";
import {
  LeaseWatch,
  NodeProcessorHost,
  ownership,
  readLeases,
  startTlsEmulator,
  TEST_INTERVALS,
  type TlsEmulator,
} from "../../bench/lib/fleet.js";
import { waitUntil } from "../../bench/lib/until.js";
import { Writer } from "./support/writer.js";

/*
 * One monitored container (8 physical ranges, then a live split), one lease container, one processor name: .NET
 * Change Feed Processor hosts (interop/dotnet, configured as the Functions trigger configures them) and ours side by
 * side. Asserted: ownership converges to an equal split (1 + 1, then 2 + 2, then after the split and after a kill -9
 * and a graceful stop), no two lease documents ever cover one part of the key space, and every document written is
 * delivered at least once, with at most one batch re-delivered per lease acquisition.
 */

const PREFIX = "fleet";
const MAX_ITEMS = 10;
const RANGES = 8;

let t: TlsEmulator;
let client: CosmosClient;
let dbId: string;
let monitoredId: string;
let leasesId: string;
const dotnetHosts: DotnetProcessorHost[] = [];
const nodeHosts: NodeProcessorHost[] = [];

beforeAll(async () => {
  t = await startTlsEmulator();
  client = t.client();
  const { database } = await client.databases.create({ id: "fleet" });
  dbId = database.id;
  monitoredId = (
    await database.containers.create(
      { id: "orders", partitionKey: { paths: ["/pk"], version: 2 } },
      { offerThroughput: RANGES * 6_000 },
    )
  ).container.id;
  leasesId = (
    await database.containers.create({ id: "leases", partitionKey: { paths: ["/id"] }, defaultTtl: -1 })
  ).container.id;
});
afterAll(async () => {
  await Promise.allSettled(dotnetHosts.map((h) => h.kill()));
  await Promise.allSettled(nodeHosts.map((h) => h.crash()));
  await t.close();
});

function dotnetHost(name: string): DotnetProcessorHost {
  const h = new DotnetProcessorHost(t.dotnet(), {
    database: dbId,
    monitored: monitoredId,
    leases: leasesId,
    processorName: PREFIX,
    instanceName: name,
    startFromBeginning: true,
    maxItems: MAX_ITEMS,
    ...TEST_INTERVALS,
  });
  dotnetHosts.push(h);
  return h;
}

async function nodeHost(name: string): Promise<NodeProcessorHost> {
  // Each host has its own client (its own caches and connections), as separate processes would.
  const own = t.client();
  const h = new NodeProcessorHost(
    name,
    own.database(dbId).container(monitoredId),
    own.database(dbId).container(leasesId),
    { processorName: PREFIX, startFromBeginning: true, maxItems: MAX_ITEMS },
  );
  nodeHosts.push(h);
  await h.start();
  return h;
}

/** Waits until `hosts` own every lease, `total` of them, each floor or ceil of an equal share. */
async function waitBalanced(leases: Container, hosts: string[], total: number): Promise<Map<string, number>> {
  let last = new Map<string, number>();
  try {
    await waitUntil(
      `${total} leases owned by ${hosts.join(", ")} in equal shares`,
      async () => {
        const docs = await readLeases(leases, PREFIX);
        last = ownership(docs);
        const counts = hosts.map((h) => last.get(h) ?? 0);
        return (
          docs.length === total &&
          docs.every((d) => d.Owner && hosts.includes(d.Owner)) &&
          counts.every((c) => c === Math.floor(total / hosts.length) || c === Math.ceil(total / hosts.length))
        );
      },
      100,
    );
  } catch (e) {
    const why = dotnetHosts.map((h) => h.diagnostics()).join("\n");
    throw new Error(`${(e as Error).message}; last ownership ${JSON.stringify([...last])}\n${why}`);
  }
  return last;
}

describe(".NET and Node processors on one lease container", () => {
  it("balance 1 + 1 and 2 + 2, survive a split, a kill -9 and a graceful stop, and deliver everything", async () => {
    const monitored = client.database(dbId).container(monitoredId);
    const leases = client.database(dbId).container(leasesId);
    const watch = new LeaseWatch(leases, PREFIX);
    const writer = new Writer(monitored, 20);

    // 1 + 1: four leases each.
    dotnetHost("net-1");
    await nodeHost("node-1");
    await waitBalanced(leases, ["net-1", "node-1"], RANGES);

    // 2 + 2: two each.
    dotnetHost("net-2");
    await nodeHost("node-2");
    await waitBalanced(leases, ["net-1", "node-1", "net-2", "node-2"], RANGES);

    // A live split: the lease of the split range is replaced by one per child, still balanced.
    const { resources: ranges } = await monitored.readPartitionKeyRanges().fetchAll();
    watch.splitParents.add(ranges[0].id);
    t.emulator.splitRange(dbId, monitoredId, ranges[0].id);
    await waitBalanced(leases, ["net-1", "node-1", "net-2", "node-2"], RANGES + 1);

    // A .NET host dies (kill -9: its leases expire) and one of ours stops gracefully (releases its leases).
    await dotnetHosts[0].kill();
    await nodeHosts[1].stop();
    await waitBalanced(leases, ["node-1", "net-2"], RANGES + 1);

    await writer.stop();
    const delivered = () => {
      const all = [
        ...dotnetHosts.flatMap((h) => h.events("doc").map((d) => String(d.id))),
        ...nodeHosts.flatMap((h) => h.deliveries.map((d) => d.id)),
      ];
      return { all, unique: new Set(all) };
    };
    await waitUntil(`all ${writer.ids.length} documents delivered`, () =>
      writer.ids.every((id) => delivered().unique.has(id)),
    );
    await Promise.all([dotnetHosts[1].stop(), nodeHosts[0].stop()]);
    await watch.stop();

    const { all, unique } = delivered();
    expect(writer.ids.length).toBeGreaterThan(100);
    expect(writer.ids.filter((id) => !unique.has(id))).toEqual([]);
    expect(unique.size).toBe(writer.ids.length);
    // Both fleets did their share.
    expect(dotnetHosts.every((h) => h.events("doc").length > 0)).toBe(true);
    expect(nodeHosts.every((h) => h.deliveries.length > 0)).toBe(true);
    // At least once: a re-delivery is the batch in flight when a lease moved, at most one per acquisition.
    const acquisitions =
      dotnetHosts.reduce((n, h) => n + h.events("acquired").length, 0) +
      nodeHosts.reduce((n, h) => n + h.acquisitions, 0);
    const duplicates = all.length - unique.size;
    console.log(
      `mixed fleet: ${writer.ids.length} written, ${all.length} delivered (${duplicates} duplicates), ${acquisitions} acquisitions, ${watch.polls} lease polls`,
    );
    expect(duplicates).toBeLessThanOrEqual(acquisitions * MAX_ITEMS);
    // Never two lease documents over one part of the key space (two owners of the same changes).
    expect(watch.polls).toBeGreaterThan(10);
    expect(watch.violations).toEqual([]);
    expect(nodeHosts.flatMap((h) => h.errors).filter((e) => !/gone|split|410/i.test(e))).toEqual([]);
  });
});
