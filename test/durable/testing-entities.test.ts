/**
 * Entities in the in-memory test helper (runOrchestration with `entities`): REAL durable-functions orchestrators and
 * entity functions, on the dev host's entity engine — callEntity gets the operation's result, operations run one at
 * a time in the order sent with the state kept, a throwing operation fails only that call (caught by the
 * orchestrator) with the state as it was, signals (from the orchestration and from an entity) are delivered before
 * the run ends, destructOnExit deletes, and a missing entity function fails the call naming it.
 */
import type { EntityContext, OrchestrationContext } from "durable-functions";
import * as df from "durable-functions";
import { describe, expect, it } from "vitest";
import { runOrchestration } from "../../packages/devhost/src/durable/testing.js";
import { counterOperation, useCounterOn } from "./counter-entity.js";

function counter(context: EntityContext<number>) {
  if (counterOperation(context)) return;
  const current = context.df.getState(() => 0) as number;
  switch (context.df.operationName) {
    case "forward":
      // Signals another entity: delivered after this operation commits.
      context.df.signalEntity(new df.EntityId("counter", "mirror"), "add", current);
      break;
    case "delete":
      context.df.destructOnExit();
      break;
  }
}

describe("runOrchestration with entities", () => {
  it("callEntity, signalEntity, order, state kept, a throwing operation rolled back (as on the task hub)", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        return yield* useCounterOn(ctx, "k1");
      },
      {
        entities: { counter },
      },
    );
    expect(run.status).toBe("Completed");
    expect(run.output).toEqual({
      after: 16,
      error: expect.stringContaining("Operation 'poison' of entity '@counter@k1' failed"),
    });
    expect(run.entityOperations.map((o) => `${o.operation}:${o.input ?? ""}:${o.isSignal}`)).toEqual([
      "add:1:false",
      "add:2:false",
      "add:3:false",
      "poison::false",
      "add:10:true",
      "get::false",
    ]);
    expect(run.entityOperations[3]?.outcome).toEqual({
      error: expect.stringContaining("Operation 'poison' of entity '@counter@k1' failed"),
    });
    expect(run.entityOperations[5]?.outcome).toEqual({ result: 16 });
    expect(run.entities).toEqual({ "@counter@k1": { exists: true, state: 16 } });
  });

  it("signals from the orchestration and from an entity run before the run ends; destructOnExit deletes", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const a = new df.EntityId("counter", "a");
        yield ctx.df.callEntity(a, "add", 5);
        ctx.df.signalEntity(a, "forward");
        ctx.df.signalEntity(new df.EntityId("Counter", "b"), "add", 1);
        ctx.df.signalEntity(new df.EntityId("counter", "b"), "delete");
        return "sent";
      },
      { entities: { counter } },
    );
    expect(run.output).toBe("sent");
    expect(run.entities).toEqual({
      "@counter@a": { exists: true, state: 5 },
      "@counter@b": { exists: false, state: undefined },
      "@counter@mirror": { exists: true, state: 5 },
    });
  });

  it("an entity function the test did not give fails the call, naming it", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        try {
          yield ctx.df.callEntity(new df.EntityId("missing", "k"), "add", 1);
          return "called";
        } catch (e) {
          return (e as Error).message;
        }
      },
      { entities: { counter } },
    );
    expect(run.output).toContain("No entity function named 'missing' was given to the test.");
    expect(run.entities).toEqual({ "@missing@k": { exists: false, state: undefined } });
  });
});
