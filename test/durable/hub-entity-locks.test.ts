/**
 * Critical sections on the task hub (emulator, real durable-functions orchestrators and Entity handler): sections
 * over overlapping sets given in different orders all complete on two hosts (no deadlock) and, on one, lose no update
 * (each does a read and a write per entity, safe only under the lock); while an entity is locked a client's signal
 * waits and runs after the release; a terminated holder's lock is released. (The exact counts are asserted on one
 * host: an entity operation delivered again after it was applied — two hosts delivering one outbox document — runs
 * again until the entities apply each request once, which is another change's.)
 */
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { entityLockOf } from "../../packages/devhost/src/durable/entity-engine.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { createHub, hubContainers, isFinished, stopAll, waitForStatus } from "./hub-harness.js";
import { lockOrchestrators, registerInvoker } from "./lock-fixtures.js";

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-locks") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

/** `n` hosts on one task hub (a container of two ranges: with two hosts, each dispatches one). */
async function hosts(n: 1 | 2, log: string[]): Promise<CosmosTaskHub[]> {
  const containers = await hubContainers(db, 2);
  const hubName = uniqueName("LockHub").replaceAll("-", "");
  const make = (instanceName: string) =>
    createHub({
      ...containers,
      hubName,
      instanceName,
      orchestrators: lockOrchestrators,
      activities: {},
      log,
      options: { invokeEntity: registerInvoker([]) },
    });
  const started = ["A", "B"].slice(0, n).map(make);
  hubs.push(...started);
  await Promise.all(started.map((h) => h.start()));
  return started;
}

const entity = (hub: CosmosTaskHub, key: string) => hub.readEntity("register", key);

/** The lock the entity's stored instance document records (read through the hub's backend). */
async function lockOf(hub: CosmosTaskHub, key: string) {
  return entityLockOf(await hub.backend.readInstance(`@register@${key}`));
}

/** Sections over overlapping sets given in different orders, started across `on`; their final statuses. */
async function overlappingSections(on: CosmosTaskHub[], log: string[]) {
  const sets = [
    ["x", "y"],
    ["y", "z"],
    ["z", "x"],
    ["y", "x"],
    ["x", "y", "z"],
    ["z", "y"],
  ];
  const ids = sets.map((_, i) => uniqueName(`cs${i}`));
  const host = (i: number) => on[i % on.length] as CosmosTaskHub;
  await Promise.all(
    sets.map((keys, i) =>
      host(i).startNew("incrementAll", { instanceId: ids[i] as string, input: JSON.stringify(keys) }),
    ),
  );
  return Promise.all(ids.map((id, i) => waitForStatus(host(i), id, isFinished, log)));
}

describe("critical sections on the task hub", () => {
  it("overlapping sets in different orders on two hosts: all complete (no deadlock), isLocked as held, all released", async () => {
    const log: string[] = [];
    const [a, b] = await hosts(2, log);
    const done = await overlappingSections([a as CosmosTaskHub, b as CosmosTaskHub], log);
    for (const s of done) expect(s.runtimeStatus, JSON.stringify(s.output)).toBe("Completed");
    expect(done[4]?.output).toMatchObject({ before: false, inside: ["x", "y", "z"], after: false });
    expect(done[3]?.output).toMatchObject({ inside: ["x", "y"] });
    for (const k of ["x", "y", "z"]) expect(await lockOf(a as CosmosTaskHub, k)).toBeUndefined();
  });

  it("overlapping sets: no update lost (each section reads and writes each entity, safe only under the lock)", async () => {
    const log: string[] = [];
    const [a] = (await hosts(1, log)) as [CosmosTaskHub];
    const done = await overlappingSections([a], log);
    for (const s of done) expect(s.runtimeStatus, JSON.stringify(s.output)).toBe("Completed");
    // Each entity was incremented once per section over it: no section's read and write were interleaved.
    expect((await entity(a, "x"))?.state).toBe("4");
    expect((await entity(a, "y"))?.state).toBe("5");
    expect((await entity(a, "z"))?.state).toBe("4");
  });

  it("a client's signal to a locked entity waits for the release; a terminated holder releases", async () => {
    const log: string[] = [];
    const [a] = (await hosts(1, log)) as [CosmosTaskHub];
    const holder = uniqueName("holder");
    await a.startNew("holdAndEnd", { instanceId: holder, input: JSON.stringify("wait") });
    await until("the holder's section", async () =>
      (await lockOf(a, "h"))?.by === holder ? true : undefined,
    );
    await until("the holder's add", async () => ((await entity(a, "h"))?.state === "1" ? true : undefined));
    await a.signalEntity("register", "h", "add", "100");
    // The entity's next work item has seen the signal: it waits, pending, the state as it was.
    await a.processInstance("@register@h");
    expect((await entity(a, "h"))?.state).toBe("1");
    await a.raiseEvent(holder, "go", null);
    expect((await waitForStatus(a, holder, isFinished, log)).runtimeStatus).toBe("Completed");
    await until("the signal after the release", async () =>
      (await entity(a, "h"))?.state === "101" ? true : undefined,
    );
    expect(await lockOf(a, "h")).toBeUndefined();

    // A holder terminated inside its section: the next section over the entity gets it.
    const doomed = uniqueName("doomed");
    await a.startNew("holdAndEnd", { instanceId: doomed, input: JSON.stringify("wait") });
    await until("the doomed section's add", async () =>
      (await entity(a, "h"))?.state === "102" ? true : undefined,
    );
    expect((await lockOf(a, "h"))?.by).toBe(doomed);
    const next = uniqueName("next");
    await a.startNew("incrementAll", { instanceId: next, input: JSON.stringify(["h"]) });
    await a.terminate(doomed, "stop");
    const s = await waitForStatus(a, next, isFinished, log);
    expect(s.runtimeStatus).toBe("Completed");
    expect((await waitForStatus(a, doomed, isFinished, log)).runtimeStatus).toBe("Terminated");
    expect((await entity(a, "h"))?.state).toBe("103");
  });
});
