/**
 * The orchestrations every scenario runs, as plain durable-functions 3.x generators (what `df.app.orchestration`
 * takes), and their activities. The task hub runs them through the SDK's own Orchestrator (createOrchestrator from
 * durable-functions' testingUtils, as test/durable/hub.test.ts does); the in-memory peer (packages/devhost/src/durable/
 * testing.ts runOrchestration) runs the very same generators.
 */

import { createRequire } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import type * as DurableFunctions from "durable-functions";
import type { OrchestrationContext } from "durable-functions";

// By require: durable-functions is CommonJS whose named exports plain Node ESM may not see (as setup.ts).
const df = createRequire(import.meta.url)("durable-functions") as typeof DurableFunctions;

export type Generator3 = (ctx: OrchestrationContext) => Generator<unknown, unknown, never>;

export const orchestrators = {
  /** Three activities in sequence: input 1 → 2 → 4 → 8. */
  seq3: function* (ctx) {
    let x = ctx.df.getInput() as number;
    for (let i = 0; i < 3; i++) x = (yield ctx.df.callActivity("double", x)) as number;
    return x;
  },
  /** `input` activities at once, then their sum: n → n(n − 1). */
  fanOut: function* (ctx) {
    const n = ctx.df.getInput() as number;
    const results = (yield ctx.df.Task.all(
      Array.from({ length: n }, (_v, i) => ctx.df.callActivity("double", i)),
    )) as number[];
    return results.reduce((a, b) => a + b, 0);
  },
  /** One activity that takes `input` ms. */
  slow: function* (ctx) {
    return yield ctx.df.callActivity("sleep", ctx.df.getInput());
  },
  /** `input` callEntity round trips in sequence to a fresh counter (entities.ts): its final count, `input`. */
  callCounter: function* (ctx) {
    const n = ctx.df.getInput() as number;
    const id = new df.EntityId("counter", ctx.df.instanceId);
    let count = 0;
    for (let i = 0; i < n; i++) count = (yield ctx.df.callEntity(id, "add", 1)) as number;
    return count;
  },
} satisfies Record<string, Generator3>;

export type OrchestratorName = keyof typeof orchestrators;

export const activities: Record<string, (input: unknown) => unknown> = {
  double: (n) => (n as number) * 2,
  sleep: async (ms) => {
    await sleep(ms as number);
    return ms;
  },
};

/** What each orchestration must return (the bench counts wrong outputs: a fast wrong answer is not a result). */
export const expectedOutput = {
  seq3: (input: number) => input * 8,
  fanOut: (n: number) => n * (n - 1),
  slow: (ms: number) => ms,
  callCounter: (n: number) => n,
} satisfies Record<OrchestratorName, (input: number) => number>;
