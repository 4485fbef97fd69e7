/**
 * Issue 20, large histories: an execution of 120 activities in sequence that then continues as new (its history
 * is far more than one transactional batch's 100 operations), with a 3-activity orchestration started beside it;
 * and the restart and purge of an instance with such a history. Every commit must stay within the service's batch
 * limits by construction: both instances complete, the restart starts a fresh history, the purge removes it all.
 * Real durable-functions orchestrators on the emulator; outcomes only, waits bounded by WAIT_MS.
 */
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import {
  countOf,
  createHub,
  type Gen,
  historyOf,
  hubContainers,
  isFinished,
  stopAll,
  waitForStatus,
} from "./hub-harness.js";

const STEPS = 120;
/** Σ double(i) for i < 120. */
const SUM = (2 * ((STEPS - 1) * STEPS)) / 2;

/** Called (outside replay) when generation 0 decides to continue as new. */
let onContinueAsNew: () => void = () => {};

const orchestrators: Record<string, Gen> = {
  longRun: function* (ctx) {
    const generation = ctx.df.getInput() as number;
    let sum = 0;
    for (let i = 0; i < STEPS; i++) sum += (yield ctx.df.callActivity("double", i)) as number;
    if (generation === 0) {
      if (!ctx.df.isReplaying) onContinueAsNew();
      ctx.df.continueAsNew(1);
      return null;
    }
    return { generation, sum };
  },
  seq3: function* (ctx) {
    const a = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
    const b = (yield ctx.df.callActivity("double", a)) as number;
    return yield ctx.df.callActivity("double", b);
  },
};
const activities = { double: (n: unknown) => (n as number) * 2 };

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-large") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

async function startedHub(log: string[]): Promise<CosmosTaskHub> {
  const hub = createHub({ ...(await hubContainers(db)), orchestrators, activities, log });
  hubs.push(hub);
  await hub.start();
  return hub;
}

describe("task hub: histories larger than one transactional batch", () => {
  it("120 activities then continue-as-new completes, and a 3-activity orchestration beside it completes", async () => {
    const log: string[] = [];
    const hub = await startedHub(log);
    const continuing = new Promise<void>((resolve) => {
      onContinueAsNew = resolve;
    });
    await hub.startNew("longRun", { instanceId: "long-1", input: "0" });
    // The other orchestration starts when the first execution ends: its continue-as-new commit replaces a
    // history of ~240 events (one chunk per episode on the old hub) while this one needs the hub too.
    await continuing;
    await hub.startNew("seq3", { instanceId: "beside-1", input: "5" });

    const beside = await waitForStatus(hub, "beside-1", isFinished, log);
    expect(beside).toMatchObject({ runtimeStatus: "Completed", output: 40 });
    const long = await waitForStatus(hub, "long-1", isFinished, log);
    expect(long).toMatchObject({ runtimeStatus: "Completed", output: { generation: 1, sum: SUM } });

    // The history shown is the second execution's alone: its input, 120 tasks, each completed once.
    const history = await historyOf(hub, "long-1");
    const started = history.find((e) => e.EventType === "ExecutionStarted");
    expect(JSON.parse(String(started?.Input))).toBe(1);
    expect(countOf(history, "TaskScheduled")).toBe(STEPS);
    expect(countOf(history, "TaskCompleted")).toBe(STEPS);
  });

  it("restarts (startNew with its id) and purges an instance whose history is 120 episodes long", async () => {
    const log: string[] = [];
    const hub = await startedHub(log);
    await hub.startNew("longRun", { instanceId: "long-2", input: "1" });
    const first = await waitForStatus(hub, "long-2", isFinished, log);
    expect(first).toMatchObject({ runtimeStatus: "Completed", output: { generation: 1, sum: SUM } });

    // A restart of the terminal instance (another orchestrator, as the API allows) starts a fresh history.
    await hub.startNew("seq3", { instanceId: "long-2", input: "7" });
    const again = await waitForStatus(hub, "long-2", (s) => s.name === "seq3" && isFinished(s), log);
    expect(again).toMatchObject({ runtimeStatus: "Completed", output: 56, input: 7 });
    const history = await historyOf(hub, "long-2");
    expect(countOf(history, "ExecutionStarted")).toBe(1);
    expect(countOf(history, "TaskScheduled")).toBe(3);
    expect(countOf(history, "TaskCompleted")).toBe(3);

    // Once more with the long orchestrator, then the purge removes an instance with ~120 history episodes.
    await hub.startNew("longRun", { instanceId: "long-2", input: "1" });
    await waitForStatus(hub, "long-2", (s) => s.name === "longRun" && isFinished(s), log);
    expect(await hub.purge("long-2")).toBe(1);
    expect(await hub.getStatus("long-2")).toBeUndefined();
    expect(await hub.purge("long-2")).toBe(0);
    // The id is free again: a new instance with it starts from nothing.
    await hub.startNew("seq3", { instanceId: "long-2", input: "1" });
    const fresh = await waitForStatus(hub, "long-2", isFinished, log);
    expect(fresh).toMatchObject({ runtimeStatus: "Completed", output: 8 });
    expect(countOf(await historyOf(hub, "long-2"), "TaskScheduled")).toBe(3);
  });
});
