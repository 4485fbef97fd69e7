/**
 * Issue 20, poison and limits: nothing a client sends and nothing one orchestration does may stop the others. Bad
 * input is refused at the door (400 too deep, 413 too large, the limit named); an orchestration output or an
 * activity result over the payload limit fails that instance with the reason; an orchestration whose work item
 * fails at the hub itself (the invoker throws) is retried maxWorkItemAttempts times, then Failed with the reason.
 * Each time an orchestration started beside it completes, and terminate and purge work on the failed instance.
 * Each test has its own task hub container, so one wedged hub cannot fail the next test.
 */
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { TaskHubError } from "../../packages/devhost/src/durable/hub.js";
import type { OrchestrationTriggerInput } from "../../packages/devhost/src/durable/types.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { createHub, type Gen, hubContainers, isFinished, stopAll, waitForStatus } from "./hub-harness.js";

const MAX_PAYLOAD = 200_000;
const ATTEMPTS = 3;
/** How a failure names the payload limit: its value or its setting. */
const NAMES_LIMIT = /200000|200,000|DURABLE_MAX_PAYLOAD_BYTES/;
const THREE_MB = 3 * 1024 * 1024;

const orchestrators: Record<string, Gen> = {
  seq3: function* (ctx) {
    const a = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
    const b = (yield ctx.df.callActivity("double", a)) as number;
    return yield ctx.df.callActivity("double", b);
  },
  hugeOutput: function* (ctx) {
    const n = (yield ctx.df.callActivity("double", 1)) as number;
    return "x".repeat(THREE_MB + n);
  },
  hugeResult: function* (ctx) {
    return yield ctx.df.callActivity("huge", THREE_MB);
  },
};
const activities = {
  double: (n: unknown) => (n as number) * 2,
  huge: (n: unknown) => "y".repeat(n as number),
};

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-poison") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

async function startedHub(
  log: string[],
  beforeInvoke?: (name: string, input: OrchestrationTriggerInput) => void,
): Promise<CosmosTaskHub> {
  const hub = createHub({
    ...(await hubContainers(db)),
    orchestrators,
    activities,
    log,
    ...(beforeInvoke ? { beforeInvoke } : {}),
    options: { maxPayloadBytes: MAX_PAYLOAD, maxWorkItemAttempts: ATTEMPTS },
  });
  hubs.push(hub);
  await hub.start();
  return hub;
}

/** A failed instance can be terminated (it is not running) and purged; then it is gone. */
async function terminateAndPurge(hub: CosmosTaskHub, instanceId: string): Promise<void> {
  expect(await hub.terminate(instanceId, "enough")).toBe("notRunning");
  expect(await hub.purge(instanceId)).toBe(1);
  expect(await hub.getStatus(instanceId)).toBeUndefined();
}

describe("task hub: poison and limits", () => {
  it("refuses a 5,000-deep input with 400 and a 5 MB input with 413, storing nothing; the hub keeps working", async () => {
    const log: string[] = [];
    const hub = await startedHub(log);
    const deep = `${"[".repeat(5_000)}${"]".repeat(5_000)}`;
    const tooDeep = hub.startNew("seq3", { instanceId: "deep-1", input: deep });
    await expect(tooDeep).rejects.toBeInstanceOf(TaskHubError);
    await expect(tooDeep).rejects.toMatchObject({ statusCode: 400 });
    const large = JSON.stringify("z".repeat(5 * 1024 * 1024));
    const tooLarge = hub.startNew("seq3", { instanceId: "large-1", input: large });
    await expect(tooLarge).rejects.toBeInstanceOf(TaskHubError);
    await expect(tooLarge).rejects.toMatchObject({ statusCode: 413 });
    await expect(tooLarge).rejects.toThrow(NAMES_LIMIT);
    expect(await hub.getStatus("deep-1")).toBeUndefined();
    expect(await hub.getStatus("large-1")).toBeUndefined();

    await hub.startNew("seq3", { instanceId: "after-1", input: "1" });
    expect(await waitForStatus(hub, "after-1", isFinished, log)).toMatchObject({
      runtimeStatus: "Completed",
      output: 8,
    });
  });

  it("an orchestration output of 3 MB fails that instance with the limit named; one beside it completes", async () => {
    const log: string[] = [];
    const hub = await startedHub(log);
    await hub.startNew("hugeOutput", { instanceId: "huge-output-1" });
    await hub.startNew("seq3", { instanceId: "beside-output", input: "2" });
    expect(await waitForStatus(hub, "beside-output", isFinished, log)).toMatchObject({
      runtimeStatus: "Completed",
      output: 16,
    });
    const failed = await waitForStatus(hub, "huge-output-1", isFinished, log);
    expect(failed.runtimeStatus).toBe("Failed");
    expect(JSON.stringify(failed.output)).toMatch(NAMES_LIMIT);
    await terminateAndPurge(hub, "huge-output-1");
  });

  it("an activity result of 3 MB fails its orchestration with the limit named; one beside it completes", async () => {
    const log: string[] = [];
    const hub = await startedHub(log);
    await hub.startNew("hugeResult", { instanceId: "huge-result-1" });
    await hub.startNew("seq3", { instanceId: "beside-result", input: "3" });
    expect(await waitForStatus(hub, "beside-result", isFinished, log)).toMatchObject({
      runtimeStatus: "Completed",
      output: 24,
    });
    const failed = await waitForStatus(hub, "huge-result-1", isFinished, log);
    expect(failed.runtimeStatus).toBe("Failed");
    expect(JSON.stringify(failed.output)).toMatch(NAMES_LIMIT);
    await terminateAndPurge(hub, "huge-result-1");
  });

  it(`a work item that fails at the hub (the invoker throws) fails its instance after ${ATTEMPTS} attempts; the others complete`, async () => {
    const log: string[] = [];
    let attempts = 0;
    const hub = await startedHub(log, (_name, input) => {
      if (input.instanceId !== "poison-1") return;
      attempts++;
      throw new Error(`the invoker exploded on poison-1 (attempt ${attempts})`);
    });
    await hub.startNew("seq3", { instanceId: "poison-1", input: "1" });
    const others = ["other-1", "other-2", "other-3"];
    for (const [i, id] of others.entries()) await hub.startNew("seq3", { instanceId: id, input: String(i) });
    for (const [i, id] of others.entries()) {
      expect(await waitForStatus(hub, id, isFinished, log)).toMatchObject({
        runtimeStatus: "Completed",
        output: i * 8,
      });
    }
    const failed = await waitForStatus(hub, "poison-1", isFinished, log);
    expect(failed.runtimeStatus).toBe("Failed");
    expect(JSON.stringify(failed.output)).toContain("the invoker exploded on poison-1");
    expect(attempts).toBe(ATTEMPTS);
    await terminateAndPurge(hub, "poison-1");
    // The id is usable again, and the poison is not retried behind it.
    await hub.startNew("seq3", { instanceId: "other-1", input: "4" });
    expect(await waitForStatus(hub, "other-1", (s) => s.output === 32, log)).toMatchObject({
      runtimeStatus: "Completed",
    });
    expect(attempts).toBe(ATTEMPTS);
  });
});
