import { createRequire } from "node:module";
import type { EntityContext, OrchestrationContext } from "durable-functions";

// By require: the kill test's child loads test files outside vitest (see hub-harness.ts).
const require = createRequire(import.meta.url);
const df = require("durable-functions") as typeof import("durable-functions");

/**
 * The durable-functions counter sample's operations — `add` (adds its input), `get` (returns the count) — and
 * `poison`, which sets the state to `poisoned` and then throws (the engine must keep the state as it was). False
 * for any other operation: the caller's entity handles it.
 */
export function counterOperation(context: EntityContext<unknown>, poisoned: unknown = -1000): boolean {
  const current = context.df.getState(() => 0) as number;
  switch (context.df.operationName) {
    case "add":
      context.df.setState(current + (context.df.getInput() as number));
      return true;
    case "get":
      context.df.return(current);
      return true;
    case "poison":
      context.df.setState(poisoned);
      throw new Error("poisoned");
    default:
      return false;
  }
}

/**
 * What the entity tests run on the counter `@counter@<key>`, in memory and on the task hub alike: three calls, a
 * call that throws (caught), a signal, a last call — `{after: 16, error}` when each ran once, in order.
 */
export function* useCounterOn(ctx: OrchestrationContext, key: string): Generator<unknown, unknown, unknown> {
  const id = new df.EntityId("counter", key);
  for (const n of [1, 2, 3]) yield ctx.df.callEntity(id, "add", n);
  let error = "";
  try {
    yield ctx.df.callEntity(id, "poison");
  } catch (e) {
    error = (e as Error).message;
  }
  ctx.df.signalEntity(id, "add", 10);
  const after = yield ctx.df.callEntity(id, "get");
  return { after, error };
}
