/**
 * Property: for random orchestration shapes — activities in sequence, fan-out with Task.all (some tasks failing,
 * some with retries), timers, external events, sub-orchestrations, continue-as-new, failures caught — built as REAL
 * durable-functions generators, the output reached through `applyMessages` with random work items (1..k messages
 * each, completions delivered in a shuffled order, some twice) equals the in-memory test helper's (testing.ts: one
 * message per replay, in order) and the output the shape implies; no work item replays twice and no history
 * records a completion twice. Fixed seed, so a failure reproduces.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runOrchestration } from "../../packages/devhost/src/durable/testing.js";
import {
  activities,
  child,
  eventsFor,
  expectedOutput,
  orchestratorFor,
  shapesOf,
} from "./orchestration-shapes.js";
import { drive, seeded } from "./work-item-driver.js";

const shapes = shapesOf({ events: true, maxTimerMs: 10_000 });

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
