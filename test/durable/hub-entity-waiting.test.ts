/**
 * An entity request waiting for its sender's previous one (entity-order.ts) must not be stranded when that previous
 * one is applied by ANOTHER host: host X's feed brought the waiting request (X keeps it in its snapshot of the
 * entity, nothing committed), host Y — whose snapshot of the entity predates the waiting request — applies the
 * previous one. The only news X then gets is the entity's instance document from its feed: X must look at the
 * entity again, or the waiting request stays a message for ever. Counts only: the test waits for the outcome.
 */
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { entityOperationMessage, type RequestWire } from "../../src/devhost/durable/entity-engine.js";
import type { CosmosTaskHub } from "../../src/devhost/durable/hub.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { until } from "../support/until.js";
import { createHub, stopAll, unthrottledHubContainers } from "./hub-harness.js";
import { type CounterState, invokeCounter } from "./ordered-counter.js";

const HUB = "WaitHub";
const ENTITY = "@counter@w";
/** X reads its feed this seldom: Y's whole step fits between two of X's reads. */
const X_FEED_POLL_MS = 5_000;

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
    const x = createHub({
      ...spec,
      instanceName: "X",
      options: { invokeEntity: invokeCounter, feedPollDelayMs: X_FEED_POLL_MS },
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

    const final = await until("the waiting request to be applied", async () => {
      const s = await state();
      return s?.count === 3 ? s : undefined;
    }).catch(async (e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(await state())}`);
    });
    expect(final).toEqual({ count: 3, last: { client: 1, orch: 2 }, disorder: [] });
  });
});
