/**
 * The orchestrations every scenario runs, as plain durable-functions 3.x generators (what `df.app.orchestration`
 * takes), and their activities. The task hub runs them through the SDK's own Orchestrator (createOrchestrator from
 * durable-functions' testingUtils, as test/durable/hub.test.ts does); the in-memory peer (src/devhost/durable/
 * testing.ts runOrchestration) runs the very same generators.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { OrchestrationContext } from "durable-functions";

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
} satisfies Record<OrchestratorName, (input: number) => number>;
