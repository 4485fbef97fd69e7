import type { Container, CosmosClient, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DotnetProcessorHost } from "../../bench/lib/dotnet.js";
import {
  type Delivery,
  type LeaseDoc,
  NodeProcessorHost,
  readLeases,
  startTlsEmulator,
  TEST_INTERVALS,
  type TlsEmulator,
} from "../../bench/lib/fleet.js";
import { waitUntil } from "../../bench/lib/until.js";
import { uniqueName } from "../support/emulator.js";

/*
 * Adoption both ways: a fleet of one implementation processes a first batch of changes and stops gracefully; a host
 * of the other implementation then continues from the leases and continuations it left — exactly the second batch:
 * nothing re-read, nothing skipped, no new lease. For the latest-version feed and for all versions and deletes
 * (the .NET SDK 3.64 has GetChangeFeedProcessorBuilderWithAllVersionsAndDeletes).
 */

const PREFIX = "adopt";
const RANGES = 4;

let t: TlsEmulator;
let client: CosmosClient;
let db: Database;
const dotnetHosts: DotnetProcessorHost[] = [];
const nodeHosts: NodeProcessorHost[] = [];

beforeAll(async () => {
  t = await startTlsEmulator();
  client = t.client();
  db = (await client.databases.create({ id: "adoption" })).database;
});
afterAll(async () => {
  await Promise.allSettled(dotnetHosts.map((h) => h.kill()));
  await Promise.allSettled(nodeHosts.map((h) => h.crash()));
  await t.close();
});

type Kind = "dotnet" | "node";
type Mode = "latestVersion" | "allVersionsAndDeletes";

/** A host of either kind, as the test drives it. */
interface Host {
  deliveries(): Delivery[];
  stop(): Promise<void>;
}

async function startHost(
  kind: Kind,
  mode: Mode,
  name: string,
  monitored: Container,
  leases: Container,
): Promise<Host> {
  if (kind === "dotnet") {
    const h = new DotnetProcessorHost(t.dotnet(), {
      database: db.id,
      monitored: monitored.id,
      leases: leases.id,
      processorName: PREFIX,
      instanceName: name,
      mode: mode === "latestVersion" ? "latest" : "allVersionsAndDeletes",
      startFromBeginning: mode === "latestVersion",
      ...TEST_INTERVALS,
    });
    dotnetHosts.push(h);
    await waitUntil(`${name} started`, () => h.lines.some((l) => l.ev === "started" || l.ev === "fatal"));
    if (h.events("fatal").length > 0) throw new Error(h.diagnostics());
    return {
      deliveries: () =>
        h.events("doc").map((d) => ({
          host: name,
          lease: String(d.lease),
          id: String(d.id),
          lsn: Number(d.lsn),
          op: d.op === undefined ? undefined : String(d.op).toLowerCase(),
        })),
      stop: () => h.stop(),
    };
  }
  const own = t.client();
  const h = new NodeProcessorHost(
    name,
    own.database(db.id).container(monitored.id),
    own.database(db.id).container(leases.id),
    {
      processorName: PREFIX,
      mode,
      startFromBeginning: mode === "latestVersion",
    },
  );
  nodeHosts.push(h);
  await h.start();
  return {
    deliveries: () => h.deliveries.map((d) => ({ ...d, op: d.op?.toLowerCase() })),
    stop: () => h.stop(),
  };
}

/** One change the test made: the document and the LSN the feed will show it at. */
const key = (d: { id: string; lsn: number }) => `${d.id}@${d.lsn}`;

/** Writes a batch of changes; returns their keys (id@lsn) as the feed will deliver them. */
async function writeBatch(c: Container, mode: Mode, batch: string, reuse: string[]): Promise<string[]> {
  const changes: string[] = [];
  // A write's LSN: the session token of its answer ends with its range's LSN, which the write just took.
  const lsnOf = (r: { headers: Record<string, unknown> }) =>
    Number(String(r.headers["x-ms-session-token"]).split("#").pop());
  for (let i = 0; i < 24; i++) {
    const r = await c.items.create({ id: `${batch}-${i}`, pk: `${batch}-${i}` });
    changes.push(key({ id: `${batch}-${i}`, lsn: lsnOf(r) }));
  }
  // Changes to documents of the previous batch: they come again, at their new LSN.
  for (const id of reuse.slice(0, 4)) {
    const r = await c.items.upsert({ id, pk: id, v: batch });
    changes.push(key({ id, lsn: lsnOf(r) }));
  }
  if (mode === "allVersionsAndDeletes") {
    for (const id of reuse.slice(4, 7)) {
      const r = await c.item(id, id).delete();
      changes.push(key({ id, lsn: lsnOf(r) }));
    }
  }
  return changes;
}

/** The LSN in a lease's continuation (.NET's raw etag `"<lsn>"`), 0 when it has none. */
const continuationLsn = (l: LeaseDoc) => Number(/(\d+)/.exec(l.ContinuationToken ?? "")?.[1] ?? 0);

async function adopt(first: Kind, second: Kind, mode: Mode): Promise<void> {
  const monitored = (
    await db.containers.create(
      { id: uniqueName("orders"), partitionKey: { paths: ["/pk"], version: 2 } },
      { offerThroughput: RANGES * 6_000 },
    )
  ).container;
  const leases = (
    await db.containers.create({ id: uniqueName("leases"), partitionKey: { paths: ["/id"] }, defaultTtl: -1 })
  ).container;

  const a = await startHost(first, mode, `${first}-first`, monitored, leases);
  await waitUntil(`${first} owns all ${RANGES} leases`, async () => {
    const docs = await readLeases(leases, PREFIX);
    return docs.length === RANGES && docs.every((d) => d.Owner === `${first}-first`);
  });
  if (mode === "allVersionsAndDeletes") {
    // All versions starts from "now", which each lease takes at its first read: let every lease read once
    // (a dozen poll delays) before the first change.
    await new Promise((r) => setTimeout(r, 12 * TEST_INTERVALS.feedPollDelay));
  }
  const batch1 = await writeBatch(monitored, mode, "one", []);
  await waitUntil(`${first} delivered the first batch`, () => {
    const got = new Set(a.deliveries().map(key));
    return batch1.every((k) => got.has(k));
  });
  // Every lease's checkpoint covers what was delivered from it.
  await waitUntil("the first batch checkpointed", async () => {
    const docs = await readLeases(leases, PREFIX);
    const maxByLease = new Map<string, number>();
    for (const d of a.deliveries()) maxByLease.set(d.lease, Math.max(maxByLease.get(d.lease) ?? 0, d.lsn));
    return [...maxByLease].every(([lease, lsn]) => {
      const doc = docs.find((l) => l.LeaseToken === lease);
      return doc !== undefined && continuationLsn(doc) >= lsn;
    });
  });
  await a.stop();
  const leasesBefore = (await readLeases(leases, PREFIX)).map((l) => l.id).sort();
  expect(leasesBefore).toHaveLength(RANGES);

  const batch2 = await writeBatch(
    monitored,
    mode,
    "two",
    batch1.map((k) => k.split("@")[0]).filter((id) => id.startsWith("one-")),
  );
  const b = await startHost(second, mode, `${second}-second`, monitored, leases);
  await waitUntil(`${second} delivered the second batch`, () => {
    const got = new Set(b.deliveries().map(key));
    return batch2.every((k) => got.has(k));
  });
  // Once the second batch is in, anything re-read from before it would have come first (the feed is in LSN order).
  const delivered = b.deliveries().map(key);
  expect(delivered.filter((k) => !batch2.includes(k))).toEqual([]);
  expect(delivered.sort()).toEqual([...batch2].sort());
  // The second host continued the first one's leases: the same documents, now its own.
  const after = await readLeases(leases, PREFIX);
  expect(after.map((l) => l.id).sort()).toEqual(leasesBefore);
  expect(after.every((l) => l.Owner === `${second}-second`)).toBe(true);
  if (mode === "allVersionsAndDeletes") {
    expect(b.deliveries().filter((d) => d.op === "delete").length).toBe(3);
    expect(after.every((l) => l.Mode === "Full-Fidelity Feed")).toBe(true);
  }
  await b.stop();
}

describe("leases written by one implementation, continued by the other", () => {
  for (const mode of ["latestVersion", "allVersionsAndDeletes"] as const) {
    it(`${mode}: .NET first, then ours`, () => adopt("dotnet", "node", mode));
    it(`${mode}: ours first, then .NET`, () => adopt("node", "dotnet", mode));
  }
});
