/**
 * A graceful stop records the results of activities that already finished: a result that reaches the dispatcher
 * after it stopped (here: queued behind another instance's work item, which holds the only slot) is written as a
 * message for the instance, so the next host applies it and the activity does not run again. It used to be refused
 * ("The durable task hub is stopping.") and the activity ran a second time after the restart. Against the emulator
 * over a real socket, real durable-functions generators; gates the test holds, counts, no clocks.
 */
import type { Database } from "@azure/cosmos";
import type { OrchestrationContext } from "durable-functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CosmosTaskHub } from "../../src/devhost/durable/hub.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { waitUntil } from "../support/until.js";
import { createHub, unthrottledHubContainers, waitForStatus } from "./hub-harness.js";

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: "durable-stop-results" })).database;
});

afterAll(async () => {
  await t?.close();
});

function gate(): { wait: Promise<void>; open(): void } {
  let open = () => {};
  const wait = new Promise<void>((r) => {
    open = r;
  });
  return { wait, open };
}

describe("a graceful stop", () => {
  it("records a finished activity's result: after the restart it is applied, not run again", async () => {
    const containers = await unthrottledHubContainers(db);
    const log: string[] = [];
    let runs = 0;
    const activityGate = gate();
    const blockerGate = gate();
    let blockerEntered = false;
    const spec = {
      ...containers,
      hubName: "StopHub",
      log,
      orchestrators: {
        work: function* (ctx: OrchestrationContext): Generator<unknown, unknown, never> {
          return yield ctx.df.callActivity("count");
        },
        // biome-ignore lint/correctness/useYield: an orchestration that ends in its first episode
        blocker: function* (_ctx: OrchestrationContext): Generator<unknown, unknown, never> {
          return "done";
        },
      },
      activities: {
        count: async () => {
          runs++;
          await activityGate.wait;
          return runs;
        },
      },
    };
    const first: CosmosTaskHub = createHub({
      ...spec,
      instanceName: "first",
      beforeInvoke: async (name) => {
        if (name !== "blocker") return;
        blockerEntered = true;
        await blockerGate.wait;
      },
      options: { maxConcurrentOrchestrations: 1, stopGraceMs: 0, activityLockMs: 1_000 },
    });
    await first.start();
    await first.startNew("work", { instanceId: "w1" });
    await waitUntil("the activity to run", () => runs === 1);
    // The only orchestration slot is taken by another instance's work item, held at its invocation.
    await first.startNew("blocker", { instanceId: "b1" });
    await waitUntil("the blocker to hold the slot", () => blockerEntered);
    // The activity finishes; its result waits for the slot. Then the hub stops, and only then is the slot free.
    activityGate.open();
    await first.stop();
    blockerGate.open();
    await waitUntil("the result to be recorded or refused", () =>
      log.some((l) => /w1.*(handed over|stopping)/.test(l)),
    );
    expect(log.filter((l) => l.includes("The durable task hub is stopping."))).toEqual([]);

    const second = createHub({ ...spec, instanceName: "second" });
    await second.start();
    try {
      const done = await waitForStatus(second, "w1", (s) => s.runtimeStatus === "Completed", log);
      expect(done.output).toBe(1);
      expect(runs).toBe(1);
    } finally {
      await second.stop();
    }
  });
});
