/**
 * A graceful stop of the task hub is bounded and records what already finished (issue 30). A result that reaches
 * the dispatcher after it stopped (here: queued behind another instance's work item, which holds the only slot at
 * its invocation) is written as a message for the instance, so the next host applies it and the activity does not
 * run again; the held work item gets DURABLE_STOP_WORK_ITEMS_MS, then is abandoned — it commits nothing, its feed
 * page is not checkpointed, and the next host redoes it. The stop used to wait for the change feed processor, which
 * waited for that page, which waited for the held invocation, which waited for the stop (a CI hang). Against the
 * emulator over a real socket, real durable-functions generators; gates the test holds, counts, no clocks: a bound
 * of 0 cuts at once, a bound far above any wait lets the test open the gate while the stop waits.
 */
import type { Database } from "@azure/cosmos";
import type { OrchestrationContext } from "durable-functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settled, WAIT_MS, waitUntil } from "../../bench/lib/until.js";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import {
  createHub,
  Gate,
  type HubSpec,
  isFinished,
  stopAll,
  unthrottledHubContainers,
  waitForStatus,
} from "./hub-harness.js";

let t: TestEmulator;
let db: Database;
/** Every hub a test made, stopped (bounded) after the file even when a test failed half-way. */
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: "durable-stop-results" })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

/** `work` runs one counted activity; `blocker` ends in its first episode (the test holds its invocation). */
async function stopHubSpec(log: string[], activity: Gate) {
  const counted = { runs: 0 };
  const spec: HubSpec = {
    ...(await unthrottledHubContainers(db)),
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
        counted.runs++;
        await activity.pass();
        return counted.runs;
      },
    },
  };
  return { spec, counted };
}

/** A first host with one orchestration slot, whose `blocker` invocations wait at `held` (or fail at it). */
function firstHost(spec: HubSpec, held: Gate, options: HubSpec["options"], fail = false): CosmosTaskHub {
  return hub({
    ...spec,
    instanceName: "first",
    beforeInvoke: async (name) => {
      if (name !== "blocker") return;
      await held.pass();
      if (fail) throw new Error("the worker went away");
    },
    options: { maxConcurrentOrchestrations: 1, stopGraceMs: 0, activityLockMs: 1_000, ...options },
  });
}

function hub(spec: HubSpec): CosmosTaskHub {
  const h = createHub(spec);
  hubs.push(h);
  return h;
}

/**
 * `b1` holds the only slot at its invocation, and the feed brought it (so its page waits for it too); with
 * `counted`, `w1` started first and its activity runs.
 */
async function holdTheSlot(first: CosmosTaskHub, held: Gate, counted?: { runs: number }) {
  await first.start();
  if (counted) {
    await first.startNew("work", { instanceId: "w1" });
    await waitUntil("the activity to run", () => counted.runs === 1);
  }
  await first.startNew("blocker", { instanceId: "b1" });
  await held.reached("the blocker's invocation");
  const instances = counted ? 2 : 1;
  await waitUntil("the feed to bring the instances", () => first.dispatcher.ownedInstances === instances);
}

/** Stops `first` while `held` holds its work item in flight, lets the item go once the stop waits for it. */
async function stopWithTheSlotHeld(first: CosmosTaskHub, held: Gate, log: string[]) {
  const stopping = first.stop();
  await waitUntil("the stop to wait for the work item in flight", () =>
    log.some((l) => l.includes("1 work item(s) in flight get up to")),
  );
  held.open();
  await settled("the hub's stop", stopping);
}

describe("a graceful stop of the task hub", () => {
  it("records a finished activity's result and abandons an invocation held past its bound: after the restart the result is applied (not run again) and the held work item is redone", async () => {
    const log: string[] = [];
    const activity = new Gate();
    const held = new Gate();
    const { spec, counted } = await stopHubSpec(log, activity);
    const first = firstHost(spec, held, { stopWorkItemsMs: 0 });
    await holdTheSlot(first, held, counted);
    // The activity finishes; its result waits for the slot the blocker holds.
    activity.open();
    await waitUntil("the result to reach the dispatcher", () => first.dispatcher.counters.localResults === 1);

    // Bounded though the invocation is held until after it: the stop does not wait for what waits for it.
    await settled("the hub's stop", first.stop());
    const commits = first.dispatcher.counters.commits;
    held.open();
    await waitUntil("the cut invocation to return", () =>
      log.some((l) => /'b1': its work item (returned|ended) after the stop cut it/.test(l)),
    );
    // The cut work item committed nothing: b1 is as it was, for the next host.
    expect(first.dispatcher.counters.commits).toBe(commits);
    const second = hub({ ...spec, instanceName: "second" });
    expect((await second.getStatus("b1"))?.runtimeStatus).toBe("Pending");

    await second.start();
    try {
      const done = await waitForStatus(second, "w1", (s) => s.runtimeStatus === "Completed", log);
      expect(counted.runs).toBe(1);
      expect(done.output).toBe(1);
      const redone = await waitForStatus(second, "b1", (s) => s.runtimeStatus === "Completed", log);
      expect(redone.output).toBe("done");
    } finally {
      await second.stop();
    }
    expect(log.some((l) => /'w1': the task hub is stopping; task-.* handed over as a message/.test(l))).toBe(
      true,
    );
    expect(log.some((l) => l.includes("stopped waiting for 1 work item(s)"))).toBe(true);
  });

  it("waits for a work item in flight within its bound: it commits before the stop ends", async () => {
    const log: string[] = [];
    const held = new Gate();
    const { spec } = await stopHubSpec(log, new Gate());
    const first = firstHost(spec, held, { stopWorkItemsMs: 2 * WAIT_MS });
    await holdTheSlot(first, held);

    await stopWithTheSlotHeld(first, held, log);
    expect(log.some((l) => l.includes("stopped waiting"))).toBe(false);
    const client = hub({ ...spec, instanceName: "client" });
    const status = await client.getStatus("b1");
    expect(status?.runtimeStatus).toBe("Completed");
    expect(status?.output).toBe("done");
  });

  it("does not retry nor poison an attempt that fails while the hub stops: it is redone after the restart", async () => {
    const log: string[] = [];
    const held = new Gate();
    const { spec } = await stopHubSpec(log, new Gate());
    // One attempt only: a failure counted toward poison would fail the instance at once.
    const first = firstHost(spec, held, { stopWorkItemsMs: 2 * WAIT_MS, maxWorkItemAttempts: 1 }, true);
    await holdTheSlot(first, held);

    await stopWithTheSlotHeld(first, held, log);
    expect(first.dispatcher.counters.poisoned).toBe(0);

    const second = hub({ ...spec, instanceName: "second" });
    expect((await second.getStatus("b1"))?.runtimeStatus).toBe("Pending");
    await second.start();
    try {
      const redone = await waitForStatus(second, "b1", isFinished, log);
      expect(redone.runtimeStatus).toBe("Completed");
    } finally {
      await second.stop();
    }
  });
});
