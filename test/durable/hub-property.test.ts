/**
 * Property, on the Cosmos DB task hub (the emulator over a real socket): for random orchestration shapes — activities
 * in sequence, fan-outs with failing and retried tasks, timers, sub-orchestrations, continue-as-new, failures caught,
 * races — run as REAL durable-functions generators, the hub's final output equals the in-memory test helper's
 * (testing.ts) and the output the shape implies, and no history records a completion twice. External events are
 * left to the engine's property test (replay-property.test.ts): here the instance would have to be caught waiting.
 * Fixed seed; few runs (each is a real orchestration tree on a real store).
 */
import type { Database } from "@azure/cosmos";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { runOrchestration } from "../../packages/devhost/src/durable/testing.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import {
  createHub,
  duplicateCompletions,
  historyOf,
  isFinished,
  unthrottledHubContainers,
  waitForStatus,
} from "./hub-harness.js";
import {
  activities,
  child,
  expectedOutput,
  orchestratorFor,
  type Shape,
  shapesOf,
} from "./orchestration-shapes.js";

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-property") })).database;
});

afterAll(async () => {
  await t?.close();
});

describe("task hub: random orchestration shapes (property)", () => {
  it("reaches the in-memory helper's output for every shape, each completion recorded once", async () => {
    const { container, leaseContainer } = await unthrottledHubContainers(db);
    // Each shape gets its own orchestrator name: the hub's orchestrators are fixed when it is made.
    const runs: { shape: Shape; name: string }[] = [];
    const sample = fc.sample(shapesOf({ events: false, maxTimerMs: 200 }), { seed: 20_261_126, numRuns: 30 });
    const orchestrators = Object.fromEntries(
      sample.map((shape, i) => {
        const name = `shape${i}`;
        runs.push({ shape, name });
        return [name, orchestratorFor(shape)];
      }),
    );
    const hub: CosmosTaskHub = createHub({
      container,
      leaseContainer,
      hubName: "PropertyHub",
      orchestrators: { ...orchestrators, child },
      activities,
    });
    await hub.start();
    try {
      await Promise.all(
        runs.map(async ({ shape, name }, i) => {
          const input = { gen: 0, acc: [] };
          const reference = await runOrchestration(orchestrators[name] as never, {
            input,
            instanceId: `ref-${i}`,
            name,
            orchestrators: { child },
            activities,
          });
          expect(reference.output, `shape ${JSON.stringify(shape)}`).toEqual(expectedOutput(shape));
          await hub.startNew(name, { instanceId: `run-${i}`, input: JSON.stringify(input) });
          const done = await waitForStatus(hub, `run-${i}`, isFinished);
          expect(done, `shape ${JSON.stringify(shape)}`).toMatchObject({
            runtimeStatus: "Completed",
            output: reference.output,
          });
          expect(duplicateCompletions(await historyOf(hub, `run-${i}`))).toEqual([]);
        }),
      );
    } finally {
      await hub.stop();
    }
  });
});
