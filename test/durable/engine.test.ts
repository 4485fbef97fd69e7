/**
 * The replay engine driven by REAL durable-functions 3.5.0 orchestrators (the SDK's own Orchestrator wraps each
 * generator): if the engine's sequence ids, history shapes or retry timers differed from what the SDK expects,
 * these orchestrations would hang or resolve the wrong tasks. Deterministic: virtual time, scripted activities.
 */

import { createRequire } from "node:module";
import { InvocationContext } from "@azure/functions";
import type { OrchestrationContext } from "durable-functions";
import * as df from "durable-functions";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyMessage } from "../../src/devhost/durable/engine.js";
import { runOrchestration } from "../../src/devhost/durable/testing.js";
import type { OrchestratorInvoker } from "../../src/devhost/durable/types.js";
import { HistoryEventType } from "../../src/devhost/durable/types.js";

describe("replay engine with the real SDK", () => {
  it("runs activities in sequence and returns the output", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const a: number = yield ctx.df.callActivity("double", 2);
        const b: number = yield ctx.df.callActivity("double", a);
        return { a, b, input: ctx.df.getInput() };
      },
      { input: { hello: "x" }, activities: { double: (n) => (n as number) * 2 } },
    );
    expect(run.status).toBe("Completed");
    expect(run.output).toEqual({ a: 4, b: 8, input: { hello: "x" } });
    const scheduled = run.history.filter((e) => e.EventType === HistoryEventType.TaskScheduled);
    expect(scheduled.map((e) => e.EventId)).toEqual([0, 1]);
  });

  it("fans out and in with Task.all", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const tasks = [1, 2, 3, 4].map((n) => ctx.df.callActivity("square", n));
        const results: number[] = yield ctx.df.Task.all(tasks);
        const last: number = yield ctx.df.callActivity(
          "square",
          results.reduce((x, y) => x + y, 0),
        );
        return last;
      },
      { activities: { square: (n) => (n as number) ** 2 } },
    );
    expect(run.status).toBe("Completed");
    expect(run.output).toBe(900);
    expect(run.activityCalls.map((c) => c.input)).toEqual([1, 2, 3, 4, 30]);
  });

  it("retries an activity with backoff timers (ids: attempt, timer, attempt, …) and succeeds", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const retry = new df.RetryOptions(1000, 3);
        retry.backoffCoefficient = 2;
        const v: string = yield ctx.df.callActivityWithRetry("flaky", retry, "in");
        const after: string = yield ctx.df.callActivity("echo", "after");
        return [v, after];
      },
      {
        activities: {
          flaky: (input, { attempt }) => {
            if (attempt < 3) throw new Error(`attempt ${attempt} failed`);
            return `ok ${String(input)}`;
          },
          echo: (x) => x,
        },
      },
    );
    expect(run.status).toBe("Completed");
    // String inputs reach the activity decoded (the SDK encodes them once more; the extension undoes it).
    expect(run.output).toEqual(["ok in", "after"]);
    const ids = run.history
      .filter(
        (e) =>
          e.EventType === HistoryEventType.TaskScheduled || e.EventType === HistoryEventType.TimerCreated,
      )
      .map((e) => `${e.EventType === HistoryEventType.TimerCreated ? "timer" : "task"}${e.EventId}`);
    expect(ids).toEqual(["task0", "timer1", "task2", "timer3", "task4", "task5"]);
    // Backoff: 1 s, then 2 s.
    expect(run.elapsedMs).toBe(3000);
  });

  it("fails a task after the last attempt (a final retry timer first, as DTFx) and the orchestrator can catch it", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        try {
          yield ctx.df.callActivityWithRetry("broken", new df.RetryOptions(500, 2), null);
          return "unexpected";
        } catch (e) {
          const handled: string = yield ctx.df.callActivity("echo", `handled: ${(e as Error).message}`);
          return handled;
        }
      },
      {
        activities: {
          broken: (_i, { attempt }) => {
            throw new Error(`boom ${attempt}`);
          },
          echo: (x) => x,
        },
      },
    );
    expect(run.status).toBe("Completed");
    expect(String(run.output)).toContain("boom 2");
    expect(run.activityCalls.filter((c) => c.name === "broken")).toHaveLength(2);
    const timers = run.history.filter((e) => e.EventType === HistoryEventType.TimerCreated);
    expect(timers).toHaveLength(2);
  });

  it("an uncaught failure fails the instance with the reason", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        yield ctx.df.callActivity("broken");
        return "unreachable";
      },
      {
        activities: {
          broken: () => {
            throw new Error("disk on fire");
          },
        },
      },
    );
    expect(run.status).toBe("Failed");
    expect(String(run.output)).toContain("disk on fire");
  });

  it("Task.any over a timer and an external event: the event wins and the timer is canceled", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const deadline = new Date(ctx.df.currentUtcDateTime.getTime() + 60_000);
        const timer = ctx.df.createTimer(deadline);
        const approval = ctx.df.waitForExternalEvent("approval");
        const winner: unknown = yield ctx.df.Task.any([approval, timer]);
        if (winner === approval) {
          timer.cancel();
          return { approved: approval.result };
        }
        return { approved: false };
      },
      { events: [{ name: "approval", input: { by: "ann" }, atMs: 5_000 }] },
    );
    expect(run.status).toBe("Completed");
    expect(run.output).toEqual({ approved: { by: "ann" } });
    expect(run.elapsedMs).toBe(5_000);
  });

  it("Task.any: the timer wins when no event comes", async () => {
    const run = await runOrchestration(function* (ctx: OrchestrationContext) {
      const timer = ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + 60_000));
      const approval = ctx.df.waitForExternalEvent("approval");
      const winner: unknown = yield ctx.df.Task.any([approval, timer]);
      return winner === timer ? "timed out" : "approved";
    });
    expect(run.output).toBe("timed out");
    expect(run.elapsedMs).toBe(60_000);
  });

  it("sub-orchestrations, named and unnamed", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const a: number = yield ctx.df.callSubOrchestrator("child", 1, "child-a");
        const b: number = yield ctx.df.callSubOrchestrator("child", 2);
        return a + b;
      },
      {
        orchestrators: {
          child: function* (ctx: OrchestrationContext) {
            const n = ctx.df.getInput() as number;
            const doubled: number = yield ctx.df.callActivity("double", n);
            return doubled + 100;
          },
        },
        activities: { double: (n) => (n as number) * 2 },
      },
    );
    expect(run.status).toBe("Completed");
    expect(run.output).toBe(102 + 104);
    const created = run.history.filter(
      (e) => e.EventType === HistoryEventType.SubOrchestrationInstanceCreated,
    );
    expect(created.map((e) => e.InstanceId)).toEqual(["child-a", "test-instance:1"]);
  });

  it("continueAsNew runs a new execution with the new input", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const n = ctx.df.getInput() as number;
        ctx.df.setCustomStatus({ n });
        if (n < 3) {
          yield ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + 1000));
          ctx.df.continueAsNew(n + 1);
          return undefined;
        }
        return `done at ${n}`;
      },
      { input: 0 },
    );
    expect(run.status).toBe("Completed");
    expect(run.output).toBe("done at 3");
    expect(run.customStatus).toEqual({ n: 3 });
    expect(run.elapsedMs).toBe(3000);
  });

  it("a changed orchestrator fails with a non-determinism message", async () => {
    let version = 1;
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        yield ctx.df.callActivity(version === 1 ? "first" : "renamed");
        version = 2; // the next replay schedules something else at position 0
        yield ctx.df.callActivity("second");
        return "ok";
      },
      { activities: { first: () => 1, renamed: () => 1, second: () => 2 } },
    );
    expect(run.status).toBe("Failed");
    expect(String(run.output)).toContain("Non-deterministic workflow detected");
  });

  it("fan-out completions in any order give the same output (property, fixed seed)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 6 }),
        async (delays) => {
          const run = await runOrchestration(
            function* (ctx: OrchestrationContext) {
              const tasks = delays.map((d, i) =>
                ctx.df.Task.all([
                  ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + d)),
                  ctx.df.callActivity("id", i),
                ]),
              );
              const results: [unknown, number][] = yield ctx.df.Task.all(tasks);
              return results.map((r) => r[1]);
            },
            { activities: { id: (x) => x } },
          );
          expect(run.status).toBe("Completed");
          expect(run.output).toEqual(delays.map((_d, i) => i));
        },
      ),
      { seed: 42, numRuns: 25 },
    );
  });

  it("records a completion once: a second delivery of the same TaskCompleted is dropped", async () => {
    const { createOrchestrator } = createRequire(import.meta.url)(
      "durable-functions/lib/src/util/testingUtils.js",
    ) as {
      createOrchestrator: (f: unknown) => (t: unknown, c: InvocationContext) => Promise<unknown>;
    };
    const handler = createOrchestrator(function* (ctx: OrchestrationContext) {
      const a: number = yield ctx.df.callActivity("one");
      const b: number = yield ctx.df.callActivity("two");
      return a + b;
    });
    let invocations = 0;
    const invoke: OrchestratorInvoker = async (_n, input) => {
      invocations++;
      return { returned: JSON.parse(JSON.stringify(await handler(input, new InvocationContext()))) };
    };
    const now = new Date(Date.UTC(2026, 0, 1));
    const ev = { EventId: -1, IsPlayed: false, Timestamp: now.toISOString() };
    const started = await applyMessage(
      undefined,
      {
        key: "s",
        instanceId: "i",
        event: { ...ev, EventType: HistoryEventType.ExecutionStarted },
        start: { name: "o", input: null, executionId: "e" },
      },
      now,
      invoke,
    );
    const completion = {
      key: "task-e-0",
      instanceId: "i",
      executionId: "e",
      event: { ...ev, EventType: HistoryEventType.TaskCompleted, TaskScheduledId: 0, Result: "1" },
    };
    const first = await applyMessage(started.state, completion, now, invoke);
    expect(first.work.map((w) => (w.kind === "activity" ? w.item.name : w.kind))).toEqual(["two"]);
    const before = invocations;
    const again = await applyMessage(first.state, completion, now, invoke);
    expect(again.dropped).toContain("already completed");
    expect(again.newEvents).toEqual([]);
    expect(invocations).toBe(before);
    // A message for another execution (e.g. before a continueAsNew) is dropped too.
    const stale = await applyMessage(first.state, { ...completion, executionId: "old" }, now, invoke);
    expect(stale.dropped).toContain("not the current");
  });
});
