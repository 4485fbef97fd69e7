import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DotnetProcessorHost } from "../../bench/lib/dotnet.js";
import {
  NodeProcessorHost,
  readLeases,
  startTlsEmulator,
  TEST_INTERVALS,
  type TlsEmulator,
} from "../../bench/lib/fleet.js";
import { waitUntil } from "../../bench/lib/until.js";

/*
 * Lease ids on an Azure-shaped endpoint: both clients are configured with https://myaccount.documents.azure.com:<port>/
 * (connections go to the emulator, as a DNS entry would send them), and each derives its lease prefix from that
 * account host, as the Functions trigger's hosts do. Ours must write exactly the ids .NET writes, and take over .NET's
 * leases without creating any.
 */

const ACCOUNT_HOST = "myaccount.documents.azure.com";
const PREFIX = "orders-projector";
const RANGES = 3;

let t: TlsEmulator;
let db: Database;
let monitored: Container;
const dotnetHosts: DotnetProcessorHost[] = [];
const nodeHosts: NodeProcessorHost[] = [];

beforeAll(async () => {
  t = await startTlsEmulator();
  db = (await t.client(ACCOUNT_HOST).databases.create({ id: "ids" })).database;
  monitored = (
    await db.containers.create(
      { id: "orders", partitionKey: { paths: ["/pk"], version: 2 } },
      { offerThroughput: RANGES * 6_000 },
    )
  ).container;
});
afterAll(async () => {
  await Promise.allSettled(dotnetHosts.map((h) => h.kill()));
  await Promise.allSettled(nodeHosts.map((h) => h.crash()));
  await t.close();
});

async function leaseContainer(id: string): Promise<Container> {
  return (await db.containers.create({ id, partitionKey: { paths: ["/id"] }, defaultTtl: -1 })).container;
}

async function runDotnet(leases: Container): Promise<void> {
  const h = new DotnetProcessorHost(t.dotnet(ACCOUNT_HOST), {
    database: db.id,
    monitored: monitored.id,
    leases: leases.id,
    processorName: PREFIX,
    instanceName: "net",
    ...TEST_INTERVALS,
  });
  dotnetHosts.push(h);
  await waitUntil(`.NET owns ${RANGES} leases`, async () => {
    const docs = await readLeases(leases, PREFIX);
    return docs.length === RANGES && docs.every((d) => d.Owner === "net");
  });
  await h.stop();
}

async function runNode(leases: Container): Promise<NodeProcessorHost> {
  const client = t.client(ACCOUNT_HOST);
  const h = new NodeProcessorHost(
    "node",
    client.database(db.id).container(monitored.id),
    client.database(db.id).container(leases.id),
    {
      processorName: PREFIX,
    },
  );
  nodeHosts.push(h);
  await h.start();
  await waitUntil(`ours owns ${RANGES} leases`, async () => {
    const docs = await readLeases(leases, PREFIX);
    return docs.length === RANGES && docs.every((d) => d.Owner === "node");
  });
  return h;
}

describe("lease ids on an Azure-shaped endpoint", () => {
  it("are the ones .NET writes, and ours takes over .NET's leases without creating any", async () => {
    const byDotnet = await leaseContainer("leases-dotnet");
    const byNode = await leaseContainer("leases-node");
    await runDotnet(byDotnet);
    await (await runNode(byNode)).stop();
    const dotnetIds = (await readLeases(byDotnet, PREFIX)).map((l) => l.id).sort();
    const nodeIds = (await readLeases(byNode, PREFIX)).map((l) => l.id).sort();
    expect(dotnetIds).toHaveLength(RANGES);
    expect(dotnetIds.every((id) => id.startsWith(`${PREFIX}${ACCOUNT_HOST}_`))).toBe(true);
    expect(nodeIds).toEqual(dotnetIds);
    // The bootstrap documents too.
    const info = async (c: Container) =>
      (await c.items.query("SELECT VALUE c.id FROM c WHERE ENDSWITH(c.id, '.info')").fetchAll()).resources;
    expect(await info(byNode)).toEqual(await info(byDotnet));

    // Ours on .NET's lease container: it takes .NET's leases; the container keeps exactly them.
    const h = await runNode(byDotnet);
    expect((await readLeases(byDotnet, PREFIX)).map((l) => l.id).sort()).toEqual(dotnetIds);
    await h.stop();
  });
});
