/**
 * Entity listing, entity status and clean-up on a REAL task hub (CosmosTaskHub on the emulator, real durable-functions
 * entity functions) through the durable HTTP API over loopback: `GET entities[/{name}]` lists the entities that have
 * a state, with the extension's filters and paging; `GET instances/@name@key` shows an entity as the extension shows
 * its entity scheduler; cleanEntityStorage removes deleted entities and releases locks whose owner is gone, with the
 * extension's counts; malformed parameters are 400s with a code. And a signal an orchestration sends in the episode
 * it returns in is delivered (DTFx sends every message of the last episode).
 */
import type { Container, Database } from "@azure/cosmos";
import type { EntityContext } from "durable-functions";
import * as df from "durable-functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDurableApiHandler } from "../../packages/devhost/src/durable/client-api.js";
import {
  durableClientInputData,
  ensureWebsiteHostname,
} from "../../packages/devhost/src/durable/client-binding.js";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { instanceDocOf, partitionKeyOf } from "../../packages/devhost/src/durable/documents.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { clientFor, serveDurableApi } from "./client-test-server.js";
import {
  createHub,
  entityInvoker,
  type Gen,
  hubContainers,
  isFinished,
  stopAll,
  waitForEntityState,
  waitForStatus,
} from "./hub-harness.js";

const HUB = "ListHub";

/** The samples' counter, with the extension's `delete` (what `DELETE entities/{name}/{key}` sends). */
function counter(context: EntityContext<unknown>) {
  const current = context.df.getState(() => 0) as number;
  switch (context.df.operationName) {
    case "add":
      context.df.setState(current + (context.df.getInput() as number));
      break;
    case "delete":
      context.df.destructOnExit();
      break;
  }
}

const orchestrators: Record<string, Gen> = {
  waits: function* (ctx) {
    return yield ctx.df.waitForExternalEvent("go");
  },
  signalsAndReturns: function* (ctx) {
    yield ctx.df.callEntity(new df.EntityId("counter", "last"), "add", 1);
    ctx.df.signalEntity(new df.EntityId("counter", "last"), "add", 10);
    return "done";
  },
};

let t: TestEmulator;
let db: Database;
let containers: { container: Container; leaseContainer: Container };
let hub: CosmosTaskHub;
let server: Awaited<ReturnType<typeof serveDurableApi>>;
const hubs: CosmosTaskHub[] = [];
const log: string[] = [];
const failures: string[] = [];

beforeAll(async () => {
  t = await startTestEmulator({ enforceThroughput: false });
  db = (await t.client.databases.create({ id: uniqueName("entity-listing") })).database;
  containers = await hubContainers(db);
  hub = createHub({
    ...containers,
    hubName: HUB,
    orchestrators,
    activities: {},
    log,
    options: { invokeEntity: entityInvoker({ counter, other: counter }) },
  });
  hubs.push(hub);
  await hub.start();
  server = await serveDurableApi((baseUrl) =>
    createDurableApiHandler({ hub, baseUrl, onError: (m) => failures.push(m) }),
  );
});

afterAll(async () => {
  await server?.close();
  await stopAll(hubs);
  await t?.close();
});

const api = (path: string) => `${server.baseUrl}/runtime/webhooks/durabletask/${path}`;

/** Waits until the entity's stored state is `state` (undefined: it has none). */
async function settled(name: string, key: string, state: string | undefined): Promise<void> {
  await waitForEntityState(
    hub,
    name,
    key,
    (r) => r !== undefined && (state === undefined ? !r.exists : r.state === state),
    log,
  );
}

interface Listed {
  entityId: { name: string; key: string };
  lastOperationTime: string;
  state: unknown;
}
async function list(path: string, token?: string): Promise<{ items: Listed[]; next: string | null }> {
  const res = await fetch(api(path), token ? { headers: { "x-ms-continuation-token": token } } : {});
  expect(res.status).toBe(200);
  return { items: (await res.json()) as Listed[], next: res.headers.get("x-ms-continuation-token") };
}
const ids = (items: Listed[]) => items.map((e) => `${e.entityId.name}/${e.entityId.key}`).sort();

describe("entity listing and status over the HTTP API", () => {
  let before: string;
  it("lists the entities that have a state, by name, with states on request, page by page", async () => {
    before = new Date(Date.now() - 1000).toISOString();
    const post = (path: string, body?: string, method = "POST") =>
      fetch(api(path), {
        method,
        ...(body ? { body, headers: { "content-type": "application/json" } } : {}),
      });
    expect((await post("entities/counter/a?op=add", "1")).status).toBe(202);
    expect((await post("entities/counter/b?op=add", "2")).status).toBe(202);
    expect((await post("entities/counter/gone?op=add", "3")).status).toBe(202);
    expect((await post("entities/Other/x?op=add", "5")).status).toBe(202);
    await settled("counter", "gone", "3");
    // DELETE entities/{name}/{key} signals "delete", as the extension's route does.
    expect((await post("entities/counter/gone", undefined, "DELETE")).status).toBe(202);
    await Promise.all([
      settled("counter", "a", "1"),
      settled("counter", "b", "2"),
      settled("counter", "gone", undefined),
      settled("other", "x", "5"),
    ]);

    const all = await list("entities");
    expect(ids(all.items)).toEqual(["counter/a", "counter/b", "other/x"]);
    expect(all.next).toBeNull();
    for (const e of all.items) {
      expect(e.state).toBeNull();
      expect(Date.parse(e.lastOperationTime)).toBeGreaterThanOrEqual(Date.parse(before));
    }
    const counters = await list("entities/Counter?fetchState=true");
    expect(counters.items.map((e) => [e.entityId.key, e.state]).sort()).toEqual([
      ["a", 1],
      ["b", 2],
    ]);

    const seen: Listed[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await list("entities?top=1", token);
      expect(page.items.length).toBeLessThanOrEqual(1);
      seen.push(...page.items);
      token = page.next ?? undefined;
      pages++;
    } while (token && pages < 10);
    expect(ids(seen)).toEqual(["counter/a", "counter/b", "other/x"]);
    expect(pages).toBeGreaterThanOrEqual(3);

    const later = new Date(Date.now() + 60_000).toISOString();
    expect((await list(`entities?lastOperationTimeFrom=${later}`)).items).toEqual([]);
    expect((await list(`entities?lastOperationTimeTo=${before}`)).items).toEqual([]);
    expect(ids((await list(`entities/counter?lastOperationTimeFrom=${before}`)).items)).toEqual([
      "counter/a",
      "counter/b",
    ]);
    expect(failures).toEqual([]);
  });

  it("GET instances/@name@key shows the entity as the extension's entity scheduler; an unknown one is 404", async () => {
    const res = await fetch(api("instances/@counter@a"));
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({
      name: "counter",
      instanceId: "@counter@a",
      runtimeStatus: "Running",
      input: { exists: true, state: "1" },
      customStatus: { entityExists: true },
      output: null,
    });
    const deleted = await fetch(api("instances/@counter@gone?showInput=false"));
    expect(await deleted.json()).toMatchObject({ runtimeStatus: "Running", input: null, customStatus: {} });
    expect((await fetch(api("instances/@counter@nobody"))).status).toBe(404);
    expect(await hub.getStatus("@counter@a")).toMatchObject({ input: { exists: true, state: "1" } });
    // The real durable-functions client's getStatus on an entity id reads the same.
    const saved = process.env.WEBSITE_HOSTNAME;
    ensureWebsiteHostname(process.env, server.baseUrl);
    try {
      const client = clientFor(durableClientInputData({ baseUrl: server.baseUrl, hubName: HUB }));
      expect(await client.getStatus("@counter@a")).toMatchObject({
        name: "counter",
        runtimeStatus: "Running",
        input: { exists: true, state: "1" },
        customStatus: { entityExists: true },
      });
      await expect(client.getStatus("@counter@nobody")).rejects.toThrow(/404/);
    } finally {
      if (saved === undefined) delete process.env.WEBSITE_HOSTNAME;
      else process.env.WEBSITE_HOSTNAME = saved;
    }
  });

  it("malformed filters and tokens are 400s with a code", async () => {
    for (const q of ["fetchState=maybe", "top=0", "top=1001", "lastOperationTimeFrom=yesterday"]) {
      const res = await fetch(api(`entities?${q}`));
      expect({ q, status: res.status, code: ((await res.json()) as { code: string }).code }).toEqual({
        q,
        status: 400,
        code: "InvalidParameter",
      });
    }
    for (const token of ["garbage", '{"rid":"AAAAAQAAAAI=","offset":2}', "é"]) {
      const res = await fetch(api("entities/counter"), { headers: { "x-ms-continuation-token": token } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe("InvalidContinuationToken");
    }
    expect(failures).toEqual([]);
  });
});

describe("cleanEntityStorage", () => {
  it("removes entities without a state and nothing pending, and releases locks whose owner is gone", async () => {
    // A client of a hub no host runs (its own container): what it writes stays for the test to read.
    const own = await hubContainers(db);
    const client = createHub({ ...own, hubName: "CleanHub", orchestrators, activities: {} });
    const at = new Date().toISOString();
    const doc = (id: string, status: "Running" | "Completed", entity?: Record<string, unknown>) =>
      instanceDocOf(
        "CleanHub",
        {
          instanceId: id,
          executionId: `x${id}`,
          name: entity ? "counter" : "waits",
          input: null,
          status,
          output: null,
          customStatus: null,
          createdTime: at,
          lastUpdatedTime: at,
          history: [],
          engine: entity ? { entity } : {},
        },
        0,
      );
    const write = (d: ReturnType<typeof doc>) => own.container.items.create(d);
    await write(doc("owner-running", "Running"));
    await write(doc("owner-done", "Completed"));
    // Locked by an orchestration that does not exist, by one that finished, and by one that runs.
    await write(doc("@counter@orphan", "Running", { exists: true, state: "1", lockedBy: "nobody" }));
    await write(doc("@counter@done", "Running", { exists: true, state: "1", lockedBy: "owner-done" }));
    await write(doc("@counter@held", "Running", { exists: true, state: "1", lockedBy: "owner-running" }));
    // Locked by something that is no instance id at all (a damaged document).
    await write(doc("@counter@damaged", "Running", { exists: true, state: "1", lockedBy: "a/b" }));
    // Deleted with nothing pending; deleted with an operation pending; a deleted one that is locked; one with a state.
    await write(doc("@counter@gone", "Running", { exists: false, state: null }));
    await write(doc("@counter@pending", "Running", { exists: false, state: null }));
    await client.signalEntity("counter", "pending", "add", "1");
    await write(doc("@counter@locked", "Running", { exists: false, state: null, lockedBy: "owner-running" }));
    await write(doc("@counter@kept", "Running", { exists: true, state: "7" }));

    const first = await client.cleanEntityStorage({ removeEmptyEntities: true, releaseOrphanedLocks: true });
    expect(first).toEqual({ numberOfOrphanedLocksRemoved: 3, numberOfEmptyEntitiesRemoved: 1 });
    expect(await client.getStatus("@counter@gone")).toBeUndefined();
    for (const key of ["pending", "locked", "kept", "held", "orphan"]) {
      expect({ key, found: (await client.getStatus(`@counter@${key}`)) !== undefined }).toEqual({
        key,
        found: true,
      });
    }
    const messagesOf = async (key: string) => {
      const { resources } = await own.container.items
        .query<{ message: { event: { Name: string; Input: string } } }>({
          query: "SELECT c.message FROM c WHERE c.pk = @pk AND c.kind = 'message'",
          parameters: [{ name: "@pk", value: partitionKeyOf("CleanHub", `@counter@${key}`) }],
        })
        .fetchAll();
      return resources.map((d) => [d.message.event.Name, JSON.parse(d.message.event.Input)]);
    };
    expect(await messagesOf("orphan")).toEqual([["release", { parent: "nobody", id: "fix-orphaned-lock" }]]);
    expect(await messagesOf("done")).toEqual([
      ["release", { parent: "owner-done", id: "fix-orphaned-lock" }],
    ]);
    expect(await messagesOf("damaged")).toEqual([["release", { parent: "a/b", id: "fix-orphaned-lock" }]]);
    expect(await messagesOf("held")).toEqual([]);

    const none = await client.cleanEntityStorage({ removeEmptyEntities: false, releaseOrphanedLocks: false });
    expect(none).toEqual({ numberOfOrphanedLocksRemoved: 0, numberOfEmptyEntitiesRemoved: 0 });
    const again = await client.cleanEntityStorage({ removeEmptyEntities: true, releaseOrphanedLocks: false });
    expect(again).toEqual({ numberOfOrphanedLocksRemoved: 0, numberOfEmptyEntitiesRemoved: 0 });
  });

  it("on the running hub: a deleted entity is removed and listed nowhere; signalled again it comes back", async () => {
    await settled("counter", "gone", undefined);
    const r = await hub.cleanEntityStorage({ removeEmptyEntities: true, releaseOrphanedLocks: true });
    expect(r).toEqual({ numberOfOrphanedLocksRemoved: 0, numberOfEmptyEntitiesRemoved: 1 });
    expect((await fetch(api("instances/@counter@gone"))).status).toBe(404);
    expect(ids((await list("entities/counter")).items)).toEqual(["counter/a", "counter/b"]);
    await hub.signalEntity("counter", "gone", "add", "4");
    await settled("counter", "gone", "4");
    expect(ids((await list("entities/counter")).items)).toEqual(["counter/a", "counter/b", "counter/gone"]);
    expect(failures).toEqual([]);
  });
});

describe("an orchestration's last episode", () => {
  it("delivers the signal it sends as it returns", async () => {
    await hub.startNew("signalsAndReturns", { instanceId: "signals-last" });
    expect((await waitForStatus(hub, "signals-last", isFinished, log)).output).toBe("done");
    await settled("counter", "last", "11");
  });
});
