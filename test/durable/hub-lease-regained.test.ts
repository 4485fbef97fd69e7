/**
 * A host whose dispatch lease expired under load and came back to it (what the kill test's restarted host went
 * through on a busy machine, its lease flapping with 1.5 s expiry): the change feed brings nothing of an instance
 * again if nothing of it changed, so work asked for by anything but those pages — here a dead host's activity
 * claim coming due — must still run, or the instance stays Running for ever. Deterministic: the claim is due on a
 * FakeClock the test moves only once the lease is lost.
 */
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import {
  countOf,
  createHub,
  Gate,
  type Gen,
  historyOf,
  isFinished,
  stopAll,
  unthrottledHubContainers,
  waitForStatus,
} from "./hub-harness.js";

const HUB = "RegainHub";
const LOCK_MS = 10_000;

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-regain") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

const once: Gen = function* (ctx) {
  return yield ctx.df.callActivity("work", 21);
};

describe("task hub: a lease lost and taken back", () => {
  it("an instance whose last page came under the lost lease still has a dead host's claim taken over when it is due", async () => {
    const containers = await unthrottledHubContainers(db);
    const clock = new FakeClock(Date.now());
    const client = createHub({ ...containers, hubName: HUB, orchestrators: {}, activities: {} });
    const instanceId = "regain";

    // Host A schedules the activity, claims it, and dies with it running.
    const never = new Gate();
    const a = createHub({
      ...containers,
      hubName: HUB,
      instanceName: "A",
      orchestrators: { once },
      activities: {
        work: async () => {
          await never.pass();
          return 0;
        },
      },
      options: { clock, activityLockMs: LOCK_MS },
    });
    hubs.push(a);
    await a.start();
    await a.startNew("once", { instanceId });
    await until("A to schedule the activity", async () =>
      countOf(await historyOf(client, instanceId), "TaskScheduled") === 1 ? true : undefined,
    );
    await a.abandon();

    // Host B's feed brings the instance (and A's claim, due in LOCK_MS); then B's lease is lost.
    // B reads the feed from its beginning (leases of its own): A checkpointed past the instance's documents.
    const { leaseContainer: leasesOfB } = await unthrottledHubContainers(db);
    let runs = 0;
    const b = createHub({
      container: containers.container,
      leaseContainer: leasesOfB,
      hubName: HUB,
      instanceName: "B",
      orchestrators: { once },
      activities: {
        work: (n) => {
          runs++;
          return (n as number) * 2;
        },
      },
      options: { clock, activityLockMs: LOCK_MS },
    });
    hubs.push(b);
    await b.start();
    await until("B's feed to bring the instance", async () =>
      b.dispatcher.ownedInstances > 0 ? true : undefined,
    );
    const lost = new AbortController();
    lost.abort();
    b.dispatcher.own(instanceId, lost.signal);

    // A's claim comes due: B takes it over and runs the activity; the instance completes.
    await clock.advance(LOCK_MS + 1);
    const done = await waitForStatus(client, instanceId, isFinished);
    expect(done).toMatchObject({ runtimeStatus: "Completed", output: 42 });
    expect(runs).toBe(1);
  });
});
