import type { EntityContext } from "durable-functions";

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
