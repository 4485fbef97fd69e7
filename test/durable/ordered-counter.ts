/**
 * A counter entity that checks what it is sent (for the exactly-once tests: hub-entities-once.test.ts, in this
 * process and in hub-child.ts): every `add` carries `{s, n}` — its sender and the sender's own count, 1, 2, … — and
 * the entity keeps the count, each sender's last `n`, and every `add` that did not follow its sender's previous one
 * (a duplicate, a loss or a reordering shows there). Function-based, as durable-functions 3.x defines an entity
 * (`df.app.entity`), run by the SDK's own Entity handler; `signaller` is the orchestration that sends to it.
 */
import { createRequire } from "node:module";
import type { EntityInvoker } from "../../packages/devhost/src/durable/entity-engine.js";
import { entityHandler, runEntityHandler } from "../../packages/devhost/src/durable/testing-entities.js";
import type { Gen } from "./hub-harness.js";

// By require: the kill test's child runs this file outside vitest (see hub-harness.ts).
const require = createRequire(import.meta.url);
// The SDK's EntityId, by require for the same reason.
const df = require("durable-functions") as typeof import("durable-functions");

export interface CounterState {
  count: number;
  /** Each sender's last `n` applied. */
  last: Record<string, number>;
  /** `sender:n after m` for every add that was not its sender's next one (the first few). */
  disorder: string[];
}

export interface AddInput {
  s: string;
  n: number;
}

const DISORDER_KEPT = 20;

const counter = entityHandler((context) => {
  const state = context.df.getState(() => ({ count: 0, last: {}, disorder: [] })) as CounterState;
  switch (context.df.operationName) {
    case "add": {
      const { s, n } = context.df.getInput() as AddInput;
      const before = state.last[s] ?? 0;
      if (n !== before + 1 && state.disorder.length < DISORDER_KEPT)
        state.disorder.push(`${s}:${n} after ${before}`);
      state.last[s] = Math.max(before, n);
      state.count++;
      context.df.setState(state);
      context.df.return(state.count);
      break;
    }
    case "get":
      context.df.return(state);
      break;
  }
});

/** Runs the `counter` entity as the worker would (the trigger's data and the reply through JSON). */
export const invokeCounter: EntityInvoker = async (name, input) =>
  name === "counter" ? runEntityHandler(counter, name, input) : { thrown: new Error(`no entity ${name}`) };

export interface SignallerInput {
  key: string;
  ops: number;
  /** Every `callEvery`-th operation is a callEntity (the orchestration waits for it); the others are signals. */
  callEvery: number;
}

/**
 * Sends `ops` adds to `counter/key` as sender `<instanceId>`: runs of signals in one episode, each run ended by a
 * callEntity (a new episode once its answer comes). Returns the count the last call saw.
 */
export const signaller: Gen = function* (ctx) {
  const { key, ops, callEvery } = ctx.df.getInput() as SignallerInput;
  const id = new df.EntityId("counter", key);
  let seen = 0;
  for (let n = 1; n <= ops; n++) {
    const input: AddInput = { s: ctx.df.instanceId, n };
    if (n % callEvery === 0) seen = (yield ctx.df.callEntity(id, "add", input)) as number;
    else ctx.df.signalEntity(id, "add", input);
  }
  return seen;
};
