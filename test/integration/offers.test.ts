import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database, OfferDefinition } from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RANGE_COUNT_HEADER } from "../../packages/emulator/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";
import { ThroughputClock } from "../support/throughput-clock.js";

let t: TestEmulator;
let db: Database;
/** The budgets' clock: the throttling test stops it, so its burst gets one second's budget however slow the machine. */
const clock = new ThroughputClock();

beforeAll(async () => {
  t = await startTestEmulator({ throughputClock: clock.now });
  db = (await t.client.databases.create({ id: uniqueName("offers") })).database;
});
afterEach(() => clock.run());
afterAll(async () => {
  await t.close();
});

const errorOf = (p: Promise<unknown>): Promise<{ code?: number; message?: string }> =>
  p.then(
    () => ({}),
    (e: { code?: number; message?: string }) => e,
  );

async function rangeCount(id: string, database: Database = db): Promise<number> {
  const { resources } = await database.container(id).readPartitionKeyRanges().fetchAll();
  return resources.length;
}

describe("throughput at creation", () => {
  it("refuses values the service refuses (400, nothing created) and stays up", async () => {
    const cases: [string, Record<string, unknown>][] = [
      ["1e12 RU/s", { offerThroughput: 1e12 }],
      ["1e9 RU/s", { offerThroughput: 1e9 }],
      ["above 1,000,000", { offerThroughput: 1_000_100 }],
      ["not a multiple of 100", { offerThroughput: 450 }],
      ["below 400", { offerThroughput: 350 }],
      [
        "autoscale not a multiple of 1000",
        { initialHeaders: { "x-ms-cosmos-offer-autopilot-settings": '{"maxThroughput":1500}' } },
      ],
      [
        "autoscale below 1000",
        { initialHeaders: { "x-ms-cosmos-offer-autopilot-settings": '{"maxThroughput":500}' } },
      ],
      [
        "autoscale 1e12",
        { initialHeaders: { "x-ms-cosmos-offer-autopilot-settings": '{"maxThroughput":1e12}' } },
      ],
      [
        "both kinds",
        {
          offerThroughput: 400,
          initialHeaders: { "x-ms-cosmos-offer-autopilot-settings": '{"maxThroughput":1000}' },
        },
      ],
    ];
    for (const [what, options] of cases) {
      const id = uniqueName("bad");
      const e = await errorOf(db.containers.create({ id, partitionKey: "/pk" }, options));
      expect(e.code, what).toBe(400);
      expect(e.message, what).toMatch(/throughput|autopilot/i);
      expect(await errorOf(db.container(id).read()), what).toMatchObject({ code: 404 });
    }
    const e = await errorOf(t.client.databases.create({ id: uniqueName("bad") }, { offerThroughput: 450 }));
    expect(e.code).toBe(400);
    expect(e.message).toContain("between 400 and 1000000 inclusive in increments of 100");
    // The server still answers.
    const { resource } = await db.containers.create(
      { id: uniqueName("ok"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    expect(resource?.id).toBeDefined();
  });

  it("accepts the service's bounds: 400 and 1,000,000 manual, 1000 and 1,000,000 autoscale", async () => {
    for (const options of [
      { offerThroughput: 400 },
      { offerThroughput: 1_000_000 },
      { initialHeaders: { "x-ms-cosmos-offer-autopilot-settings": '{"maxThroughput":1000}' } },
      { initialHeaders: { "x-ms-cosmos-offer-autopilot-settings": '{"maxThroughput":1000000}' } },
    ]) {
      const { statusCode } = await db.containers.create(
        { id: uniqueName("ok"), partitionKey: "/pk" },
        options,
      );
      expect(statusCode).toBe(201);
    }
  });

  it("starts with the documented number of physical partitions", async () => {
    const create = async (options: Record<string, unknown>, database: Database = db) => {
      const id = uniqueName("r");
      await database.containers.create({ id, partitionKey: { paths: ["/pk"], version: 2 } }, options);
      return rangeCount(id, database);
    };
    // Dedicated manual: ROUNDUP(RU/s / 6000).
    expect(await create({ offerThroughput: 400 })).toBe(1);
    expect(await create({ offerThroughput: 6000 })).toBe(1);
    expect(await create({ offerThroughput: 10_000 })).toBe(2);
    expect(await create({ offerThroughput: 24_000 })).toBe(4);
    // Autoscale: ROUNDUP(max RU/s / 10,000).
    const autoscale = (max: number) => ({
      initialHeaders: { "x-ms-cosmos-offer-autopilot-settings": JSON.stringify({ maxThroughput: max }) },
    });
    expect(await create(autoscale(25_000))).toBe(3);
    expect(await create(autoscale(4000))).toBe(1);
    // Capped: 1,000,000 RU/s would be 167 partitions.
    expect(await create({ offerThroughput: 1_000_000 })).toBe(64);
    // The emulator's header still overrides.
    expect(await create({ offerThroughput: 24_000, initialHeaders: { [RANGE_COUNT_HEADER]: "2" } })).toBe(2);
    // Shared database: ROUNDUP(RU/s / 10,000).
    const { database: shared } = await t.client.databases.create(
      { id: uniqueName("shared") },
      { offerThroughput: 35_000 },
    );
    expect(await create({}, shared)).toBe(4);
  });

  it("the rangesPerContainer option overrides the rule", async () => {
    const other = await startTestEmulator({ rangesPerContainer: 3 });
    try {
      const { database } = await other.client.databases.create({ id: "d" });
      await database.containers.create({ id: "c", partitionKey: "/pk" }, { offerThroughput: 400 });
      expect(await rangeCount("c", database)).toBe(3);
    } finally {
      await other.close();
    }
  });
});

describe("offers API", () => {
  it("reads and replaces a container's manual throughput through the SDK", async () => {
    const { container, resource: def } = await db.containers.create(
      { id: uniqueName("m"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    const { resource: offer, offer: ref } = await container.readOffer();
    expect(offer).toMatchObject({
      offerType: "Invalid",
      offerVersion: "V2",
      resource: def?._self,
      offerResourceId: def?._rid,
      content: { offerThroughput: 400, offerIsRUPerMinuteThroughputEnabled: false },
    });
    expect(offer?.id).toMatch(/^[A-Za-z0-9]{4}$/);
    expect((offer as { _self?: string })._self).toBe(`offers/${offer?.id}/`);
    if (!offer || !ref) throw new Error("no offer");

    const replaced = await ref.replace({
      ...offer,
      content: { ...offer.content, offerThroughput: 800 },
    } as unknown as OfferDefinition);
    expect(replaced.statusCode).toBe(200);
    expect(replaced.resource?.content?.offerThroughput).toBe(800);
    expect((replaced.resource as { _etag?: string })._etag).not.toBe((offer as { _etag?: string })._etag);
    expect((await container.readOffer()).resource?.content?.offerThroughput).toBe(800);
    // By id, with the minimum the resource may be set to.
    const byId = await t.client.offer(offer.id as string).read();
    expect(byId.resource?.content?.offerThroughput).toBe(800);
    expect(byId.headers["x-ms-cosmos-min-throughput"]).toBe("400");
    expect(t.emulator.account.container(db.id, container.id).budget?.ruPerSecond).toBe(800);
  });

  it("refuses invalid replaces with 400 and a stale etag with 412", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("v"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    const { resource: offer, offer: ref } = await container.readOffer();
    if (!offer || !ref) throw new Error("no offer");
    const withThroughput = (n: number) =>
      ({ ...offer, content: { ...offer.content, offerThroughput: n } }) as unknown as OfferDefinition;
    for (const bad of [450, 350, 2_000_000, 1e12]) {
      expect(await errorOf(ref.replace(withThroughput(bad))), String(bad)).toMatchObject({ code: 400 });
    }
    expect(await errorOf(ref.replace({ ...offer, offerVersion: "V1" }))).toMatchObject({ code: 400 });
    // Autoscale settings on a manual offer need the migration header.
    const toAuto = {
      ...offer,
      content: { ...offer.content, offerAutopilotSettings: { maxThroughput: 4000 } },
    };
    const e = await errorOf(ref.replace(toAuto as unknown as OfferDefinition));
    expect(e.code).toBe(400);
    expect(e.message).toContain("x-ms-cosmos-migrate-offer-to-autopilot");
    // Nothing changed.
    expect((await container.readOffer()).resource?.content?.offerThroughput).toBe(400);

    await ref.replace(withThroughput(500));
    const stale = await errorOf(
      ref.replace(withThroughput(600), {
        accessCondition: { type: "IfMatch", condition: (offer as { _etag: string })._etag },
      }),
    );
    expect(stale.code).toBe(412);
    const current = (await ref.read()).resource as unknown as OfferDefinition & { _etag: string };
    const fresh = await ref.replace(withThroughput(600), {
      accessCondition: { type: "IfMatch", condition: current._etag },
    });
    expect(fresh.resource?.content?.offerThroughput).toBe(600);
  });

  it("keeps the minimum the service keeps after a raise (highest ever / 100)", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("min"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    const { resource: offer, offer: ref } = await container.readOffer();
    if (!offer || !ref) throw new Error("no offer");
    const withThroughput = (n: number) =>
      ({ ...offer, content: { offerThroughput: n } }) as unknown as OfferDefinition;
    await ref.replace(withThroughput(200_000));
    expect((await ref.read()).headers["x-ms-cosmos-min-throughput"]).toBe("2000");
    expect(await errorOf(ref.replace(withThroughput(1000)))).toMatchObject({ code: 400 });
    const lowered = await ref.replace(withThroughput(2000));
    expect(lowered.resource?.content?.offerMinimumThroughputParameters?.maxThroughputEverProvisioned).toBe(
      200_000,
    );
    // The layout stays: the emulator does not split on a raise.
    expect(await rangeCount(container.id)).toBe(1);
  });

  it("reads and replaces autoscale maxThroughput, and migrates with the service's headers", async () => {
    const { container } = await db.containers.create({
      id: uniqueName("a"),
      partitionKey: "/pk",
      maxThroughput: 4000,
    });
    const { resource: offer, offer: ref } = await container.readOffer();
    if (!offer || !ref) throw new Error("no offer");
    expect(offer.content?.offerAutopilotSettings?.maxThroughput).toBe(4000);
    expect(offer.content?.offerThroughput).toBe(400);
    const withMax = (n: number) =>
      ({
        ...offer,
        content: { ...offer.content, offerAutopilotSettings: { maxThroughput: n } },
      }) as unknown as OfferDefinition;
    const replaced = await ref.replace(withMax(6000));
    expect(replaced.resource?.content?.offerAutopilotSettings?.maxThroughput).toBe(6000);
    expect(t.emulator.account.container(db.id, container.id).budget?.ruPerSecond).toBe(6000);
    for (const bad of [6500, 500, 2_000_000]) {
      expect(await errorOf(ref.replace(withMax(bad))), String(bad)).toMatchObject({ code: 400 });
    }
    // Dropping the autoscale settings without the migration header is refused.
    expect(
      await errorOf(
        ref.replace({ ...offer, content: { offerThroughput: 400 } } as unknown as OfferDefinition),
      ),
    ).toMatchObject({
      code: 400,
    });
    // To manual: the current maximum becomes the manual RU/s.
    const manual = await ref.replace(offer, {
      initialHeaders: { "x-ms-cosmos-migrate-offer-to-manual-throughput": "true" },
    });
    expect(manual.resource?.content?.offerAutopilotSettings).toBeUndefined();
    expect(manual.resource?.content?.offerThroughput).toBe(6000);
    // Back to autoscale: MAX(1000, current RU/s, highest ever / 10), rounded to 1000.
    const auto = await ref.replace(manual.resource as unknown as OfferDefinition, {
      initialHeaders: { "x-ms-cosmos-migrate-offer-to-autopilot": "true" },
    });
    expect(auto.resource?.content?.offerAutopilotSettings?.maxThroughput).toBe(6000);
  });

  it("serves shared-database offers; a container without throughput of its own has none", async () => {
    const { database } = await t.client.databases.create(
      { id: uniqueName("sdb") },
      { offerThroughput: 1000 },
    );
    const { container } = await database.containers.create({ id: "inner", partitionKey: "/pk" });
    const noOffer = await container.readOffer();
    expect(noOffer.resource).toBeUndefined();
    expect(noOffer.offer).toBeUndefined();
    const { resource: offer, offer: ref } = await database.readOffer();
    if (!offer || !ref) throw new Error("no database offer");
    expect(offer.resource).toBe((await database.read()).resource?._self);
    expect(offer.content?.offerThroughput).toBe(1000);
    await ref.replace({ ...offer, content: { offerThroughput: 3000 } } as unknown as OfferDefinition);
    expect((await database.readOffer()).resource?.content?.offerThroughput).toBe(3000);
    // The shared budget of its containers changed at once.
    expect(t.emulator.account.container(database.id, "inner").budget?.ruPerSecond).toBe(3000);

    const { resources: all } = await t.client.offers.readAll().fetchAll();
    expect(all.some((o) => o.id === offer.id)).toBe(true);
    const { resources: found } = await t.client.offers
      .query({
        query: "SELECT * FROM root r WHERE r.resource = @link",
        parameters: [{ name: "@link", value: offer.resource as string }],
      })
      .fetchAll();
    expect(found.map((o) => o.id)).toEqual([offer.id]);
    // A database without throughput has no offer.
    expect((await db.readOffer()).resource).toBeUndefined();
  });

  it("drops the offer with its container and answers 404 for an unknown offer", async () => {
    const { container } = await db.containers.create(
      { id: uniqueName("gone"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    const { resource: offer } = await container.readOffer();
    await container.delete();
    const { resources: all } = await t.client.offers.readAll().fetchAll();
    expect(all.some((o) => o.id === offer?.id)).toBe(false);
    expect(await errorOf(t.client.offer(offer?.id as string).read())).toMatchObject({ code: 404 });
    const raw = await rawRequest(t.emulator.endpoint, t.emulator.key, "DELETE", "/offers/ZZZZ", {
      resourceId: "zzzz",
    });
    expect(raw.status).toBe(405);
  });

  it("applies a raised throughput at once: the 429s of a workload stop", async () => {
    const noRetry = t.newClient({
      connectionPolicy: {
        retryOptions: {
          maxRetryAttemptCount: 0,
          fixedRetryIntervalInMilliseconds: 0,
          maxWaitTimeInSeconds: 0,
        },
      },
    });
    // No refill while the test runs: the budget is the 400 RU the container starts with, then what the raise adds.
    clock.stop();
    const { container: created } = await db.containers.create(
      { id: uniqueName("hot"), partitionKey: "/pk" },
      { offerThroughput: 400 },
    );
    const container = noRetry.database(db.id).container(created.id);
    const meterName = `${db.id}/${created.id}`;
    // ~22 RU per 60 KB write (published charges): 100 need ~2,200 RU, far more than the 400 RU of one second.
    const burst = async (round: string) => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 100 }, (_, i) =>
          container.items.create({ id: `${round}${i}`, pk: "a", pad: "y".repeat(60_000) }),
        ),
      );
      return outcomes
        .filter((o) => o.status === "rejected")
        .map((o) => (o as PromiseRejectedResult).reason.code);
    };
    const before = await burst("x");
    expect(new Set(before)).toEqual(new Set([429]));
    // Admitted while the balance was positive, by count: the writes before the last admitted cost under 400 RU,
    // all admitted ones at least 400; every other one was throttled.
    const m = t.emulator.meter.snapshot()[meterName].create;
    const admitted = m?.count ?? 0;
    const ru = m?.ru ?? 0;
    expect(before.length).toBe(100 - admitted);
    expect(m?.throttled).toBe(before.length);
    expect(ru).toBeGreaterThanOrEqual(400);
    expect(ru - ru / admitted).toBeLessThan(400);
    expect(before.length).toBeGreaterThan(50);

    const { resource: offer, offer: ref } = await created.readOffer();
    if (!offer || !ref) throw new Error("no offer");
    await ref.replace({ ...offer, content: { offerThroughput: 10_000 } } as unknown as OfferDefinition);
    expect(await burst("y")).toEqual([]);
  });
});

describe("offers across a restart", () => {
  it("keep their id, throughput and enforced budget", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "offers-"));
    try {
      const first = await startTestEmulator({ dataDir });
      const { database } = await first.client.databases.create({ id: "d" }, { offerThroughput: 1000 });
      await database.containers.create({ id: "shared", partitionKey: "/pk" });
      const { container } = await database.containers.create(
        { id: "own", partitionKey: "/pk" },
        { offerThroughput: 400 },
      );
      const own = await container.readOffer();
      const dbOffer = await database.readOffer();
      await own.offer?.replace({
        ...own.resource,
        content: { offerThroughput: 700 },
      } as unknown as OfferDefinition);
      await dbOffer.offer?.replace({
        ...dbOffer.resource,
        content: { offerThroughput: 2000 },
      } as unknown as OfferDefinition);
      await first.close();

      const second = await startTestEmulator({ dataDir });
      try {
        const d = second.client.database("d");
        const ownAfter = await d.container("own").readOffer();
        expect(ownAfter.resource?.id).toBe(own.resource?.id);
        expect(ownAfter.resource?.content?.offerThroughput).toBe(700);
        // The service adds offerLastReplaceTimestamp after a replace (not in the SDK's type).
        const content = ownAfter.resource?.content as { offerLastReplaceTimestamp?: number } | undefined;
        expect(content?.offerLastReplaceTimestamp).toBeGreaterThan(0);
        expect((await d.readOffer()).resource?.content?.offerThroughput).toBe(2000);
        expect(second.emulator.account.container("d", "own").budget?.ruPerSecond).toBe(700);
        expect(second.emulator.account.container("d", "shared").budget?.ruPerSecond).toBe(2000);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
