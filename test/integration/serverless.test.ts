import type { Container, CosmosClient, Database } from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SERVERLESS_RU_PER_PARTITION } from "../../packages/emulator/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { ThroughputClock } from "../support/throughput-clock.js";

// An Azure account created serverless (capabilities: EnableServerless), as infra/bicep provisions by default: the
// emulator's capacityMode "serverless" answers as it does.
let t: TestEmulator;
let db: Database;
let noRetry: CosmosClient;
const clock = new ThroughputClock();

beforeAll(async () => {
  t = await startTestEmulator({ capacityMode: "serverless", throughputClock: clock.now });
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("serverless") })).database;
  noRetry = t.newClient({
    connectionPolicy: {
      retryOptions: { maxRetryAttemptCount: 0, fixedRetryIntervalInMilliseconds: 0, maxWaitTimeInSeconds: 0 },
    },
  });
});
afterEach(() => clock.run());
afterAll(async () => {
  noRetry?.dispose();
  await t.close();
});

const codeOf = (e: unknown) => (e as { code?: number }).code;
const messageOf = (e: unknown) => String((e as Error).message);

/** Writes ~1 MB documents one by one until one is throttled; returns how many were admitted and each one's charge. */
async function writesUntilThrottled(
  c: Container,
  prefix: string,
): Promise<{ admitted: number; charge: number; refusal: unknown }> {
  const pad = "x".repeat(1_000_000);
  let charge = 0;
  for (let i = 0; ; i++) {
    try {
      const res = await c.items.create({ id: `${prefix}${i}`, pk: "a", pad });
      charge = res.requestCharge;
    } catch (e) {
      return { admitted: i, charge, refusal: e };
    }
  }
}

describe("a serverless account", () => {
  it("refuses throughput on a new container or database with the service's 400", async () => {
    const container = await db.containers
      .create({ id: uniqueName("c"), partitionKey: "/pk" }, { offerThroughput: 400 })
      .catch((e: unknown) => e);
    expect(codeOf(container)).toBe(400);
    expect(messageOf(container)).toContain(
      "Setting offer throughput or autopilot on container is not supported for serverless accounts.",
    );
    const database = await t.client.databases
      .create({ id: uniqueName("db"), throughput: 400 })
      .catch((e: unknown) => e);
    expect(codeOf(database)).toBe(400);
    expect(messageOf(database)).toContain("on database is not supported for serverless accounts.");
  });

  it("answers the offers API with the service's 400", async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    const read = await container.readOffer().catch((e: unknown) => e);
    expect(codeOf(read)).toBe(400);
    expect(messageOf(read)).toContain(
      "Reading or replacing offers is not supported for serverless accounts.",
    );
    const list = await t.client.offers
      .readAll()
      .fetchAll()
      .catch((e: unknown) => e);
    expect(codeOf(list)).toBe(400);
  });

  it("serves a container up to 5,000 RU/s per physical partition, then 429s, and a split adds a partition's worth", async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    const c = noRetry.database(db.id).container(container.id);
    // No refill while the clock is stopped: the budget is one second's worth, whatever the machine's speed. A
    // request is admitted while the balance is positive, so writes of `charge` RU are admitted until their sum
    // reaches the capacity.
    clock.stop();
    const first = await writesUntilThrottled(c, "before-");
    expect(first.charge).toBeGreaterThan(100);
    expect(first.admitted).toBe(Math.ceil(SERVERLESS_RU_PER_PARTITION / first.charge));
    expect(codeOf(first.refusal)).toBe(429);
    expect(messageOf(first.refusal)).toContain(
      `serverless container's capacity of ${SERVERLESS_RU_PER_PARTITION} RU/s`,
    );

    // A split makes two physical partitions: 10,000 RU/s, the extra 5,000 usable at once (and the debt forgiven).
    t.emulator.splitRange(db.id, container.id, "0");
    const after = await writesUntilThrottled(c, "after-");
    expect(codeOf(after.refusal)).toBe(429);
    expect(after.admitted).toBe(Math.ceil(SERVERLESS_RU_PER_PARTITION / first.charge));
  });
});
