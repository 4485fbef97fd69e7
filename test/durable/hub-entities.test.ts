import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import type { EntityInvoker } from "../../packages/devhost/src/durable/entity-engine.js";
import { entityHandler, runEntityHandler } from "../../packages/devhost/src/durable/testing-entities.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { counterOperation, useCounterOn } from "./counter-entity.js";
import {
  createHub,
  type Gen,
  hubContainers,
  isFinished,
  stopAll,
  waitForEntityState,
  waitForStatus,
} from "./hub-harness.js";

const counter = entityHandler((context) => {
  counterOperation(context);
});
/** Operations the counter ran, in order (`key:op:input`). */
const ran: string[] = [];
const invokeEntity: EntityInvoker = async (name, input) => {
  if (name !== "counter") return { thrown: new Error(`no entity ${name}`) };
  const op = input.batch[0];
  ran.push(`${input.self.key}:${op?.name}:${op?.input ?? ""}`);
  return runEntityHandler(counter, name, input);
};

const orchestrators: Record<string, Gen> = {
  useCounter: function* (ctx) {
    return yield* useCounterOn(ctx, ctx.df.getInput() as string);
  },
};

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-entities") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

/** A started hub with the counter entity, on fresh containers; its log collected. */
async function startedHub() {
  const log: string[] = [];
  const hub = createHub({
    ...(await hubContainers(db)),
    orchestrators,
    activities: {},
    log,
    options: { invokeEntity },
  });
  hubs.push(hub);
  await hub.start();
  return { hub, log };
}

describe("entities on the task hub", () => {
  it("callEntity, signalEntity, order, persisted state, a throwing operation rolled back", async () => {
    const { hub, log } = await startedHub();
    const id = uniqueName("e");
    await hub.startNew("useCounter", { instanceId: id, input: JSON.stringify("k1") });
    const status = await waitForStatus(hub, id, isFinished, log);
    expect(status.runtimeStatus).toBe("Completed");
    expect(status.output).toEqual({
      after: 16,
      error: expect.stringContaining("Operation 'poison' of entity '@counter@k1' failed"),
    });
    expect(ran).toEqual(["k1:add:1", "k1:add:2", "k1:add:3", "k1:poison:", "k1:add:10", "k1:get:"]);
  });
});

describe("entities: one sender's signals", () => {
  it("are applied one at a time in the order sent; entities stay out of the orchestration listing", async () => {
    const { hub } = await startedHub();
    ran.length = 0;
    for (let i = 1; i <= 20; i++) await hub.signalEntity("counter", "order", "add", JSON.stringify(i));
    const stored = await waitForEntityState(hub, "counter", "order", (r) => r?.state === "210");
    expect(stored?.state).toBe("210");
    expect(ran).toEqual(Array.from({ length: 20 }, (_, i) => `order:add:${i + 1}`));
    const listed = await hub.list({});
    expect(listed.instances.map((s) => s.instanceId)).not.toContain("@counter@order");
  });
});
