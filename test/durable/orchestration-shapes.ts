/**
 * Random orchestration shapes for the durable property tests (replay-property.test.ts on the engine,
 * hub-property.test.ts on the Cosmos DB task hub): activities in sequence, fan-out with Task.all (some tasks
 * failing, some with retries), timers, external events, sub-orchestrations, continue-as-new, failures caught,
 * races — built as REAL durable-functions generators — and the output each shape implies, written independently of
 * any engine.
 */
import type { OrchestrationContext } from "durable-functions";
import * as df from "durable-functions";
import fc from "fast-check";
import type { Gen } from "./work-item-driver.js";

export type Step =
  | { kind: "activity"; n: number }
  | { kind: "fanOut"; items: { n: number; broken: boolean; retry: boolean }[] }
  | { kind: "timer"; ms: number }
  | { kind: "event" }
  | { kind: "sub"; n: number; named: boolean }
  | { kind: "caught"; retry: boolean }
  /** Task.any of a retried task that keeps failing and an activity: the activity wins, the retries go on. */
  | { kind: "race"; n: number };
/** One list of steps per execution: each but the last ends with continue-as-new. */
export type Shape = Step[][];

const n = fc.integer({ min: 0, max: 99 });

/** Shapes: `events` false leaves external events out; timers wait at most `maxTimerMs`. */
export function shapesOf(options: { events: boolean; maxTimerMs: number }): fc.Arbitrary<Shape> {
  // Fan-outs and races weigh more: their completions are what work items batch.
  const kinds: fc.WeightedArbitrary<Step>[] = [
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("activity" as const), n }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant("fanOut" as const),
        items: fc.array(
          fc.record({ n, broken: fc.integer({ min: 0, max: 5 }).map((x) => x === 0), retry: fc.boolean() }),
          { minLength: 1, maxLength: 6 },
        ),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("timer" as const),
        ms: fc.integer({ min: 1, max: options.maxTimerMs }),
      }),
    },
    ...(options.events ? [{ weight: 1, arbitrary: fc.record({ kind: fc.constant("event" as const) }) }] : []),
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("sub" as const), n, named: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("caught" as const), retry: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("race" as const), n }) },
  ];
  return fc.array(fc.array(fc.oneof(...kinds), { maxLength: 5 }), { minLength: 1, maxLength: 3 });
}

const RETRY = new df.RetryOptions(100, 2);
const RETRY_MORE = new df.RetryOptions(50, 4);
const eventName = (gen: number, i: number) => `e${gen}-${i}`;

export function orchestratorFor(shape: Shape): Gen {
  return function* (ctx: OrchestrationContext) {
    const { gen, acc } = ctx.df.getInput() as { gen: number; acc: unknown[] };
    const out = [...acc];
    for (const [i, s] of shape[gen].entries()) {
      switch (s.kind) {
        case "activity":
          out.push(yield ctx.df.callActivity("double", s.n));
          break;
        case "fanOut": {
          const tasks = s.items.map((it) => {
            const name = it.broken ? "broken" : "double";
            return it.retry
              ? ctx.df.callActivityWithRetry(name, RETRY, it.n)
              : ctx.df.callActivity(name, it.n);
          });
          try {
            out.push(yield ctx.df.Task.all(tasks));
          } catch {
            out.push("fan-out failed");
          }
          break;
        }
        case "timer":
          yield ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + s.ms));
          out.push("t");
          break;
        case "event":
          out.push(yield ctx.df.waitForExternalEvent(eventName(gen, i)));
          break;
        case "sub":
          // A named child's id is unique to its parent: shapes run side by side on one hub must not share one.
          out.push(
            yield ctx.df.callSubOrchestrator(
              "child",
              s.n,
              s.named ? `${ctx.df.instanceId}-child-${gen}-${i}` : undefined,
            ),
          );
          break;
        case "caught":
          try {
            yield s.retry
              ? ctx.df.callActivityWithRetry("broken", RETRY, i)
              : ctx.df.callActivity("broken", i);
            out.push("not caught");
          } catch {
            out.push("caught");
          }
          break;
        case "race": {
          const slow = ctx.df.callActivityWithRetry("broken", RETRY_MORE, i);
          const fast = ctx.df.callActivity("double", s.n);
          const winner: unknown = yield ctx.df.Task.any([slow, fast]);
          out.push(winner === fast ? fast.result : "the failing task won");
          break;
        }
      }
    }
    if (gen + 1 < shape.length) {
      ctx.df.continueAsNew({ gen: gen + 1, acc: out });
      return undefined;
    }
    return out;
  };
}

export const child: Gen = function* (ctx) {
  const doubled = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
  yield ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + 10));
  return doubled + 1;
};

export const activities = {
  double: (x: unknown) => (x as number) * 2,
  broken: (x: unknown) => {
    throw new Error(`broken ${String(x)}`);
  },
};

/** What the shape computes, written independently of any engine. */
export function expectedOutput(shape: Shape): unknown[] {
  const out: unknown[] = [];
  shape.forEach((steps, gen) => {
    steps.forEach((s, i) => {
      if (s.kind === "activity") out.push(s.n * 2);
      else if (s.kind === "fanOut")
        out.push(s.items.some((it) => it.broken) ? "fan-out failed" : s.items.map((it) => it.n * 2));
      else if (s.kind === "timer") out.push("t");
      else if (s.kind === "event") out.push(eventName(gen, i));
      else if (s.kind === "sub") out.push(s.n * 2 + 1);
      else if (s.kind === "race") out.push(s.n * 2);
      else out.push("caught");
    });
  });
  return out;
}

/**
 * Each event is raised long after everything before it settled (steps between waits take < 10^8 virtual ms), so
 * it reaches the execution that waits for it under any delivery order.
 */
export function eventsFor(shape: Shape) {
  const events: { name: string; input: unknown; atMs: number }[] = [];
  shape.forEach((steps, gen) => {
    steps.forEach((s, i) => {
      if (s.kind === "event") {
        const name = eventName(gen, i);
        events.push({ name, input: name, atMs: (events.length + 1) * 1e8 });
      }
    });
  });
  return events;
}
