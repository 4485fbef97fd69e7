import { errorMessage } from "../errorMessage.js";
import { payloadProblem } from "./limits.js";

/**
 * The entity trigger's protocol for out-of-process apps, as the Durable extension speaks it to durable-functions 3.x
 * (EntityTriggerAttributeBindingProvider.EntityContextToString in; TaskEntityShim.ExecuteOutOfProcBatch reads the
 * reply): the function gets `{self: {name, key}, exists, state, batch: [{name, input, isSignal}]}` and returns
 * `{entityExists, entityState, results: [{isError, result, duration}], signals: [{target, name, input}]}`. Pure.
 *
 * The dev host sends one operation per invocation: the extension keeps a batch's final state even when an operation
 * in it threw, and durable-functions' Entity handler shares one state across the batch, so only a batch of one lets
 * a throwing operation fail alone and leave the state as it was before it. Run on the hub by entity-engine.ts.
 */

/** The stored part of an entity between operations (the extension's SchedulerState `exists` / `state`). */
export interface EntityStored {
  exists: boolean;
  /** JSON text of the state; undefined when none. */
  state: string | undefined;
}

export interface EntityOperation {
  name: string;
  /** JSON text of the operation's input; undefined when none. */
  input: string | undefined;
  isSignal: boolean;
}

/** What the host passes as an entityTrigger's data (the extension's out-of-proc entity batch request). */
export interface EntityTriggerInput {
  /** The entity's name and key. */
  self: { name: string; key: string };
  /** Whether the entity has a state. */
  exists: boolean;
  /** JSON text of the state; undefined when none. */
  state: string | undefined;
  /** The operations to run, in order: name, input (JSON text), and whether each is a signal. */
  batch: { name: string; input: string | undefined; isSignal: boolean }[];
}

/** The scheduler id of an entity, as the SDK writes it in CallEntity/SignalEntity actions: `@name@key`. */
export function entitySchedulerId(name: string, key: string): string {
  return `@${name.toLowerCase()}@${key}`;
}

export function parseEntitySchedulerId(id: string): { name: string; key: string } | undefined {
  const at = id.indexOf("@", 1);
  if (!id.startsWith("@") || at < 0) return undefined;
  return { name: id.slice(1, at), key: id.slice(at + 1) };
}

export function entityTriggerInput(
  self: { name: string; key: string },
  stored: EntityStored,
  op: EntityOperation,
): EntityTriggerInput {
  return {
    self,
    exists: stored.exists,
    state: stored.state,
    batch: [{ name: op.name, input: op.input, isSignal: op.isSignal }],
  };
}

/** A signal an operation sent (`context.df.signalEntity`): to `@name@key`, with the input's JSON text. */
export interface EntitySignalOut {
  target: string;
  name: string;
  input: string | undefined;
}

export interface EntityOperationOutcome {
  /** What the entity keeps: the new state, or — the operation failed — the state before it. */
  next: EntityStored;
  /** The caller's answer (callEntity): the result's JSON text, or the error's text. */
  result: { isError: false; value: string | undefined } | { isError: true; message: string };
  /** Signals to send; none when the operation failed (its effects are rolled back, as its state). */
  signals: EntitySignalOut[];
}

interface ReplyWire {
  entityExists?: unknown;
  entityState?: unknown;
  results?: { isError?: unknown; result?: unknown }[];
  signals?: { target?: { name?: unknown; key?: unknown }; name?: unknown; input?: unknown }[];
}

function failed(before: EntityStored, message: string): EntityOperationOutcome {
  return { next: before, result: { isError: true, message }, signals: [] };
}

/** The error text of a thrown operation: the SDK sends `JSON.stringify(error)`, `{}` for an Error; keep what it has. */
function errorText(result: unknown): string {
  if (typeof result !== "string" || result === "" || result === "{}") return "The entity operation threw.";
  return result;
}

/**
 * Reads the entity function's reply to a one-operation batch (`returned`; `thrown` when the invocation itself failed):
 * a failed operation, a reply that is not the protocol's, or a new state over `maxPayloadBytes` keeps the state
 * before the operation and fails only it, naming why.
 */
export function readEntityReply(
  entity: string,
  op: EntityOperation,
  before: EntityStored,
  outcome: { returned: unknown } | { thrown: unknown },
  maxPayloadBytes: number,
): EntityOperationOutcome {
  const what = `Operation '${op.name}' of entity '${entity}'`;
  if ("thrown" in outcome) {
    const e = outcome.thrown;
    return failed(before, `${what} failed: ${errorMessage(e)}`);
  }
  const r = outcome.returned as ReplyWire | null | undefined;
  const first = Array.isArray(r?.results) ? r.results[0] : undefined;
  if (!r || typeof r !== "object" || !first || typeof r.entityExists !== "boolean") {
    return failed(
      before,
      `${what}: the entity function returned no entity state (got ${JSON.stringify(r)?.slice(0, 200)}): is it registered with df.app.entity?`,
    );
  }
  if (first.isError === true) return failed(before, `${what} failed: ${errorText(first.result)}`);
  const state = typeof r.entityState === "string" ? r.entityState : undefined;
  const next: EntityStored = r.entityExists ? { exists: true, state } : { exists: false, state: undefined };
  const tooBig = payloadProblem(
    next.state,
    `The state of entity '${entity}' after operation '${op.name}'`,
    maxPayloadBytes,
  );
  if (tooBig) return failed(before, tooBig.message);
  const value = typeof first.result === "string" ? first.result : undefined;
  const resultTooBig = payloadProblem(value, `The result of ${what.toLowerCase()}`, maxPayloadBytes);
  if (resultTooBig) return failed(before, resultTooBig.message);
  const signals: EntitySignalOut[] = [];
  for (const s of r.signals ?? []) {
    if (typeof s?.target?.name !== "string" || typeof s.target.key !== "string" || typeof s.name !== "string")
      continue;
    signals.push({
      target: entitySchedulerId(s.target.name, s.target.key),
      name: s.name,
      input: typeof s.input === "string" && s.input !== "" ? s.input : undefined,
    });
  }
  return { next, result: { isError: false, value }, signals };
}
