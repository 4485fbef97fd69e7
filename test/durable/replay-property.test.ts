/**
 * Property: for random orchestration shapes — activities in sequence, fan-out with Task.all (some tasks failing,
 * some with retries), timers, external events, sub-orchestrations, continue-as-new, failures caught — built as REAL
 * durable-functions generators, the output reached through `applyMessages` with random work items (1..k messages
 * each, completions delivered in a shuffled order, some twice) equals the in-memory test helper's (testing.ts: one
 * message per replay, in order) and the output the shape implies; no work item replays twice and no history
 * records a completion twice. Fixed seed, so a failure reproduces.
 */
import type { OrchestrationContext } from "durable-functions";
import * as df from "durable-functions";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runOrchestration } from "../../src/devhost/durable/testing.js";
import { drive, type Gen, seeded } from "./work-item-driver.js";

type Step =
  | { kind: "activity"; n: number }
  | { kind: "fanOut"; items: { n: number; broken: boolean; retry: boolean }[] }
  | { kind: "timer"; ms: number }
  | { kind: "event" }
  | { kind: "sub"; n: number; named: boolean }
  | { kind: "caught"; retry: boolean }
  /** Task.any of a retried task that keeps failing and an activity: the activity wins, the retries go on. */
  | { kind: "race"; n: number };
/** One list of steps per execution: each but the last ends with continue-as-new. */
type Shape = Step[][];

const n = fc.integer({ min: 0, max: 99 });
// Fan-outs and races weigh more: their completions are what work items batch.
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("activity" as const), n }),
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
  fc.record({ kind: fc.constant("timer" as const), ms: fc.integer({ min: 1, max: 10_000 }) }),
  fc.record({ kind: fc.constant("event" as const) }),
  fc.record({ kind: fc.constant("sub" as const), n, named: fc.boolean() }),
  fc.record({ kind: fc.constant("caught" as const), retry: fc.boolean() }),
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("race" as const), n }) },
);
const shapes: fc.Arbitrary<Shape> = fc.array(fc.array(step, { maxLength: 5 }), {
  minLength: 1,
  maxLength: 3,
});

const RETRY = new df.RetryOptions(100, 2);
const RETRY_MORE = new df.RetryOptions(50, 4);
const eventName = (gen: number, i: number) => `e${gen}-${i}`;

function orchestratorFor(shape: Shape): Gen {
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
          out.push(yield ctx.df.callSubOrchestrator("child", s.n, s.named ? `child-${gen}-${i}` : undefined));
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

const child: Gen = function* (ctx) {
  const doubled = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
  yield ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + 10));
  return doubled + 1;
};

const activities = {
  double: (x: unknown) => (x as number) * 2,
  broken: (x: unknown) => {
    throw new Error(`broken ${String(x)}`);
  },
};

/** What the shape computes, written independently of any engine. */
function expectedOutput(shape: Shape): unknown[] {
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
function eventsFor(shape: Shape) {
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

describe("replay engine: one replay per work item (property)", () => {
  it("random shapes and deliveries reach the in-memory helper's output, one replay per work item, no completion twice", async () => {
    let batched = 0;
    await fc.assert(
      fc.asyncProperty(
        shapes,
        fc.integer({ min: 1, max: 8 }),
        fc.double({ min: 0.05, max: 0.95, noNaN: true }),
        fc.integer(),
        async (shape, maxBatch, eagerness, seed) => {
          const root = orchestratorFor(shape);
          const events = eventsFor(shape);
          const reference = await runOrchestration(root, {
            input: { gen: 0, acc: [] },
            instanceId: "root",
            name: "root",
            orchestrators: { child },
            activities,
            events,
          });
          const run = await drive(
            "root",
            { gen: 0, acc: [] },
            {
              orchestrators: { root, child },
              activities,
              maxBatch,
              eagerness,
              random: seeded(seed),
              events: events.map((e) => ({ ...e, atMs: Date.UTC(2026, 0, 1) + e.atMs })),
              duplicateRate: 0.1,
            },
          );
          expect(run.violations).toEqual([]);
          expect(reference.status).toBe("Completed");
          expect(reference.output).toEqual(expectedOutput(shape));
          expect(run.root?.status).toBe("Completed");
          expect(JSON.parse(String(run.root?.output))).toEqual(reference.output);
          expect(run.invocations).toBeLessThanOrEqual(run.workItems);
          batched += run.batched;
        },
      ),
      { seed: 20_2026, numRuns: 200 },
    );
    // The runs did replay several messages at once (else this would only re-test one message per replay).
    expect(batched).toBeGreaterThan(100);
  });
});
