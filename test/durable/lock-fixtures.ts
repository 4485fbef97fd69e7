/**
 * What the critical-section tests share (engine-only and on the task hub): a real durable-functions Entity handler
 * (a register: get, set, add), an EntityInvoker that runs it and logs each operation, and the orchestrators —
 * `incrementAll` (a read and a write per entity of its set, safe only under the lock) and `holdAndEnd` (locks one
 * entity, then completes, throws, or waits for an event inside the section), `continueInSection`.
 */
import { createRequire } from "node:module";
import * as df from "durable-functions";
import type { EntityInvoker } from "../../packages/devhost/src/durable/entity-engine.js";
import { entityHandler, runEntityHandler } from "../../packages/devhost/src/durable/testing-entities.js";
import type { Gen } from "./hub-harness.js";

export type { Gen };

const _require = createRequire(import.meta.url);

const register = entityHandler((context) => {
  const current = context.df.getState(() => 0) as number;
  if (context.df.operationName === "set") context.df.setState(context.df.getInput() as number);
  else if (context.df.operationName === "add")
    context.df.setState(current + (context.df.getInput() as number));
  else if (context.df.operationName === "get") context.df.return(current);
});

/** Runs the register entity; each operation it runs is pushed on `ran` as `key:op`. */
export function registerInvoker(ran: string[]): EntityInvoker {
  return async (name, input) => {
    if (name !== "register") return { thrown: new Error(`no entity ${name}`) };
    ran.push(`${input.self.key}:${input.batch[0]?.name}`);
    return runEntityHandler(register, name, input);
  };
}

export const registerId = (key: string) => new df.EntityId("register", key);

/** Increments each entity of its set by one with a read and a write per entity: only the lock makes it safe. */
export const incrementAll: Gen = function* (ctx) {
  const keys = ctx.df.getInput() as string[];
  const before = ctx.df.isLocked().isLocked;
  const lock = (yield ctx.df.lock(keys.map(registerId))) as df.DurableLock;
  const inside = ctx.df.isLocked().ownedLocks.map((e) => e.key);
  for (const k of keys) {
    const v = (yield ctx.df.callEntity(registerId(k), "get")) as number;
    yield ctx.df.callEntity(registerId(k), "set", v + 1);
  }
  lock.release();
  const after = ctx.df.isLocked().isLocked;
  // A call after the release: the release's sequence ids must be the SDK's, or this call never resolves.
  const last = yield ctx.df.callEntity(registerId(keys[0] as string), "get");
  return { before, inside, after, last };
};

/** Locks entity `h`, adds 1 to it, then (input) completes ("done"), throws ("throw") or waits for "go" ("wait"). */
export const holdAndEnd: Gen = function* (ctx) {
  const how = ctx.df.getInput() as string;
  yield ctx.df.lock([registerId("h")]);
  yield ctx.df.callEntity(registerId("h"), "add", 1);
  if (how === "throw") throw new Error("left the section by an exception");
  if (how === "wait") yield ctx.df.waitForExternalEvent("go");
  return "done";
};

/** Locks `h`, adds 1, and continues as new inside the section; the next execution returns. */
export const continueInSection: Gen = function* (ctx) {
  if (ctx.df.getInput() === "again") return "second execution";
  yield ctx.df.lock([registerId("h")]);
  yield ctx.df.callEntity(registerId("h"), "add", 1);
  ctx.df.continueAsNew("again");
  return undefined;
};

export const lockOrchestrators: Record<string, Gen> = { incrementAll, holdAndEnd, continueInSection };
