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
import { applyMessage, applyMessages } from "../../packages/devhost/src/durable/engine.js";
import { runOrchestration } from "../../packages/devhost/src/durable/testing.js";
import type {
  InstanceMessage,
  OrchestrationState,
  OrchestratorInvoker,
  OutboundWork,
} from "../../packages/devhost/src/durable/types.js";
import { HistoryEventType } from "../../packages/devhost/src/durable/types.js";
import { eventMessage, type Gen, invokerFor, START, startMessage } from "./work-item-driver.js";

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

  it("retry timeout: an attempt whose timer fires past the timeout still runs (DTFx looks at the timeout only after a failure), and a later one proceeds", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const retry = new df.RetryOptions(1000, 5);
        retry.retryTimeoutInMilliseconds = 1500;
        const v: string = yield ctx.df.callActivityWithRetry("flaky", retry, null);
        return v;
      },
      {
        activities: {
          // Fails at 0 and 1,000 ms (within the timeout: a timer each); the third attempt, at 2,000 ms, succeeds.
          flaky: (_i, { attempt }) => {
            if (attempt < 3) throw new Error(`attempt ${attempt} failed`);
            return `ok on ${attempt}`;
          },
        },
      },
    );
    expect(run.status).toBe("Completed");
    expect(run.output).toBe("ok on 3");
    expect(run.activityCalls.map((c) => c.at)).toEqual([
      "2026-01-01T00:00:00.000Z",
      "2026-01-01T00:00:01.000Z",
      "2026-01-01T00:00:02.000Z",
    ]);
  });

  it("retry timeout: an attempt failing past it ends the instance Failed with the reason (the SDK would wait for a retry for ever)", async () => {
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const retry = new df.RetryOptions(1000, 5);
        retry.retryTimeoutInMilliseconds = 1500;
        try {
          const v: string = yield ctx.df.callActivityWithRetry("broken", retry, null);
          return v;
        } catch {
          return "caught";
        }
      },
      {
        activities: {
          broken: (_i, { attempt }) => {
            throw new Error(`boom ${attempt}`);
          },
        },
      },
    );
    // Attempts at 0 and 1,000 ms fail within the timeout; the third, at 2,000 ms, fails past it: no retry timer.
    expect(run.activityCalls.filter((c) => c.name === "broken")).toHaveLength(3);
    expect(run.status).toBe("Failed");
    expect(String(run.output)).toContain("failed on attempt 3 of 5 after its retry timeout");
    expect(String(run.output)).toContain("boom 3");
    const end = run.history.find((e) => e.EventType === HistoryEventType.ExecutionCompleted);
    expect(end?.FailureDetails).toMatchObject({
      ErrorType: "RetryTimeoutExpired",
      IsNonRetriable: true,
      InnerFailure: { ErrorMessage: "boom 3" },
    });
    expect(run.history.filter((e) => e.EventType === HistoryEventType.TimerCreated)).toHaveLength(2);
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

/** Messages for an instance as a task hub delivers them (keys as docs/durable-design.md names them). */
const at = new Date(START);
const limits = { maxPayloadBytes: 262_144 };
const base = { EventId: -1, IsPlayed: false, Timestamp: at.toISOString() };
const completed = (s: OrchestrationState, id: number, result: unknown): InstanceMessage => ({
  key: `task-${s.executionId}-${id}`,
  instanceId: s.instanceId,
  executionId: s.executionId,
  event: {
    ...base,
    EventType: HistoryEventType.TaskCompleted,
    TaskScheduledId: id,
    Result: JSON.stringify(result),
  },
});
const failed = (s: OrchestrationState, id: number, message: string): InstanceMessage => ({
  key: `task-${s.executionId}-${id}`,
  instanceId: s.instanceId,
  executionId: s.executionId,
  event: {
    ...base,
    EventType: HistoryEventType.TaskFailed,
    TaskScheduledId: id,
    Reason: message,
    Details: "",
    FailureDetails: { ErrorType: "Error", ErrorMessage: message, IsNonRetriable: false },
  },
});
const fired = (s: OrchestrationState, id: number): InstanceMessage => ({
  key: `timer-${s.executionId}-${id}`,
  instanceId: s.instanceId,
  executionId: s.executionId,
  event: { ...base, EventType: HistoryEventType.TimerFired, TimerId: id, FireAt: at.toISOString() },
});
const control = (
  instanceId: string,
  type: typeof HistoryEventType.ExecutionTerminated | typeof HistoryEventType.ExecutionSuspended,
  key: string,
): InstanceMessage => ({
  key,
  instanceId,
  event: { ...base, EventType: type, Input: '"stop"', Reason: "r" },
});
const resumeMessage = (instanceId: string): InstanceMessage => ({
  key: "resume-1",
  instanceId,
  event: { ...base, EventType: HistoryEventType.ExecutionResumed, Reason: "go" },
});
const scheduled = (w: OutboundWork[]) =>
  w.flatMap((x) => (x.kind === "activity" ? [`${x.item.name}#${x.item.taskScheduledId}`] : []));
const must = (s: OrchestrationState | undefined): OrchestrationState => {
  if (!s) throw new Error("no state");
  return s;
};

describe("applyMessages: one replay per work item", () => {
  const orchestrators: Record<string, Gen> = {
    sequence: function* (ctx) {
      const a = (yield ctx.df.callActivity("double", 1)) as number;
      const b = (yield ctx.df.callActivity("double", a)) as number;
      const c = (yield ctx.df.callActivity("double", b)) as number;
      return c;
    },
    fanOut: function* (ctx) {
      return yield ctx.df.Task.all([1, 2, 3].map((n) => ctx.df.callActivity("double", n)));
    },
    /** Waits for "add" events; each one continues as new with the sum, until the sum reaches 3. */
    counter: function* (ctx) {
      const sum = ctx.df.getInput() as number;
      const add = (yield ctx.df.waitForExternalEvent("add")) as number;
      if (sum + add < 3) {
        ctx.df.continueAsNew(sum + add);
        return undefined;
      }
      return sum + add;
    },
    /** A retried task that keeps failing, raced against an activity that wins; then more work. */
    race: function* (ctx) {
      const slow = ctx.df.callActivityWithRetry("broken", new df.RetryOptions(1000, 2), null);
      const fast = ctx.df.callActivity("double", 5);
      yield ctx.df.Task.any([slow, fast]);
      const next = (yield ctx.df.callActivity("double", 100)) as number;
      try {
        yield slow;
        return "unexpected";
      } catch {
        return [fast.result, next, "slow failed"];
      }
    },
  };
  const start = (name: string, input?: unknown) => startMessage("i", name, input);

  it("a 3-activity sequence: four work items, four replays, and the output", async () => {
    const invoke = invokerFor(orchestrators);
    const r1 = await applyMessages(undefined, [start("sequence")], at, invoke, limits);
    expect([r1.invocations, r1.consumed, scheduled(r1.work)]).toEqual([1, ["start-i"], ["double#0"]]);
    let state = must(r1.state);
    for (const [id, result] of [
      [0, 2],
      [1, 4],
    ]) {
      const r = await applyMessages(state, [completed(state, id, result)], at, invoke, limits);
      expect([r.invocations, scheduled(r.work)]).toEqual([1, [`double#${id + 1}`]]);
      state = must(r.state);
    }
    const last = await applyMessages(state, [completed(state, 2, 8)], at, invoke, limits);
    expect(last.invocations).toBe(1);
    expect(last.state?.status).toBe("Completed");
    expect(last.state?.output).toBe("8");
    expect(invoke.calls).toBe(4);
  });

  it("a fan-out's completions in one work item: one replay (one per message before)", async () => {
    const invoke = invokerFor(orchestrators);
    const started = must((await applyMessages(undefined, [start("fanOut")], at, invoke, limits)).state);
    const messages = [completed(started, 2, 6), completed(started, 0, 2), completed(started, 1, 4)];
    const r = await applyMessages(started, messages, at, invoke, limits);
    expect(r.invocations).toBe(1);
    expect(r.consumed).toEqual(messages.map((m) => m.key));
    expect(r.state?.status).toBe("Completed");
    expect(JSON.parse(String(r.state?.output))).toEqual([2, 4, 6]);
    expect(r.newEvents.map((e) => e.EventType)).toEqual([
      HistoryEventType.OrchestratorStarted,
      HistoryEventType.TaskCompleted,
      HistoryEventType.TaskCompleted,
      HistoryEventType.TaskCompleted,
      HistoryEventType.OrchestratorCompleted,
      HistoryEventType.ExecutionCompleted,
    ]);
    expect(r.state?.history).toEqual([...started.history, ...r.newEvents]);
    // The same completions one per call: a replay each.
    const one = invokerFor(orchestrators);
    let s = started;
    for (const m of messages) s = must((await applyMessages(s, [m], at, one, limits)).state);
    expect(one.calls).toBe(3);
    expect(s.output).toBe(r.state?.output);
  });

  it("a second completion of a task in the same work item is dropped as a duplicate", async () => {
    const invoke = invokerFor(orchestrators);
    const started = must((await applyMessages(undefined, [start("fanOut")], at, invoke, limits)).state);
    const again = { ...completed(started, 0, 2), key: "task-again" };
    const r = await applyMessages(started, [completed(started, 0, 2), again], at, invoke, limits);
    expect(r.invocations).toBe(1);
    expect(r.consumed).toEqual([`task-${started.executionId}-0`, "task-again"]);
    expect(r.dropped).toEqual([{ key: "task-again", reason: expect.stringContaining("duplicate") }]);
  });

  it("terminate: the replay gathered before it runs first, then it applies; what follows is dropped", async () => {
    const invoke = invokerFor(orchestrators);
    const started = must((await applyMessages(undefined, [start("fanOut")], at, invoke, limits)).state);
    const messages = [
      completed(started, 0, 2),
      control("i", HistoryEventType.ExecutionTerminated, "terminate-1"),
      completed(started, 1, 4),
    ];
    const r = await applyMessages(started, messages, at, invoke, limits);
    expect(r.invocations).toBe(1);
    expect(r.state?.status).toBe("Terminated");
    expect(r.consumed).toEqual(messages.map((m) => m.key));
    expect(r.dropped).toEqual([{ key: messages[2].key, reason: "the instance is Terminated" }]);
    expect(r.newEvents.map((e) => e.EventType)).toEqual([
      HistoryEventType.OrchestratorStarted,
      HistoryEventType.TaskCompleted,
      HistoryEventType.OrchestratorCompleted,
      HistoryEventType.ExecutionTerminated,
    ]);
  });

  it("a message that would need a second replay ends the work item; it and those after it stay", async () => {
    const invoke = invokerFor(orchestrators);
    const started = must((await applyMessages(undefined, [start("fanOut")], at, invoke, limits)).state);
    const suspend = control("i", HistoryEventType.ExecutionSuspended, "suspend-1");
    const messages = [completed(started, 0, 2), suspend, resumeMessage("i"), completed(started, 1, 4)];
    const r = await applyMessages(started, messages, at, invoke, limits);
    expect(r.invocations).toBe(1);
    expect(r.consumed).toEqual(["task-e-i-0", "suspend-1", "resume-1"]);
    expect(r.state?.status).toBe("Running");
    const next = await applyMessages(r.state, [messages[3], completed(started, 2, 6)], at, invoke, limits);
    expect(next.invocations).toBe(1);
    expect(JSON.parse(String(next.state?.output))).toEqual([2, 4, 6]);
  });

  it("while Suspended events wait; a resume lets the events after it replay", async () => {
    const invoke = invokerFor(orchestrators);
    const started = must((await applyMessages(undefined, [start("fanOut")], at, invoke, limits)).state);
    const suspended = must(
      (
        await applyMessages(
          started,
          [control("i", HistoryEventType.ExecutionSuspended, "s")],
          at,
          invoke,
          limits,
        )
      ).state,
    );
    expect(suspended.status).toBe("Suspended");
    const messages = [completed(started, 0, 2), resumeMessage("i"), completed(started, 1, 4)];
    const r = await applyMessages(suspended, messages, at, invoke, limits);
    expect(r.consumed).toEqual(["resume-1", "task-e-i-1"]);
    expect(r.invocations).toBe(1);
    const rest = await applyMessages(r.state, [messages[0], completed(started, 2, 6)], at, invoke, limits);
    expect(JSON.parse(String(rest.state?.output))).toEqual([2, 4, 6]);
  });

  it("a raised event joins only a replay with no event before it: events after a continue-as-new stay for the next execution", async () => {
    const invoke = invokerFor(orchestrators);
    let state = must((await applyMessages(undefined, [start("counter", 0)], at, invoke, limits)).state);
    const add = (n: number) => eventMessage("i", `event-${n}`, "add", 1);
    let pending: InstanceMessage[] = [add(1), add(2), add(3)];
    let calls = 0;
    // A dispatcher: all pending messages each time, while a call consumes something.
    while (pending.length > 0 && calls < 20) {
      calls++;
      const r = await applyMessages(state, pending, at, invoke, limits);
      expect(r.invocations).toBeLessThanOrEqual(1);
      if (r.consumed.length === 0) break;
      state = must(r.state);
      pending = [
        ...pending.filter((m) => !r.consumed.includes(m.key)),
        ...r.work.flatMap((w) => (w.kind === "message" ? [w.message] : [])),
      ];
    }
    expect(state.status).toBe("Completed");
    expect(state.output).toBe("3");
  });

  it("the first event of a work item is a raised event, completions may follow it", async () => {
    const invoke = invokerFor(orchestrators);
    const started = must((await applyMessages(undefined, [start("fanOut")], at, invoke, limits)).state);
    const ev = eventMessage("i", "event-x", "unused", 1);
    const r = await applyMessages(
      started,
      [ev, completed(started, 0, 2), completed(started, 1, 4)],
      at,
      invoke,
      limits,
    );
    expect(r.consumed).toHaveLength(3);
    const r2 = await applyMessages(started, [completed(started, 0, 2), ev], at, invoke, limits);
    expect(r2.consumed).toEqual(["task-e-i-0"]);
  });

  it("terminate of a Pending instance sticks: its start (the same execution) is dropped", async () => {
    const invoke = invokerFor(orchestrators);
    const pending: OrchestrationState = {
      instanceId: "i",
      executionId: "e-i",
      name: "sequence",
      input: null,
      status: "Pending",
      output: null,
      customStatus: null,
      createdTime: at.toISOString(),
      lastUpdatedTime: at.toISOString(),
      history: [],
      engine: {},
    };
    const r = await applyMessages(
      pending,
      [control("i", HistoryEventType.ExecutionTerminated, "terminate-1"), start("sequence")],
      at,
      invoke,
      limits,
    );
    expect(r.state?.status).toBe("Terminated");
    expect(r.dropped).toEqual([{ key: "start-i", reason: "this execution has already started" }]);
    expect(r.invocations).toBe(0);
    // Events for a Pending instance wait for its start.
    const ev = await applyMessages(pending, [eventMessage("i", "event-1", "x", 1)], at, invoke, limits);
    expect(ev.consumed).toEqual([]);
  });

  it("terminate of a ContinuedAsNew instance waits for the new execution's start, then applies", async () => {
    const invoke = invokerFor(orchestrators);
    const first = must((await applyMessages(undefined, [start("counter", 0)], at, invoke, limits)).state);
    const can = await applyMessages(first, [eventMessage("i", "event-1", "add", 1)], at, invoke, limits);
    expect(can.state?.status).toBe("ContinuedAsNew");
    const next = can.work.flatMap((w) => (w.kind === "message" ? [w.message] : []));
    const terminate = control("i", HistoryEventType.ExecutionTerminated, "terminate-1");
    const r = await applyMessages(can.state, [terminate, ...next], at, invoke, limits);
    expect(r.consumed).toEqual([next[0].key]);
    expect(r.state?.status).toBe("Running");
    const t = await applyMessages(r.state, [terminate], at, invoke, limits);
    expect(t.state?.status).toBe("Terminated");
    expect(t.state?.executionId).toBe(next[0].start?.executionId);
  });

  it("retry ids: a retried task's failure beside a completion that resumes the orchestrator (ids as the SDK counts them)", async () => {
    const invoke = invokerFor(orchestrators);
    const started = must((await applyMessages(undefined, [start("race")], at, invoke, limits)).state);
    // Arrival order: the winner's completion, then the retried task's failure.
    const r = await applyMessages(
      started,
      [completed(started, 1, 10), failed(started, 0, "boom 1")],
      at,
      invoke,
      limits,
    );
    expect(r.invocations).toBe(1);
    const ids = (s: OrchestrationState | undefined) =>
      must(s)
        .history.filter(
          (e) =>
            e.EventType === HistoryEventType.TaskScheduled || e.EventType === HistoryEventType.TimerCreated,
        )
        .map((e) => `${e.EventType === HistoryEventType.TimerCreated ? "timer" : e.Name}#${e.EventId}`);
    // The SDK counts the failure's retry timer (it resumes nothing) before the action the completion leads to.
    expect(ids(r.state)).toEqual(["broken#0", "double#1", "timer#2", "double#3"]);
    let state = must(r.state);
    const retried = await applyMessages(
      state,
      [fired(state, 2), completed(state, 3, 200)],
      at,
      invoke,
      limits,
    );
    expect(ids(retried.state).slice(4)).toEqual(["broken#4"]);
    state = must(retried.state);
    const lastFail = await applyMessages(state, [failed(state, 4, "boom 2")], at, invoke, limits);
    state = must(lastFail.state);
    expect(Object.keys(state.engine.retries as object)).toEqual(["0"]);
    const done = await applyMessages(state, [fired(state, 5)], at, invoke, limits);
    // The retried task has ended: its bookkeeping is gone.
    expect(done.state?.engine.retries).toEqual({});
    expect(done.state?.status).toBe("Completed");
    expect(JSON.parse(String(done.state?.output))).toEqual([10, 200, "slow failed"]);
  });
});
