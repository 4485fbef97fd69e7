import {
  BulkOperationType,
  ChangeFeedMode,
  type ChangeFeedPullModelIterator,
  ChangeFeedStartFrom,
  type Container,
  type Database,
  type OperationInput,
  StatusCodes,
} from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { estimateLag } from "../../packages/changefeed/src/estimator.js";
import { createChangeFeedProcessor } from "../../packages/changefeed/src/processor.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { keysPerRange } from "../support/pending-per-range.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";
import { drainFeed, readFeed } from "../support/raw-feed.js";
import { emulatorsOnOneFolder, lsnOf, twoRangeContainer } from "../support/restartable-emulator.js";

/*
 * A transactional batch commits with ONE LSN on its physical partition, and the change feed never splits an LSN:
 * a page that reaches maxItemCount in the middle of one LSN's changes takes the rest of them (it may exceed
 * maxItemCount), and its continuation points after that LSN. The service's behaviour, in a maintainer's words
 * (https://github.com/Azure/azure-cosmos-dotnet-v3/issues/2644): "Change Feed cannot break the transactional scope,
 * if you create 10 item in a Sproc execution or using Transactional Batch, they all have the same LSN, if you read
 * the Change Feed with a max items header of 5, the backend will always return 10, because it cannot break the
 * transaction boundary." And the Azure Functions Cosmos DB trigger docs (maxItemsPerInvocation): "transaction scope
 * is preserved when reading items from the change feed. As a result, the number of items received could be higher
 * than the specified value so that the items changed by the same transaction are returned as part of one atomic
 * batch." (Microsoft's Linux emulator was reported not to: Azure/azure-cosmos-db-emulator-docker#324.)
 * Each operation of a batch took its own LSN before: every test here failed then.
 */

interface Doc {
  id: string;
  pk: string;
  n?: number;
  _lsn?: number;
}

interface AvadItem {
  current?: Doc;
  previous?: Doc;
  metadata: { operationType: string; lsn: number; previousImageLSN: number; id?: string };
}

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("batchlsn") })).database;
});
afterAll(async () => {
  await t.close();
});

/** A container with one physical range (`/pk`, V2 hash). */
async function oneRange(): Promise<Container> {
  const { container } = await db.containers.create(
    { id: uniqueName("c"), partitionKey: { paths: ["/pk"], version: 2 } },
    { offerThroughput: 6_000 },
  );
  return container;
}

const creates = (pk: string, ids: string[]): OperationInput[] =>
  ids.map((id) => ({ operationType: BulkOperationType.Create, resourceBody: { id, pk } }));

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/** Runs a transactional batch through the SDK; returns the session token's LSN of its answer. */
async function batch(c: Container, pk: string, operations: OperationInput[]): Promise<number> {
  const res = await c.items.batch(operations, pk);
  expect(res.code).toBe(200);
  expect(res.result?.every((r) => r.statusCode < 400)).toBe(true);
  return lsnOf(res.headers["x-ms-session-token"] as string);
}

async function single(c: Container, id: string, pk: string): Promise<number> {
  const res = await c.items.create<Doc>({ id, pk });
  return lsnOf(res.headers["x-ms-session-token"] as string);
}

/** Every page of an iterator until a 304 (the pages' items, in order), and the last continuation. */
async function pages<T>(it: ChangeFeedPullModelIterator<T>): Promise<{ pages: T[][]; token: string }> {
  const out: T[][] = [];
  for (;;) {
    const res = await it.readNext();
    if (res.statusCode === StatusCodes.NotModified) return { pages: out, token: res.continuationToken };
    out.push(res.result);
  }
}

function latest(c: Container, maxItemCount: number, from = ChangeFeedStartFrom.Beginning()) {
  return c.items.getChangeFeedIterator<Doc>({ changeFeedStartFrom: from, maxItemCount });
}

/** An all-versions-and-deletes iterator started (pinned by its first, empty read) before the writes. */
async function allVersionsFromNow(c: Container, maxItemCount: number) {
  const it = c.items.getChangeFeedIterator<AvadItem>({
    changeFeedStartFrom: ChangeFeedStartFrom.Now(),
    changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    maxItemCount,
  });
  expect((await it.readNext()).statusCode).toBe(304);
  return it;
}

const avadId = (x: AvadItem) => x.current?.id ?? x.metadata.id;

describe("a transactional batch commits with one LSN", () => {
  it("a batch of 10 creates: all 10 `_lsn` equal, the session token one further, the next write one more", async () => {
    const c = await oneRange();
    const before = await single(c, "before", "p");
    const batchLsn = await batch(c, "p", creates("p", ids("b", 10)));
    expect(batchLsn).toBe(before + 1);
    expect(await single(c, "after", "p")).toBe(before + 2);
    const { pages: all } = await pages(latest(c, 100));
    const lsn = Object.fromEntries(all.flat().map((d) => [d.id, d._lsn]));
    expect(lsn).toEqual({
      before,
      ...Object.fromEntries(ids("b", 10).map((id) => [id, batchLsn])),
      after: before + 2,
    });
  });

  it("the change feed with maxItemCount 5 answers one page of 10, in both modes; query paging is unchanged", async () => {
    const c = await oneRange();
    const avad = await allVersionsFromNow(c, 5);
    const batchLsn = await batch(c, "p", creates("p", ids("b", 10)));

    const lv = await pages(latest(c, 5));
    expect(lv.pages.map((p) => p.map((d) => d.id))).toEqual([ids("b", 10)]);
    expect(lv.pages[0].every((d) => d._lsn === batchLsn)).toBe(true);

    const av = await pages(avad);
    expect(av.pages.map((p) => p.map(avadId))).toEqual([ids("b", 10)]);
    for (const x of av.pages[0]) {
      expect(x.metadata).toMatchObject({ operationType: "create", lsn: batchLsn, previousImageLSN: 0 });
      expect(x.current?._lsn).toBe(batchLsn);
    }

    // A second batch (3 replaces, 2 deletes, 1 create) is one LSN further; its metadata names the first's LSN as
    // the previous image of what it replaced or deleted. The latest-version feed shows it without the deletes.
    const second: OperationInput[] = [
      ...["b0", "b1", "b2"].map((id) => ({
        operationType: BulkOperationType.Replace,
        id,
        resourceBody: { id, pk: "p", n: 2 },
      })),
      { operationType: BulkOperationType.Delete, id: "b3" },
      { operationType: BulkOperationType.Delete, id: "b4" },
      { operationType: BulkOperationType.Create, resourceBody: { id: "c0", pk: "p" } },
    ];
    expect(await batch(c, "p", second)).toBe(batchLsn + 1);
    const av2 = await pages(
      c.items.getChangeFeedIterator<AvadItem>({
        changeFeedStartFrom: ChangeFeedStartFrom.Continuation(av.token),
        changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
        maxItemCount: 2,
      }),
    );
    expect(av2.pages).toHaveLength(1);
    expect(av2.pages[0].map((x) => [avadId(x), x.metadata.operationType, x.metadata.lsn])).toEqual([
      ["b0", "replace", batchLsn + 1],
      ["b1", "replace", batchLsn + 1],
      ["b2", "replace", batchLsn + 1],
      ["b3", "delete", batchLsn + 1],
      ["b4", "delete", batchLsn + 1],
      ["c0", "create", batchLsn + 1],
    ]);
    expect(av2.pages[0].map((x) => x.metadata.previousImageLSN)).toEqual([...Array(5).fill(batchLsn), 0]);
    const lv2 = await pages(latest(c, 2, ChangeFeedStartFrom.Continuation(lv.token)));
    expect(lv2.pages.map((p) => p.map((d) => d.id))).toEqual([["b0", "b1", "b2", "c0"]]);

    // Query pages count documents, not LSNs: the 9 documents left (8 of the first batch and c0, all of one LSN
    // or the next) come 5 and 4.
    const q = c.items.query<Doc>("SELECT * FROM c WHERE STARTSWITH(c.id, 'b') OR c.id = 'c0'", {
      maxItemCount: 5,
    });
    const sizes: number[] = [];
    while (q.hasMoreResults()) {
      const page = await q.fetchNext();
      if (page.resources.length > 0) sizes.push(page.resources.length);
    }
    expect(sizes).toEqual([5, 4]);
  });

  it("3 single writes, a batch of 4, 2 singles with maxItemCount 2: the batch is never split (both modes)", async () => {
    const c = await oneRange();
    const avad = await allVersionsFromNow(c, 2);
    for (const id of ["s1", "s2", "s3"]) await single(c, id, "p");
    await batch(c, "p", creates("p", ["b1", "b2", "b3", "b4"]));
    for (const id of ["s4", "s5"]) await single(c, id, "p");
    const expected = [
      ["s1", "s2"],
      ["s3", "b1", "b2", "b3", "b4"],
      ["s4", "s5"],
    ];
    const lv = await pages(latest(c, 2));
    expect(lv.pages.map((p) => p.map((d) => d.id))).toEqual(expected);
    expect(lv.pages.map((p) => p.map((d) => d._lsn))).toEqual([
      [1, 2],
      [3, 4, 4, 4, 4],
      [5, 6],
    ]);
    const av = await pages(avad);
    expect(av.pages.map((p) => p.map(avadId))).toEqual(expected);

    // On the wire: from continuation "2" a page of 2 reaches its limit at the batch's first change, takes the rest
    // of its LSN and continues after it; from "1" it ends before the batch (s2, s3) and continues at s3.
    const from2 = await readFeed(t.emulator, db.id, c.id, { rangeId: "0", etag: '"2"', maxItems: 2 });
    expect(from2.docs.map((d) => d.id)).toEqual(["s3", "b1", "b2", "b3", "b4"]);
    expect(from2.etag).toBe('"4"');
    const from1 = await readFeed(t.emulator, db.id, c.id, { rangeId: "0", etag: '"1"', maxItems: 2 });
    expect(from1.docs.map((d) => d.id)).toEqual(["s2", "s3"]);
    expect(from1.etag).toBe('"3"');
  });

  it("a read over several ranges, a split and a merge keep the batch's changes together", async () => {
    const server = t.emulator;
    const c = await twoRangeContainer(t, uniqueName("multi"));
    const dbId = c.database.id;
    const [r0, r1] = await keysPerRange(c, 1);
    await single(c, "n0", r1.keys[0]);
    const batchLsn = await batch(c, r0.keys[0], creates(r0.keys[0], ["b0", "b1", "b2", "b3"]));
    await single(c, "n1", r1.keys[0]);
    await single(c, "n2", r1.keys[0]);
    // No range named: the whole container in commit order, 2 changes a page — but never half the batch.
    const first = await readFeed(server, dbId, "docs", { maxItems: 2 });
    expect(first.docs.map((d) => d.id)).toEqual(["n0", "b0", "b1", "b2", "b3"]);
    expect(first.etag).toBe(`"${r0.id}:${batchLsn},${r1.id}:1"`);
    const rest = await drainFeed(server, dbId, "docs", { maxItems: 2, etag: first.etag ?? "" });
    expect(rest.docs.map((d) => d.id)).toEqual(["n1", "n2"]);

    // The batch's partition key lands in one child of a split: its changes keep their one LSN there.
    const children = server.splitRange(dbId, "docs", r0.id);
    const perChild = await Promise.all(
      children.map((id) => drainFeed(server, dbId, "docs", { rangeId: id, maxItems: 1 })),
    );
    const holder = perChild.find((p) => p.docs.length > 0);
    expect(holder?.docs.map((d) => [d.id, d._lsn])).toEqual(
      ["b0", "b1", "b2", "b3"].map((id) => [id, batchLsn]),
    );
    expect(holder?.pages).toBe(1);

    // Merged back: still one LSN, one page of 4 with maxItemCount 1.
    const merged = server.mergeRanges(dbId, "docs", children[0], children[1]);
    const whole = await drainFeed(server, dbId, "docs", { rangeId: merged, maxItems: 1 });
    expect(whole.docs.map((d) => [d.id, d._lsn])).toEqual(
      ["b0", "b1", "b2", "b3"].map((id) => [id, batchLsn]),
    );
    expect(whole.pages).toBe(1);
  });
});

describe("the processor and the estimator with a transaction", () => {
  it("with maxItemsPerInvocation 2 the handler gets the batch in one call, checkpointed after it", async () => {
    const { monitored, leases } = await processorContainers(db, 1);
    for (const id of ["s1", "s2", "s3"]) await single(monitored, id, "p");
    const batchLsn = await batch(monitored, "p", creates("p", ["b1", "b2", "b3", "b4"]));
    for (const id of ["s4", "s5"]) await single(monitored, id, "p");
    const calls: string[][] = [];
    const checkpoints: [string, number][] = [];
    const p = createChangeFeedProcessor<Doc>(
      {
        monitoredContainer: monitored,
        leaseContainer: leases,
        instanceName: "tx",
        startFromBeginning: true,
        maxItemsPerInvocation: 2,
        maxCheckpointDelay: 0,
        handoffTimeout: 0,
        ...FAST_INTERVALS,
      },
      async (docs) => {
        calls.push(docs.map((d) => d.id));
      },
    );
    p.on("checkpointed", (_token, etag, documents) => checkpoints.push([etag, documents]));
    await p.start();
    try {
      await waitUntil("every change handled and checkpointed", () => checkpoints.at(-1)?.[0] === '"6"');
    } finally {
      await p.stop();
    }
    expect(calls).toEqual([
      ["s1", "s2"],
      ["s3", "b1", "b2", "b3", "b4"],
      ["s4", "s5"],
    ]);
    // maxCheckpointDelay 0: one checkpoint per call, the batch's after its LSN.
    expect(checkpoints).toEqual([
      ['"2"', 2],
      [`"${batchLsn}"`, 5],
      ['"6"', 2],
    ]);

    // Pending now: a batch of 10 counts as 1 (session LSN − first pending `_lsn` + 1, .NET's formula), as on the
    // service, where the 10 share one LSN; one more single write makes it 2.
    await batch(monitored, "p", creates("p", ids("late", 10)));
    const lag = () => estimateLag({ monitoredContainer: monitored, leaseContainer: leases });
    expect((await lag()).map((l) => l.estimatedLag)).toEqual([1]);
    await single(monitored, "late-single", "p");
    expect((await lag()).map((l) => l.estimatedLag)).toEqual([2]);
  });
});

describe("a persisted emulator restarted", () => {
  const folder = emulatorsOnOneFolder("cosmos-batch-lsn-");

  it("keeps a batch's one LSN: `_lsn`s, the session token, pages and all-versions metadata", async () => {
    const t1 = await folder.start();
    const c1 = (
      await (
        await t1.client.databases.create({ id: "tx" })
      ).database.containers.create(
        { id: "docs", partitionKey: { paths: ["/pk"], version: 2 } },
        { offerThroughput: 6_000 },
      )
    ).container;
    const pinned = await c1.items
      .getChangeFeedIterator<AvadItem>({
        changeFeedStartFrom: ChangeFeedStartFrom.Now(),
        changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
      })
      .readNext();
    expect(pinned.statusCode).toBe(304);
    const avadStart = pinned.continuationToken;
    await single(c1, "s1", "p");
    const batchLsn = await batch(c1, "p", creates("p", ids("b", 10)));
    await single(c1, "s2", "p");
    const before = await pages(latest(c1, 5));
    await folder.stop(t1);

    const t2 = await folder.start();
    const c2 = t2.client.database("tx").container("docs");
    const after = await pages(latest(c2, 5));
    expect(after.pages).toEqual(before.pages);
    expect(after.pages.map((p) => p.map((d) => d._lsn))).toEqual([
      [1, ...Array(10).fill(batchLsn)],
      [batchLsn + 1],
    ]);
    const av = await pages(
      c2.items.getChangeFeedIterator<AvadItem>({
        changeFeedStartFrom: ChangeFeedStartFrom.Continuation(avadStart),
        changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
        maxItemCount: 5,
      }),
    );
    expect(av.pages.map((p) => p.map((x) => x.metadata.lsn))).toEqual([
      [1, ...Array(10).fill(batchLsn)],
      [batchLsn + 1],
    ]);
    const now = await readFeed(t2.emulator, "tx", "docs", { rangeId: "0", etag: "*" });
    expect(lsnOf(now.sessionToken)).toBe(batchLsn + 1);
    expect(await batch(c2, "p", creates("p", ids("n", 3)))).toBe(batchLsn + 2);
  });
});
