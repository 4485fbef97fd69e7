/**
 * An entity request waiting for its sender's previous one (entity-order.ts) must not be stranded when that previous
 * one is applied by ANOTHER host: host X's feed brought the waiting request (X keeps it in its snapshot of the
 * entity, nothing committed), host Y — whose snapshot of the entity predates the waiting request — applies the
 * previous one. The only news X then gets is the entity's instance document from its feed: X must look at the
 * entity again, or the waiting request stays a message for ever. X's change feed reads are held (in its SDK
 * pipeline) while Y works, so X's next page is the instance document alone. Counts only: no time is judged.
 */
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import {
  entityOperationMessage,
  type RequestWire,
} from "../../packages/devhost/src/durable/entity-engine.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { faultPlugins } from "../support/faults.js";
import { createHub, Gate, stopAll, unthrottledHubContainers } from "./hub-harness.js";
import { type CounterState, invokeCounter } from "./ordered-counter.js";

const HUB = "WaitHub";
const ENTITY = "@counter@w";

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-wait") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

describe("entities: a request waiting for its predecessor", () => {
  it("applies once another host applied the predecessor", async () => {
    const containers = await unthrottledHubContainers(db);
    const spec = { ...containers, hubName: HUB, orchestrators: {}, activities: {} };
    // X's change feed reads of the hub's container wait at `feedHeld` while `holding`.
    let holding = false;
    const feedHeld = new Gate();
    const clientX = t.newClient(
      faultPlugins({
        match: (ctx) =>
          holding &&
          JSON.stringify(ctx.headers ?? {})
            .toLowerCase()
            .includes("incremental feed") &&
          decodeURIComponent(ctx.path ?? "").includes(`/colls/${containers.container.id}`),
        run: async (_ctx, next) => {
          await feedHeld.pass();
          return next();
        },
      }),
    );
    const database = clientX.database(db.id);
    const x = createHub({
      ...spec,
      container: database.container(containers.container.id),
      leaseContainer: database.container(containers.leaseContainer.id),
      instanceName: "X",
      options: { invokeEntity: invokeCounter },
    });
    // Y is never started: it runs the work items the test hands it, and reads no feed.
    const y = createHub({ ...spec, instanceName: "Y", options: { invokeEntity: invokeCounter } });
    hubs.push(x, y);
    const write = async (request: RequestWire) => {
      const doc = y.dispatcher.newMessageDoc(
        entityOperationMessage(ENTITY, request, new Date().toISOString()),
      );
      await containers.container.items.create(doc);
      return doc;
    };
    const state = async () => {
      const e = await y.readEntity("counter", "w");
      return e?.state === undefined ? undefined : (JSON.parse(e.state) as CounterState);
    };

    await x.start();
    // Y applies a first request (the client's) and keeps the entity's snapshot.
    const first = await write({
      id: "c1",
      op: "add",
      signal: true,
      input: JSON.stringify({ s: "client", n: 1 }),
    });
    await y.dispatcher.schedule(ENTITY, { message: first });
    await until("the first request to be applied", async () =>
      (await state())?.count === 1 ? true : undefined,
    );
    // The orchestration's second request reaches X first: X runs the entity, and the request waits.
    const before = x.dispatcher.counters.replays;
    const from = { parent: "orch", parentExecution: "e1" };
    await write({
      id: "o2",
      op: "add",
      signal: true,
      input: JSON.stringify({ s: "orch", n: 2 }),
      ...from,
      pos: 2,
      prev: 1,
    });
    await until("X to run the entity with the waiting request", async () =>
      x.dispatcher.counters.replays > before ? true : undefined,
    );
    expect((await state())?.count).toBe(1);
    holding = true;
    await feedHeld.reached("X's next change feed read to be held");
    // Y applies the predecessor from a snapshot without the waiting request (it never read the entity again).
    const predecessor = await write({
      id: "o1",
      op: "add",
      signal: true,
      input: JSON.stringify({ s: "orch", n: 1 }),
      ...from,
      pos: 1,
    });
    await y.dispatcher.schedule(ENTITY, { message: predecessor });
    expect((await state())?.count).toBe(2);
    // X's feed goes on: it brings the entity's instance document as Y left it (the predecessor's message is gone).
    feedHeld.open();

    const final = await until("the waiting request to be applied", async () => {
      const s = await state();
      return s?.count === 3 ? s : undefined;
    }).catch(async (e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(await state())}`);
    });
    expect(final).toEqual({ count: 3, last: { client: 1, orch: 2 }, disorder: [] });
  });
});
