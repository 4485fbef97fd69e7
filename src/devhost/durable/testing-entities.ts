import { createRequire } from "node:module";
import { InvocationContext } from "@azure/functions";
import { type EntityTriggerInput, parseEntitySchedulerId, readEntityReply } from "./entity-batch.js";
import { applyEntityMessages, type EntityInvoker, entityStoredOf } from "./entity-engine.js";
import type { ApplyMessages, OrchestrationState } from "./types.js";

/**
 * Entities for the in-memory orchestration runner (testing.ts): the entity functions a test supplies run through
 * durable-functions' own Entity handler, and their operations are applied by the dev host's entity engine
 * (entity-engine.ts) — so an entity keeps its state between operations, runs them one at a time in the order they
 * arrive, and an operation that throws fails that call (the orchestration can catch it) with the state as it was,
 * as on the task hub.
 */

/** An entity function: what you pass to `df.app.entity` (`(context) => { … context.df.setState(…) … }`). */
// biome-ignore lint/suspicious/noExplicitAny: the SDK's EntityHandler takes its own context type.
export type EntityImplementation = (context: any) => unknown;

/** One operation an entity ran, in the order they ran. */
export interface EntityOperationRun {
  /** The entity id as the SDK writes it: `@name@key`. */
  entity: string;
  operation: string;
  input: unknown;
  /** Whether it was a signal (no answer) or a call. */
  isSignal: boolean;
  /** Virtual time of the operation. */
  at: string;
  outcome: { result: unknown } | { error: string };
}

const require = createRequire(import.meta.url);
type EntityOutcome = { returned: unknown } | { thrown: unknown };

/** The entity functions as the engine invokes them; `ran` collects each operation and its outcome. */
export function entityInvokerFor(
  entities: Record<string, EntityImplementation>,
  ran: EntityOperationRun[],
  now: () => string,
  maxPayloadBytes: number,
): EntityInvoker {
  const { createEntityFunction } = require("durable-functions/lib/src/util/testingUtils.js") as {
    createEntityFunction: (
      f: EntityImplementation,
    ) => (trigger: unknown, ctx: InvocationContext) => Promise<unknown>;
  };
  // Entity names are case-insensitive (ids hold them in lower case).
  const handlers = new Map(
    Object.entries(entities).map(([name, fn]) => [name.toLowerCase(), createEntityFunction(fn)]),
  );
  const parse = (t: string | undefined) => (t === undefined ? undefined : JSON.parse(t));
  const run = async (name: string, input: EntityTriggerInput): Promise<EntityOutcome> => {
    const handler = handlers.get(name.toLowerCase());
    if (!handler) return { thrown: new Error(`No entity function named '${name}' was given to the test.`) };
    try {
      // Through JSON both ways, as the trigger and the reply travel between the host and the worker.
      const reply = await handler(
        JSON.parse(JSON.stringify(input)),
        new InvocationContext({ functionName: name }),
      );
      return { returned: JSON.parse(JSON.stringify(reply)) };
    } catch (e) {
      return { thrown: e };
    }
  };
  return async (name, input) => {
    const outcome = await run(name, input);
    const op = input.batch[0] ?? { name: "", input: undefined, isSignal: true };
    const entity = `@${input.self.name}@${input.self.key}`;
    // What the caller gets, read as the engine reads it.
    const r = readEntityReply(entity, op, input, outcome, maxPayloadBytes).result;
    ran.push({
      entity,
      operation: op.name,
      input: parse(op.input),
      isSignal: op.isSignal,
      at: now(),
      outcome: r.isError ? { error: r.message } : { result: parse(r.value) },
    });
    return outcome;
  };
}

/** The entity engine's work-item applier over the test's entity functions. */
export function entityApplier(invoke: EntityInvoker): ApplyMessages {
  return applyEntityMessages(invoke);
}

/** The entities' final states by `@name@key`: whether each exists and its state (parsed). */
export function entityStates(
  instances: Map<string, OrchestrationState>,
): Record<string, { exists: boolean; state: unknown }> {
  const out: Record<string, { exists: boolean; state: unknown }> = {};
  for (const [id, state] of instances) {
    if (!parseEntitySchedulerId(id)) continue;
    const stored = entityStoredOf(state);
    out[id] = {
      exists: stored.exists,
      state: stored.state === undefined ? undefined : JSON.parse(stored.state),
    };
  }
  return out;
}
