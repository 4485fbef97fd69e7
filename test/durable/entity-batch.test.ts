import { InvocationContext } from "@azure/functions";
import { describe, expect, it } from "vitest";
import {
  type EntityOperation,
  type EntityStored,
  entitySchedulerId,
  entityTriggerInput,
  parseEntitySchedulerId,
  readEntityReply,
} from "../../packages/devhost/src/durable/entity-batch.js";
import { entityHandler } from "../../packages/devhost/src/durable/testing-entities.js";
import { counterOperation } from "./counter-entity.js";

/** The durable-functions counter sample, plus an operation that sets the state and then throws (counter-entity.ts). */
const counter = entityHandler((context) => {
  if (counterOperation(context, -1)) return;
  const current = context.df.getState(() => 0) as number;
  switch (context.df.operationName) {
    case "grow":
      context.df.setState("x".repeat(context.df.getInput() as number));
      break;
    case "notify":
      context.df.signalEntity({ name: "audit", key: "k" } as never, "log", current);
      break;
    case "delete":
      context.df.destructOnExit();
      break;
  }
});

const self = { name: "counter", key: "k1" };
const LIMIT = 1_024;

async function run(stored: EntityStored, op: EntityOperation) {
  const input = entityTriggerInput(self, stored, op);
  // Through JSON both ways, as the binding data and the worker's reply travel.
  const trigger = JSON.parse(JSON.stringify(input));
  let outcome: { returned: unknown } | { thrown: unknown };
  try {
    const returned = await counter(trigger, new InvocationContext({ functionName: "counter" }));
    outcome = { returned: JSON.parse(JSON.stringify(returned)) };
  } catch (e) {
    outcome = { thrown: e };
  }
  return readEntityReply("@counter@k1", op, stored, outcome, LIMIT);
}

const op = (name: string, input?: unknown, isSignal = true): EntityOperation => ({
  name,
  input: input === undefined ? undefined : JSON.stringify(input),
  isSignal,
});

describe("entity trigger protocol (one operation per invocation)", () => {
  it("keeps the state between operations and answers callEntity with the result", async () => {
    let stored: EntityStored = { exists: false, state: undefined };
    for (const n of [1, 2, 3]) stored = (await run(stored, op("add", n))).next;
    expect(stored).toEqual({ exists: true, state: "6" });
    const got = await run(stored, op("get", undefined, false));
    expect(got.result).toEqual({ isError: false, value: "6" });
    expect(got.next).toEqual(stored);
  });

  it("a throwing operation fails alone: the state is the one before it, its signals are not sent", async () => {
    const before: EntityStored = { exists: true, state: "5" };
    const out = await run(before, op("poison"));
    expect(out.next).toEqual(before);
    expect(out.result.isError).toBe(true);
    expect(out.signals).toEqual([]);
    expect((await run(out.next, op("add", 1))).next).toEqual({ exists: true, state: "6" });
  });

  it("a state over the payload limit fails the operation and keeps the state, naming the limit", async () => {
    const before: EntityStored = { exists: true, state: "5" };
    const out = await run(before, op("grow", 2 * LIMIT));
    expect(out.next).toEqual(before);
    expect(out.result).toMatchObject({ isError: true });
    expect(JSON.stringify(out.result)).toContain("DURABLE_MAX_PAYLOAD_BYTES");
    expect((await run(before, op("grow", 10))).next.state).toBe(JSON.stringify("x".repeat(10)));
  });

  it("reads the signals an operation sends and a deleted entity", async () => {
    const notified = await run({ exists: true, state: "4" }, op("notify"));
    expect(notified.signals).toEqual([{ target: "@audit@k", name: "log", input: "4" }]);
    expect((await run({ exists: true, state: "4" }, op("delete"))).next).toEqual({
      exists: false,
      state: undefined,
    });
  });

  it("a reply that is not the protocol's, or a thrown invocation, fails the operation with the reason", () => {
    const before: EntityStored = { exists: true, state: "1" };
    const odd = readEntityReply("@counter@k1", op("add", 1), before, { returned: "hello" }, LIMIT);
    expect(odd.next).toEqual(before);
    expect(JSON.stringify(odd.result)).toContain("df.app.entity");
    const thrown = readEntityReply("@counter@k1", op("add"), before, { thrown: new Error("gone") }, LIMIT);
    expect(thrown.result).toEqual({
      isError: true,
      message: "Operation 'add' of entity '@counter@k1' failed: gone",
    });
  });

  it("scheduler ids as the SDK writes them", () => {
    expect(entitySchedulerId("Counter", "K1")).toBe("@counter@K1");
    expect(parseEntitySchedulerId("@counter@a@b")).toEqual({ name: "counter", key: "a@b" });
    expect(parseEntitySchedulerId("counter")).toBeUndefined();
  });
});
