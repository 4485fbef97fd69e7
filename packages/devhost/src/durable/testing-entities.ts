import { createRequire } from "node:module";
import type * as Functions from "@azure/functions";
import { type EntityTriggerInput, parseEntitySchedulerId, readEntityReply } from "./entity-batch.js";
import {
  applyEntityMessages,
  type EntityInvoker,
  type EntityOutcome,
  entityStoredOf,
} from "./entity-engine.js";
import type { ApplyMessages, OrchestrationState } from "./types.js";

/**
 * Entities for the in-memory orchestration runner (testing.ts): the entity functions a test supplies run through
 * durable-functions' own Entity handler, and their operations are applied by the dev host's entity engine
 * (entity-engine.ts) — so an entity keeps its state between operations, runs them one at a time in the order they
 * arrive, and an operation that throws fails that call (the orchestration can catch it) with the state as it was,
 * as on the task hub.
 */

export type { EntityTriggerInput } from "./entity-batch.js";
export type { EntityOutcome } from "./entity-engine.js";

/** An entity function: what you pass to `df.app.entity` (`(context) => { … context.df.setState(…) … }`). */
// biome-ignore lint/suspicious/noExplicitAny: the SDK's EntityHandler takes its own context type.
export type EntityImplementation = (context: any) => unknown;

/** One operation an entity ran, in the order they ran. */
export interface EntityOperationRun {
  /** The entity id as the SDK writes it: `@name@key`. */
  entity: string;
  /** The operation's name. */
  operation: string;
  /** The operation's input. */
  input: unknown;
  /** Whether it was a signal (no answer) or a call. */
  isSignal: boolean;
  /** Virtual time of the operation. */
  at: string;
  /** What the operation returned, or the error it threw (its message). */
  outcome: { result: unknown } | { error: string };
}

const require = createRequire(import.meta.url);
// By require: @azure/functions and this part of durable-functions are CommonJS whose exports plain Node ESM cannot
// name (test hosts in child processes load this file too).
const { InvocationContext } = require("@azure/functions") as typeof Functions;
const { createEntityFunction } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createEntityFunction: (f: EntityImplementation) => EntityHandler;
};

/** durable-functions' own Entity handler around an entity function: what `df.app.entity` registers. */
export type EntityHandler = (trigger: unknown, ctx: Functions.InvocationContext) => Promise<unknown>;
/** Wraps an entity function in durable-functions' own entity handler, as `df.app.entity` registers it. */
export const entityHandler = (f: EntityImplementation): EntityHandler => createEntityFunction(f);

/**
 * Runs an entity handler on the trigger's data as the worker does — the trigger and the reply through JSON both
 * ways, as they travel between the host and the worker — : what it returned, or what it threw. Never throws.
 */
export async function runEntityHandler(
  handler: EntityHandler,
  name: string,
  input: EntityTriggerInput,
): Promise<EntityOutcome> {
  try {
    const reply = await handler(
      JSON.parse(JSON.stringify(input)),
      new InvocationContext({ functionName: name }),
    );
    return { returned: JSON.parse(JSON.stringify(reply)) };
  } catch (e) {
    return { thrown: e };
  }
}

/**
 * The entity functions as the engine invokes them; `ran` collects each operation and its outcome.
 * @internal testing.ts's plumbing, not part of the package's API: stripped from its .d.ts (`stripInternal`).
 */
export function entityInvokerFor(
  entities: Record<string, EntityImplementation>,
  ran: EntityOperationRun[],
  now: () => string,
  maxPayloadBytes: number,
): EntityInvoker {
  // Entity names are case-insensitive (ids hold them in lower case).
  const handlers = new Map(
    Object.entries(entities).map(([name, fn]) => [name.toLowerCase(), entityHandler(fn)]),
  );
  const parse = (t: string | undefined) => (t === undefined ? undefined : JSON.parse(t));
  const run = async (name: string, input: EntityTriggerInput): Promise<EntityOutcome> => {
    const handler = handlers.get(name.toLowerCase());
    if (!handler) return { thrown: new Error(`No entity function named '${name}' was given to the test.`) };
    return runEntityHandler(handler, name, input);
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

/**
 * The entity engine's work-item applier over the test's entity functions.
 * @internal testing.ts's plumbing, not part of the package's API.
 */
export function entityApplier(invoke: EntityInvoker): ApplyMessages {
  return applyEntityMessages(invoke);
}

/**
 * The entities' final states by `@name@key`: whether each exists and its state (parsed).
 * @internal testing.ts's plumbing, not part of the package's API.
 */
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
