import {
  ChangeFeedStartFrom,
  type Container,
  CosmosClient,
  type CosmosClientOptions,
  type Database,
  type PluginConfig,
  PluginOn,
} from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { estimateLag } from "../../packages/changefeed/src/estimator.js";
import {
  type ChangeFeedProcessor,
  createChangeFeedProcessor,
} from "../../packages/changefeed/src/processor.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

/*
 * Interop with .NET, Java and the Functions trigger against the emulator, through the unmodified SDK (issue 9).
 */

interface Doc {
  id: string;
  pk: string;
}

const FAST = {
  leaseRenewInterval: 200,
  leaseAcquireInterval: 300,
  leaseExpirationInterval: 1_500,
  feedPollDelay: 50,
  handoffTimeout: 0,
};

let t: TestEmulator;
let db: Database;
let dbRid: string;
const running: ChangeFeedProcessor<Doc>[] = [];
const extraClients: CosmosClient[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("interop") })).database;
  // The database's own _rid, as the service reports it (how .NET ≤ 3.58 took it): not derived like the code does.
  dbRid = (await db.read()).resource?._rid as string;
});
afterEach(async () => {
  await Promise.allSettled(running.splice(0).map((p) => p.stop()));
});
afterAll(async () => {
  for (const c of extraClients) c.dispose();
  await t.close();
});

async function containers(): Promise<{ monitored: Container; leases: Container; collRid: string }> {
  const { container: monitored } = await db.containers.create({
    id: uniqueName("data"),
    partitionKey: { paths: ["/pk"], version: 2 },
  });
  const { container: leases } = await db.containers.create({
    id: uniqueName("leases"),
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  const collRid = (await monitored.read()).resource?._rid as string;
  return { monitored, leases, collRid };
}

async function leaseDocs(leases: Container): Promise<Record<string, unknown>[]> {
  const { resources } = await leases.items.query<Record<string, unknown>>("SELECT * FROM c").fetchAll();
  return resources;
}

describe("lease prefix on an account with regional endpoints", () => {
  /**
   * Fake for what only Azure has: an account whose read names regional endpoints (acct-westus2…), so the
   * client's write endpoint differs from the endpoint it was configured with. The client is configured as
   * http://localhost:<port>/ and the account read is rewritten to name http://127.0.0.1:<port>/ as its only
   * region; both reach the emulator, and the SDK then sends every request to the "regional" one.
   */
  function clientWithRegionalEndpoint(): CosmosClient {
    const port = new URL(t.emulator.endpoint).port;
    const regional = `http://127.0.0.1:${port}/`;
    const regionalAccountRead: PluginConfig = {
      on: PluginOn.operation,
      plugin: async (context, _diagnostics, next) => {
        const response = await next(context);
        // The database account read: no resource type, empty path.
        if (context.resourceType === "" && context.path === "" && response.result) {
          const account = response.result as Record<string, unknown>;
          const locations = [{ name: "West US 2", databaseAccountEndpoint: regional }];
          account.writableLocations = locations;
          account.readableLocations = locations;
        }
        return response;
      },
    };
    // `plugins` is a real client option, marked @hidden in the SDK's typings.
    const options = {
      endpoint: `http://localhost:${port}/`,
      key: t.emulator.key,
      plugins: [regionalAccountRead],
    } as CosmosClientOptions;
    const client = new CosmosClient(options);
    extraClients.push(client);
    return client;
  }

  it("derives lease ids from the configured endpoint's host, as .NET does, not from the write endpoint", async () => {
    const { monitored, leases, collRid } = await containers();
    const client = clientWithRegionalEndpoint();
    const myMonitored = client.database(db.id).container(monitored.id);
    const myLeases = client.database(db.id).container(leases.id);
    await myMonitored.read();
    // Precondition: the fake works, the client writes to the regional endpoint.
    expect(new URL(await client.getWriteEndpoint()).hostname).toBe("127.0.0.1");

    const p = createChangeFeedProcessor<Doc>(
      { monitoredContainer: myMonitored, leaseContainer: myLeases, leaseContainerPrefix: "proc", ...FAST },
      async () => {},
    );
    running.push(p);
    await p.start();

    // .NET: processorName + CosmosClient.Endpoint.Host ("localhost") + "_" + db rid + "_" + container rid.
    const prefix = `proclocalhost_${dbRid}_${collRid}`;
    const ids = (await leaseDocs(leases)).map((d) => d.id).sort();
    expect(ids).toEqual([`${prefix}..0`, `${prefix}.fleet`, `${prefix}.info`]);

    // The estimator (the scale controller's view) finds the same leases.
    const lags = await estimateLag({
      monitoredContainer: myMonitored,
      leaseContainer: myLeases,
      leaseContainerPrefix: "proc",
    });
    expect(lags.map((l) => l.leaseToken)).toEqual(["0"]);
  });
});

/** Java's ChangeFeedState.toString(): base64url of the JSON with padding (Base64.getUrlEncoder()). */
function javaEncode(state: unknown): string {
  return Buffer.from(JSON.stringify(state)).toString("base64").replace(/\+/g, "-").replace(/\//g, "_");
}

function javaDecode(token: string): Record<string, unknown> {
  expect(token).toMatch(/^[A-Za-z0-9_-]+={0,2}$/);
  return JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
}

/** The raw etag of the feed after everything written so far (what Java stores as its continuation's token). */
async function currentFeedEtag(monitored: Container): Promise<string> {
  const it = monitored.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
  });
  let etag: string | undefined;
  for (;;) {
    const page = await it.readNext();
    if (page.statusCode === 304) break;
    etag = page.headers.etag as string;
  }
  if (!etag) throw new Error("no change feed page");
  return etag;
}

/**
 * A lease document as Java's epk-version processor writes it (ServiceItemLeaseV1: id, _etag, LeaseToken,
 * ContinuationToken, timestamp, Owner, version, feedRange — no Mode, no properties), and the .info document.
 */
async function writeJavaLease(leases: Container, prefix: string, continuationToken: string): Promise<string> {
  const id = `${prefix}..-FF`;
  await leases.items.create({
    id,
    LeaseToken: "-FF",
    ContinuationToken: continuationToken,
    timestamp: "2026-01-01T00:00:00.123456789Z",
    Owner: null,
    version: 1,
    feedRange: { Range: { min: "", max: "FF", isMinInclusive: true, isMaxInclusive: false } },
  });
  await leases.items.create({ id: `${prefix}.info` });
  return id;
}

describe("Java epk-version leases", () => {
  it("processes a Java lease from the position in its base64 state and checkpoints back into that state", async () => {
    const { monitored, leases, collRid } = await containers();
    for (const id of ["a0", "a1", "a2"]) await monitored.items.create<Doc>({ id, pk: id });
    const etag = await currentFeedEtag(monitored);
    for (const id of ["b0", "b1"]) await monitored.items.create<Doc>({ id, pk: id });

    const prefix = `java127.0.0.1_${dbRid}_${collRid}`;
    const state = {
      V: 1,
      Rid: collRid,
      Mode: "INCREMENTAL",
      StartFrom: { Type: "BEGINNING" },
      Continuation: {
        V: 1,
        Rid: collRid,
        Continuation: [{ token: etag, range: { min: "", max: "FF", isMinInclusive: true } }],
        Range: { min: "", max: "FF", isMinInclusive: true },
      },
    };
    const id = await writeJavaLease(leases, prefix, javaEncode(state));
    // The estimator reads from the position in the Java state too: b0 and b1 are pending.
    expect(
      await estimateLag({
        monitoredContainer: monitored,
        leaseContainer: leases,
        leaseContainerPrefix: "java",
      }),
    ).toEqual([{ leaseToken: "-FF", estimatedLag: 2, owner: null }]);

    const delivered: string[] = [];
    const checkpoints: string[] = [];
    const errors: unknown[] = [];
    const p = createChangeFeedProcessor<Doc>(
      {
        monitoredContainer: monitored,
        leaseContainer: leases,
        leaseContainerPrefix: "java",
        startFromBeginning: true, // would re-deliver a0..a2 if the Java position were ignored
        ...FAST,
      },
      async (docs) => {
        delivered.push(...docs.map((d) => d.id));
      },
    );
    p.on("checkpointed", (_token, token) => checkpoints.push(token));
    p.on("error", (e) => errors.push(e));
    running.push(p);
    await p.start();
    await waitUntil(
      "the changes after the Java checkpoint",
      () => delivered.length >= 2 && checkpoints.length > 0,
    );
    await p.stop();

    expect(delivered.sort()).toEqual(["b0", "b1"]);
    expect(errors).toEqual([]);
    const doc = (await leases.item(id, id).read<Record<string, unknown>>()).resource as Record<
      string,
      unknown
    >;
    // Rewritten in Java's shape: Java hosts read `feedRange` and the base64 state only.
    expect(doc.feedRange).toEqual({
      Range: { min: "", max: "FF", isMinInclusive: true, isMaxInclusive: false },
    });
    expect(doc).not.toHaveProperty("FeedRange");
    expect(doc).not.toHaveProperty("Mode");
    expect(doc.Owner).toBeNull();
    const written = javaDecode(doc.ContinuationToken as string) as typeof state;
    const { Continuation: writtenContinuation, ...writtenHead } = written;
    const { Continuation: originalContinuation, ...originalHead } = state;
    expect(writtenHead).toEqual(originalHead);
    expect(writtenContinuation.Continuation).toHaveLength(1);
    expect(writtenContinuation.Continuation[0].range).toEqual({ min: "", max: "FF", isMinInclusive: true });
    expect(writtenContinuation.Continuation[0].token).toBe(checkpoints.at(-1));
    expect(writtenContinuation.Continuation[0].token).not.toBe(originalContinuation.Continuation[0].token);
    expect(writtenContinuation.Continuation[0].token).toBe(await currentFeedEtag(monitored));
  });

  it("splits a Java lease into children Java hosts can read, losing nothing", async () => {
    const { monitored, leases, collRid } = await containers();
    for (const id of ["a0", "a1"]) await monitored.items.create<Doc>({ id, pk: id });
    const etag = await currentFeedEtag(monitored);
    const prefix = `javasplit127.0.0.1_${dbRid}_${collRid}`;
    const state = {
      V: 1,
      Rid: collRid,
      Mode: "INCREMENTAL",
      StartFrom: { Type: "NOW" },
      Continuation: {
        V: 1,
        Rid: collRid,
        Continuation: [{ token: etag, range: { min: "", max: "FF", isMinInclusive: true } }],
        Range: { min: "", max: "FF", isMinInclusive: true },
      },
    };
    await writeJavaLease(leases, prefix, javaEncode(state));
    const seen = new Set<string>();
    const splits: string[][] = [];
    const p = createChangeFeedProcessor<Doc>(
      { monitoredContainer: monitored, leaseContainer: leases, leaseContainerPrefix: "javasplit", ...FAST },
      async (docs) => {
        for (const d of docs) seen.add(d.id);
      },
    );
    p.on("split", (parent, children) => splits.push([parent, ...children]));
    running.push(p);
    await p.start();
    for (let i = 0; i < 40; i++) await monitored.items.create<Doc>({ id: `b${i}`, pk: `k${i}` });
    await waitUntil("some changes before the split", () => seen.size >= 20);
    t.emulator.splitRange(db.id, monitored.id, "0");
    for (let i = 40; i < 80; i++) await monitored.items.create<Doc>({ id: `b${i}`, pk: `k${i}` });
    await waitUntil("every change and the split", () => seen.size >= 80 && splits.length === 1);
    await p.stop();

    expect([...seen].filter((id) => id.startsWith("a"))).toEqual([]);
    const docs = (await leaseDocs(leases)).filter((d) => String(d.id).includes(".."));
    expect(docs.map((d) => d.LeaseToken).sort()).toEqual(splits[0].slice(1).sort());
    expect(docs).toHaveLength(2);
    for (const doc of docs) {
      expect(doc).not.toHaveProperty("FeedRange");
      expect(doc).not.toHaveProperty("Mode");
      const range = (doc.feedRange as { Range: { min: string; max: string } }).Range;
      expect(`${range.min}-${range.max}`).toBe(doc.LeaseToken);
      const child = javaDecode(doc.ContinuationToken as string) as typeof state;
      expect(child.Rid).toBe(collRid);
      expect(child.Continuation.Continuation).toHaveLength(1);
      expect(child.Continuation.Continuation[0].range).toMatchObject({ min: range.min, max: range.max });
      expect(child.Continuation.Continuation[0].token).toMatch(/^"\d+"$/);
    }
  });

  it("refuses a Java lease it cannot read from with a typed error and leaves it untouched", async () => {
    const { monitored, leases, collRid } = await containers();
    await monitored.items.create<Doc>({ id: "a0", pk: "a0" });
    const etag = await currentFeedEtag(monitored);
    const prefix = `javamulti127.0.0.1_${dbRid}_${collRid}`;
    // Two positions in one lease (Java asserts its processor never stores this): no single etag to read from.
    const token = javaEncode({
      V: 1,
      Rid: collRid,
      Mode: "INCREMENTAL",
      StartFrom: { Type: "NOW" },
      Continuation: {
        V: 1,
        Rid: collRid,
        Continuation: [
          { token: etag, range: { min: "", max: "7F" } },
          { token: etag, range: { min: "7F", max: "FF" } },
        ],
        Range: { min: "", max: "FF" },
      },
    });
    const id = await writeJavaLease(leases, prefix, token);
    const before = (await leases.item(id, id).read<Record<string, unknown>>()).resource as Record<
      string,
      unknown
    >;
    await expect(
      estimateLag({
        monitoredContainer: monitored,
        leaseContainer: leases,
        leaseContainerPrefix: "javamulti",
      }),
    ).rejects.toMatchObject({ code: "UnsupportedLease" });

    const errors: { code?: unknown }[] = [];
    const p = createChangeFeedProcessor<Doc>(
      { monitoredContainer: monitored, leaseContainer: leases, leaseContainerPrefix: "javamulti", ...FAST },
      async () => {},
    );
    p.on("error", (e) => errors.push(e as { code?: unknown }));
    running.push(p);
    await p.start();
    await waitUntil("an UnsupportedLease error", () => errors.some((e) => e.code === "UnsupportedLease"));
    await p.stop();

    const after = (await leases.item(id, id).read<Record<string, unknown>>()).resource as Record<
      string,
      unknown
    >;
    expect(after._etag).toBe(before._etag);
    expect(after.Owner).toBeNull();
    expect(after.ContinuationToken).toBe(token);
  });
});
