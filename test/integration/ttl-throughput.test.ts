import { ChangeFeedMode, ChangeFeedStartFrom, type Database, StatusCodes } from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { RuModel } from "../../packages/emulator/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { ThroughputClock } from "../support/throughput-clock.js";

let t: TestEmulator;
let db: Database;
/** The emulator's document clock (_ts, TTL expiry): it stands still until a test moves it. */
let nowMs = Date.now();
const advance = (ms: number) => {
  nowMs += ms;
};
/** The budgets' clock: the throttling tests stop it, so a burst gets one second's budget however slow the machine. */
const clock = new ThroughputClock();

beforeAll(async () => {
  // A long sweep interval: these tests decide when purges happen.
  t = await startTestEmulator({
    ttlSweepIntervalMs: 3_600_000,
    now: () => nowMs,
    throughputClock: clock.now,
  });
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("ttl") })).database;
});
afterEach(() => clock.run());
afterAll(async () => {
  await t.close();
});

// Expiry is judged on the emulator's clock, moved by hand: a document with ttl 1 expires at (_ts + 1) s, which
// on a real clock can be anywhere from 1 ms to 1 s after it was written.
describe("TTL", () => {
  it("hides expired items at once from reads, queries and the latest-version feed, before any purge", async () => {
    const { container, resource } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      defaultTtl: 1,
    });
    expect(resource?.defaultTtl).toBe(1);
    await container.items.create({ id: "short", pk: "a" });
    await container.items.create({ id: "forever", pk: "a", ttl: -1 });
    await container.items.create({ id: "long", pk: "a", ttl: 3600 });
    expect((await container.item("short", "a").read()).statusCode).toBe(200);
    advance(2_000);
    expect((await container.item("short", "a").read()).statusCode).toBe(StatusCodes.NotFound);
    const { resources } = await container.items.query<{ id: string }>("SELECT * FROM c").fetchAll();
    expect(resources.map((d) => d.id).sort()).toEqual(["forever", "long"]);
    const feed = await container.items
      .getChangeFeedIterator<{ id: string }>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() })
      .readNext();
    expect(feed.result.map((d) => d.id).sort()).toEqual(["forever", "long"]);
    // A create over the expired (not yet purged) item succeeds.
    const again = await container.items.create({ id: "short", pk: "a", ttl: 3600 });
    expect(again.statusCode).toBe(201);
  });

  it("expires exactly ttl seconds after the write, wherever in its second the write falls", async () => {
    const { container } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      defaultTtl: 1,
    });
    // Written 900 ms into a second: counting from _ts (whole seconds) would expire it 100 ms later.
    nowMs = Math.floor(nowMs / 1000) * 1000 + 1_900;
    await container.items.create({ id: "edge", pk: "a" });
    advance(999);
    expect((await container.item("edge", "a").read()).statusCode).toBe(200);
    advance(1);
    expect((await container.item("edge", "a").read()).statusCode).toBe(StatusCodes.NotFound);
    // An item ttl the same way, and from its last write (a replace restarts it).
    await container.items.create({ id: "own", pk: "a", ttl: 2 });
    advance(1_500);
    await container.item("own", "a").replace({ id: "own", pk: "a", ttl: 2 });
    advance(1_999);
    expect((await container.item("own", "a").read()).statusCode).toBe(200);
    advance(1);
    expect((await container.item("own", "a").read()).statusCode).toBe(StatusCodes.NotFound);
    await container.delete(); // its expired items are not the purge test's
  });

  it("ignores item ttl when the container has no defaultTtl, and validates ttl values", async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    await container.items.create({ id: "x", pk: "a", ttl: 1 });
    advance(2_000);
    expect((await container.item("x", "a").read()).statusCode).toBe(200);
    await expect(container.items.create({ id: "bad", pk: "a", ttl: 0 })).rejects.toMatchObject({ code: 400 });
    await expect(
      container.items.create({ id: "bad2", pk: "a", ttl: null as unknown as number }),
    ).rejects.toMatchObject({
      code: 400,
    });
  });

  it("purges expired items in the background and reports them as TTL deletes in all-versions mode", async () => {
    const { container } = await db.containers.create({
      id: uniqueName("c"),
      partitionKey: "/pk",
      defaultTtl: -1,
    });
    const it = container.items.getChangeFeedIterator<{
      current: { id?: string };
      previous?: { id: string };
      metadata: { operationType: string; timeToLiveExpired?: boolean; id?: string };
    }>({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    await it.readNext();
    await container.items.create({ id: "e", pk: "a", ttl: 1 });
    await container.items.create({ id: "kept", pk: "a" });
    advance(2_000);
    expect(t.emulator.purgeExpired()).toBe(1);
    const items = [];
    for (;;) {
      const res = await it.readNext();
      if (res.statusCode === 304) break;
      items.push(...res.result);
    }
    expect(items.map((x) => `${x.metadata.operationType}:${x.current.id ?? x.metadata.id}`)).toEqual([
      "create:e",
      "create:kept",
      "delete:e",
    ]);
    // A TTL expiry is a delete in the service's shape: an empty `current`, the id in the metadata and no `previous`
    // (Microsoft's CFP/AllVersionsAndDeletes/BuilderTests.cs asserts Previous null on an expiry).
    expect(items[2].metadata.timeToLiveExpired).toBe(true);
    expect(items[2].current).toEqual({});
    expect(items[2].metadata.id).toBe("e");
    expect(items[2]).not.toHaveProperty("previous");
    expect(Object.keys(items[0].metadata)).not.toContain("id");
  });

  it("runs the background sweeper on its own", async () => {
    let sweeperNow = Date.now();
    const fast = await startTestEmulator({ ttlSweepIntervalMs: 100, now: () => sweeperNow });
    try {
      const d = (await fast.client.databases.create({ id: "sweep" })).database;
      const { container } = await d.containers.create({ id: "c", partitionKey: "/pk", defaultTtl: 1 });
      await container.items.create({ id: "e", pk: "a" });
      const c = fast.emulator.account.container("sweep", "c");
      expect(c.docs.size).toBe(1);
      sweeperNow += 2_000;
      // Nobody calls purgeExpired: the sweeper's own timer removes it.
      await waitUntil("the sweeper to purge the expired document", () => c.docs.size === 0);
    } finally {
      await fast.close();
    }
  });
});

describe("request units and provisioned throughput", () => {
  it("charges reads and writes by size as the service's published charges", async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    const small = await container.items.create({ id: "s", pk: "a", v: "x" });
    const big = await container.items.create({ id: "b", pk: "a", v: "x".repeat(5000) });
    expect(big.requestCharge).toBeGreaterThan(small.requestCharge);
    expect(small.requestCharge).toBeGreaterThanOrEqual(RuModel.writeMinimum);
    expect((await container.item("s", "a").read()).requestCharge).toBe(1);
    const bigBytes = Buffer.byteLength(JSON.stringify(big.resource));
    expect(bigBytes).toBeGreaterThan(4 * 1024);
    expect(bigBytes).toBeLessThan(8 * 1024);
    // Published: a 4 KB read 1.14 RU, an 8 KB one 1.33 (understand-request-unit-consumption).
    const bigRead = (await container.item("b", "a").read()).requestCharge;
    expect(bigRead).toBeGreaterThan(1.14);
    expect(bigRead).toBeLessThan(1.33);
    // The 110 KB create (555.7 RU before): published 22.67 RU at 64 KB and 48.19 at 128 KB, plus its few
    // indexed paths; its read 4.76 to 9.95.
    const large = await container.items.create({ id: "l", pk: "a", v: "x".repeat(110 * 1024) });
    expect(large.requestCharge).toBeGreaterThan(22.67);
    expect(large.requestCharge).toBeLessThan(48.19 + 1);
    const largeRead = (await container.item("l", "a").read()).requestCharge;
    expect(largeRead).toBeGreaterThan(4.76);
    expect(largeRead).toBeLessThan(9.95);
    const q = await container.items.query("SELECT * FROM c").fetchAll();
    expect(q.requestCharge).toBeGreaterThan(RuModel.queryBase);
    const meter = t.emulator.meter.snapshot()[`${db.id}/${container.id}`];
    expect(meter.create?.count).toBe(3);
    expect(meter.read?.ru).toBeCloseTo(1 + bigRead + largeRead, 2);
    // A failed request is charged too (as the service does), and metered.
    const miss = await container.item("missing", "a").read();
    expect(miss.statusCode).toBe(404);
    expect(miss.requestCharge).toBe(RuModel.failedRequest);
    expect(t.emulator.meter.snapshot()[`${db.id}/${container.id}`].read?.count).toBe(4);
  });

  it("answers 429 with x-ms-retry-after-ms above the budget, and the SDK's retry then succeeds", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("c"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    const name = `${db.id}/${container.id}`;
    // ~5.4 RU per write: 200 writes need ~1100 RU, nearly 3 s of a 400 RU/s budget. The budget stands still until
    // the first 429 (so one comes, by count, however slowly the writes arrive), then refills in real time for the
    // SDK's retries.
    clock.stop(() => (t.emulator.meter.snapshot()[name]?.create?.throttled ?? 0) > 0);
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => container.items.create({ id: `d${i}`, pk: `p${i % 7}`, n: i })),
    );
    expect(results.every((r) => r.statusCode === 201)).toBe(true);
    const m = t.emulator.meter.snapshot()[name];
    expect(m.create?.throttled ?? 0).toBeGreaterThan(0);
    const { resources } = await container.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
    expect(resources[0]).toBe(200);
  });

  it("surfaces the 429 when the client is told not to retry", async () => {
    const noRetry = t.newClient({
      connectionPolicy: {
        retryOptions: {
          maxRetryAttemptCount: 0,
          fixedRetryIntervalInMilliseconds: 0,
          maxWaitTimeInSeconds: 0,
        },
      },
    });
    const { container } = await db.containers.create(
      { id: uniqueName("c"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    const c = noRetry.database(db.id).container(container.id);
    // No refill: 150 writes of ~22 RU need ~3,300 RU against the container's 400, whatever the machine's speed.
    clock.stop();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 150 }, (_, i) =>
        c.items.create({ id: `d${i}`, pk: "a", pad: "y".repeat(60_000) }),
      ),
    );
    const throttled = outcomes.filter((o) => o.status === "rejected");
    expect(throttled.length).toBeGreaterThan(0);
    const err = (throttled[0] as PromiseRejectedResult).reason as {
      code: number;
      retryAfterInMs?: number;
      headers?: Record<string, string>;
    };
    expect(err.code).toBe(429);
    expect(Number(err.headers?.["x-ms-retry-after-ms"])).toBeGreaterThan(0);
  });

  it("returns session tokens and content paths on document operations", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("c"), partitionKey: "/pk" },
      { offerThroughput: 20_000 },
    );
    const r = await container.items.create({ id: "a", pk: "a" });
    expect(r.headers["x-ms-session-token"]).toMatch(/^\d+:-1#\d+$/);
    expect(r.headers["x-ms-content-path"]).toBe((await container.read()).resource?._rid);
  });
});
