/**
 * The test hub (packages/devhost/src/durable/testing-hub.ts): REAL durable-functions orchestrators, activities and
 * entities on the REAL task hub over the in-memory backend, durable time on its fake clock. Activities, a
 * sub-orchestration, durable timers fired by moving the clock (one within the timers' in-memory horizon, one found by
 * the pending-work scan), an external event, an entity signalled by the client and called from an orchestration, a
 * failing activity retried on durable timers, critical sections, suspend/resume/terminate, and the typed errors:
 * unknown function names, an instance not there or not running, a wait that gives up, time moved backwards.
 */
import type { EntityContext, OrchestrationContext } from "durable-functions";
import * as df from "durable-functions";
import { afterEach, describe, expect, it } from "vitest";
import { isCosmosFeedError } from "../../packages/core/src/errors.js";
import { TaskHubError } from "../../packages/devhost/src/durable/errors.js";
import {
  startTestHub,
  type TestHub,
  TestHubError,
  type TestHubOptions,
} from "../../packages/devhost/src/durable/testing-hub.js";
import { counterOperation } from "./counter-entity.js";
import { incrementAll } from "./lock-fixtures.js";

const START = Date.UTC(2026, 0, 1);

let hub: TestHub | undefined;
afterEach(async () => {
  await hub?.stop();
  hub = undefined;
});

async function open(options: TestHubOptions): Promise<TestHub> {
  hub = await startTestHub(options);
  return hub;
}

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection(p: Promise<unknown>): Promise<TestHubError> {
  const e = await p.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(TestHubError);
  return e as TestHubError;
}

const counter = (context: EntityContext<unknown>) => {
  counterOperation(context);
};

describe("startTestHub", () => {
  it("runs activities in sequence and fanned out, and a sub-orchestration, to completion", async () => {
    const t = await open({
      orchestrators: {
        parent: function* (ctx: OrchestrationContext) {
          const a = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
          const all = (yield ctx.df.Task.all(
            [1, 2, 3].map((n) => ctx.df.callActivity("double", n)),
          )) as number[];
          const child = (yield ctx.df.callSubOrchestrator(
            "child",
            a,
            `${ctx.df.instanceId}-child`,
          )) as string;
          return { a, all, child };
        },
        child: function* (ctx: OrchestrationContext) {
          const n = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
          return `child got ${n}`;
        },
      },
      activities: { double: { handler: (n) => (n as number) * 2 } },
    });
    const id = await t.start("parent", 5, { instanceId: "p1" });
    expect(id).toBe("p1");
    const done = await t.waitForCompletion(id);
    expect(done.runtimeStatus).toBe("Completed");
    expect(done.output).toEqual({ a: 10, all: [2, 4, 6], child: "child got 20" });
    expect((await t.status("p1-child"))?.runtimeStatus).toBe("Completed");
    expect(t.activityCalls.map((c) => `${c.instanceId}:${JSON.stringify(c.input)}`).sort()).toEqual(
      ["p1:5", "p1:1", "p1:2", "p1:3", "p1-child:10"].sort(),
    );
    // No time passed: nothing waited on a timer.
    expect(t.clock.now()).toBe(START);
  });

  it("fires durable timers only when the test moves the fake clock", async () => {
    const t = await open({
      orchestrators: {
        napping: function* (ctx: OrchestrationContext) {
          const t0 = ctx.df.currentUtcDateTime.getTime();
          // 150 ms: within the hub's in-memory horizon; an hour: found by its pending-work scan once due.
          yield ctx.df.createTimer(new Date(t0 + 150));
          yield ctx.df.createTimer(new Date(t0 + 3_600_000));
          return ctx.df.currentUtcDateTime.toISOString();
        },
      },
    });
    const id = await t.start("napping");
    expect(await t.waitForTimer(id)).toEqual(new Date(START + 150));
    expect((await t.status(id))?.runtimeStatus).toBe("Running");
    expect(await t.fireNextTimer(id)).toEqual(new Date(START + 150));
    expect(await t.waitForTimer(id)).toEqual(new Date(START + 3_600_000));
    // The clock stands still: the hour-long timer stays pending however long the test waits.
    expect(await t.pendingTimers(id)).toEqual([new Date(START + 3_600_000)]);
    expect((await t.status(id))?.runtimeStatus).toBe("Running");
    await t.advance(3_600_000 - 150);
    const done = await t.waitForCompletion(id);
    expect(done.output).toBe(new Date(START + 3_600_000).toISOString());
  });

  it("delivers an external event the test raises", async () => {
    const t = await open({
      orchestrators: {
        approval: function* (ctx: OrchestrationContext) {
          ctx.df.setCustomStatus("waiting");
          const who = (yield ctx.df.waitForExternalEvent("approve")) as string;
          return { approvedBy: who };
        },
      },
    });
    const id = await t.start("approval");
    await t.waitFor(id, (s) => s.customStatus === "waiting");
    await t.raiseEvent(id, "approve", "ann");
    const done = await t.waitForCompletion(id);
    expect(done.output).toEqual({ approvedBy: "ann" });
    const late = await rejection(t.raiseEvent(id, "approve", "bob"));
    expect(late.code).toBe("InstanceNotRunning");
    expect((await rejection(t.raiseEvent("nobody", "approve"))).code).toBe("InstanceNotFound");
  });

  it("runs an entity the client signals and an orchestration calls, in order, its state kept", async () => {
    const t = await open({
      orchestrators: {
        useCounter: function* (ctx: OrchestrationContext) {
          const id = new df.EntityId("counter", "k");
          yield ctx.df.callEntity(id, "add", 2);
          return (yield ctx.df.callEntity(id, "get")) as number;
        },
      },
      entities: { Counter: counter },
    });
    await t.signalEntity("counter", "k", "add", 5);
    expect(await t.waitForEntity("counter", "k", (s) => s === 5)).toBe(5);
    const id = await t.start("useCounter");
    expect((await t.waitForCompletion(id)).output).toBe(7);
    expect(await t.readEntity("counter", "k")).toEqual({ exists: true, state: 7 });
    expect(t.entityOperations.map((o) => [o.entity, o.operation, o.isSignal, o.outcome])).toEqual([
      ["@counter@k", "add", true, { result: undefined }],
      ["@counter@k", "add", false, { result: undefined }],
      ["@counter@k", "get", false, { result: 7 }],
    ]);
    expect(await t.readEntity("counter", "never")).toBeUndefined();
  });

  it("runs critical sections: increments under context.df.lock from five instances at once lose none", async () => {
    const t = await open({
      orchestrators: { incrementAll },
      entities: {
        register: (context: EntityContext<number>) => {
          const current = context.df.getState(() => 0) as number;
          if (context.df.operationName === "set") context.df.setState(context.df.getInput() as number);
          else if (context.df.operationName === "get") context.df.return(current);
        },
      },
    });
    const ids = await Promise.all([1, 2, 3, 4, 5].map(() => t.start("incrementAll", ["a", "b"])));
    for (const id of ids) {
      const done = await t.waitForCompletion(id);
      expect(done.runtimeStatus).toBe("Completed");
      expect(done.output).toMatchObject({ before: false, inside: ["a", "b"], after: false });
    }
    expect(await t.readEntity("register", "a")).toEqual({ exists: true, state: 5 });
    expect(await t.readEntity("register", "b")).toEqual({ exists: true, state: 5 });
  });

  it("retries a failing activity on durable timers, and fails the orchestration once the retries run out", async () => {
    const failures = new Map<string, number>();
    const t = await open({
      orchestrators: {
        retrying: function* (ctx: OrchestrationContext) {
          const retry = new df.RetryOptions(1_000, 3);
          return (yield ctx.df.callActivityWithRetry("flaky", retry, ctx.df.getInput())) as string;
        },
      },
      activities: {
        // Fails `input` times, then succeeds.
        flaky: (input, context) => {
          const key = String(context.triggerMetadata?.instanceId);
          const n = (failures.get(key) ?? 0) + 1;
          failures.set(key, n);
          if (n <= (input as number)) throw new Error(`attempt ${n} failed`);
          return `ok after ${n}`;
        },
      },
    });
    const ok = await t.start("retrying", 2, { instanceId: "twice" });
    expect(await t.fireNextTimer(ok)).toEqual(new Date(START + 1_000));
    expect(await t.fireNextTimer(ok)).toEqual(new Date(START + 2_000));
    expect((await t.waitForCompletion(ok)).output).toBe("ok after 3");
    expect(t.activityCalls.map((c) => c.outcome)).toEqual([
      { error: "attempt 1 failed" },
      { error: "attempt 2 failed" },
      { result: "ok after 3" },
    ]);

    const bad = await t.start("retrying", 9, { instanceId: "always" });
    const failed = await t.runToCompletion(bad);
    expect(failed.runtimeStatus).toBe("Failed");
    expect(JSON.stringify(failed.output)).toContain("attempt 3 failed");
    expect(failures.get("always")).toBe(3);
  });

  it("runToCompletion fires the timers an orchestration waits on, and gives up after maxTimers", async () => {
    const t = await open({
      orchestrators: {
        sleeps: function* (ctx: OrchestrationContext) {
          const naps = ctx.df.getInput() as number[];
          for (const ms of naps) yield ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + ms));
          return naps.length;
        },
      },
    });
    const id = await t.start("sleeps", [60_000, 1_000, 86_400_000]);
    expect((await t.runToCompletion(id)).output).toBe(3);
    expect(t.clock.now()).toBe(START + 60_000 + 1_000 + 86_400_000);
    const endless = await t.start(
      "sleeps",
      Array.from({ length: 50 }, () => 1_000),
    );
    const e = await rejection(t.runToCompletion(endless, { maxTimers: 5 }));
    expect(e.code).toBe("TooManyTimers");
    expect(t.clock.now()).toBe(START + 86_461_000 + 5_000);
  });

  it("suspends, resumes and terminates a running instance", async () => {
    const t = await open({
      orchestrators: {
        forever: function* (ctx: OrchestrationContext) {
          yield ctx.df.waitForExternalEvent("never");
        },
      },
    });
    const id = await t.start("forever", undefined, { instanceId: "once" });
    await t.waitFor(id, (s) => s.runtimeStatus === "Running");
    // A running instance's id is taken: the hub's own refusal.
    const taken = await t.start("forever", undefined, { instanceId: "once" }).catch((e: unknown) => e);
    expect(taken).toBeInstanceOf(TaskHubError);
    expect((taken as TaskHubError).statusCode).toBe(409);
    await t.suspend(id, "a moment");
    expect((await t.waitFor(id, (s) => s.runtimeStatus !== "Running")).runtimeStatus).toBe("Suspended");
    await t.resume(id, "go on");
    await t.waitFor(id, (s) => s.runtimeStatus === "Running");
    await t.terminate(id, "enough");
    const done = await t.waitForCompletion(id);
    expect(done.runtimeStatus).toBe("Terminated");
    expect(done.output).toBe("enough");
    expect((await rejection(t.terminate(id))).code).toBe("InstanceNotRunning");
  });

  it("refuses unknown and invalid function names with a typed error; an unknown activity fails its task", async () => {
    const t = await open({
      orchestrators: {
        callsMissing: function* (ctx: OrchestrationContext) {
          try {
            yield ctx.df.callActivity("missing");
          } catch (e) {
            return `caught: ${(e as Error).message}`;
          }
        },
      },
      entities: { counter },
    });
    const unknown = await rejection(t.start("nope"));
    expect([unknown.code, unknown.statusCode]).toEqual(["UnknownFunction", 404]);
    expect(isCosmosFeedError(unknown)).toBe(true);
    expect(unknown.message).toContain("callsMissing");
    expect((await rejection(t.signalEntity("nope", "k", "add", 1))).code).toBe("UnknownFunction");
    expect((await rejection(t.readEntity("nope", "k"))).code).toBe("UnknownFunction");
    const id = await t.start("callsMissing");
    expect((await t.waitForCompletion(id)).output).toContain("The function 'missing' doesn't exist");

    const invalid = await rejection(
      startTestHub({ orchestrators: {}, activities: { typo: undefined as never } }),
    );
    expect(invalid.code).toBe("InvalidFunction");
    expect((await rejection(t.advance(-1))).code).toBe("InvalidDuration");
    expect((await rejection(t.advance(Number.NaN))).code).toBe("InvalidDuration");
    expect(t.clock.now()).toBe(START);
  });

  it("a wait that never gets there gives up with WaitTimedOut and the last value seen", async () => {
    const t = await open({
      orchestrators: {
        waiting: function* (ctx: OrchestrationContext) {
          yield ctx.df.waitForExternalEvent("go");
        },
      },
    });
    const id = await t.start("waiting");
    const e = await rejection(t.waitForCompletion(id, { timeoutMs: 300 }));
    expect(e.code).toBe("WaitTimedOut");
    expect(e.message).toContain('"runtimeStatus":"Running"');
  });
});
