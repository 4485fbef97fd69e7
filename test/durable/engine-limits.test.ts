/**
 * The payload limits inside the replay engine (engine-limits.ts), with REAL durable-functions orchestrators run
 * through applyMessages by the in-memory driver: each limit exactly at its value passes and one past it fails the
 * instance (or, for an activity's result, the task) with the limit named and FailureDetails as the extension
 * reports them. maxPayloadBytes is 2,000 here so that the payloads stay small.
 */
import * as df from "durable-functions";
import { describe, expect, it } from "vitest";
import { activityResultEvent } from "../../packages/devhost/src/durable/engine.js";
import {
  boundedFailureDetails,
  boundedText,
  FAILURE_TEXT_BYTES,
} from "../../packages/devhost/src/durable/engine-limits.js";
import { DURABLE_LIMITS } from "../../packages/devhost/src/durable/limits.js";
import {
  type ActivityWorkItem,
  type HistoryEvent,
  HistoryEventType,
  type OrchestrationState,
} from "../../packages/devhost/src/durable/types.js";
import { drive, type Gen, seeded } from "./work-item-driver.js";

const MAX = 2000;
const text = (bytes: number) => "x".repeat(bytes);
/** An object whose JSON text is exactly `bytes` long ({"s":"xx…"} is 8 bytes of frame). */
const sized = (bytes: number) => ({ s: text(bytes - 8) });
/** Arrays nested `depth` deep. */
const nested = (depth: number): unknown => (depth === 0 ? 0 : [nested(depth - 1)]);

async function run(
  orchestrators: Record<string, Gen>,
  input?: unknown,
  activities: Record<string, (input: unknown) => unknown> = {},
) {
  const r = await drive("main", input, {
    orchestrators,
    activities: { echo: (x) => x, ...activities },
    maxBatch: 3,
    random: seeded(7),
    maxPayloadBytes: MAX,
  });
  expect(r.violations).toEqual([]);
  return r;
}

function ending(state: OrchestrationState | undefined): HistoryEvent | undefined {
  return state?.history.find((e) => e.EventType === HistoryEventType.ExecutionCompleted);
}

function expectLimitFailure(state: OrchestrationState | undefined, errorType: string, message: string) {
  expect(state?.status).toBe("Failed");
  expect(String(JSON.parse(String(state?.output)))).toContain(message);
  expect(ending(state)?.FailureDetails).toEqual({
    ErrorType: errorType,
    ErrorMessage: expect.stringContaining(message),
    IsNonRetriable: true,
  });
}

describe("payload limits in the engine", () => {
  it("orchestration output: exactly the limit completes, one byte more fails the instance (PayloadTooLarge)", async () => {
    const main: Gen = function* (ctx) {
      yield ctx.df.callActivity("echo", 1);
      return text((ctx.df.getInput() as number) - 2); // a JSON string: 2 quotes
    };
    const ok = await run({ main }, MAX);
    expect(ok.root?.status).toBe("Completed");
    expect(ok.root?.output?.length).toBe(MAX);
    const over = await run({ main }, MAX + 1);
    expectLimitFailure(
      over.root,
      "PayloadTooLarge",
      `The output of orchestration 'main' is ${MAX + 1} bytes; the task hub stores at most ${MAX} (DURABLE_MAX_PAYLOAD_BYTES).`,
    );
  });

  it("orchestration output nested deeper than the design limit fails the instance (PayloadTooDeep)", async () => {
    const main: Gen = function* (ctx) {
      yield ctx.df.callActivity("echo", 1);
      return nested(ctx.df.getInput() as number);
    };
    expect((await run({ main }, DURABLE_LIMITS.payloadDepth)).root?.status).toBe("Completed");
    const deep = await run({ main }, DURABLE_LIMITS.payloadDepth + 1);
    expectLimitFailure(
      deep.root,
      "PayloadTooDeep",
      `nests objects and arrays ${DURABLE_LIMITS.payloadDepth + 1} deep; the task hub allows at most ${DURABLE_LIMITS.payloadDepth}.`,
    );
  });

  it("an activity's input: at the limit it runs, over it the instance fails before the activity is scheduled", async () => {
    const main: Gen = function* (ctx) {
      return yield ctx.df.callActivity("echo", sized(ctx.df.getInput() as number));
    };
    const ok = await run({ main }, MAX);
    expect(ok.root?.status).toBe("Completed");
    const over = await run({ main }, MAX + 1);
    expectLimitFailure(over.root, "PayloadTooLarge", `The input of activity 'echo' is ${MAX + 1} bytes`);
    expect(over.root?.history.some((e) => e.EventType === HistoryEventType.TaskScheduled)).toBe(false);
  });

  it("a retried activity's input is checked the same way", async () => {
    const main: Gen = function* (ctx) {
      return yield ctx.df.callActivityWithRetry("echo", new df.RetryOptions(10, 2), sized(MAX + 1));
    };
    expectLimitFailure((await run({ main })).root, "PayloadTooLarge", "The input of activity 'echo'");
  });

  it("a sub-orchestration's input: at the limit it runs, over it the parent fails", async () => {
    const child: Gen = function* (ctx) {
      yield ctx.df.callActivity("echo", 1);
      return (ctx.df.getInput() as { s: string }).s.length;
    };
    const main: Gen = function* (ctx) {
      return yield ctx.df.callSubOrchestrator("child", sized(ctx.df.getInput() as number));
    };
    const ok = await run({ main, child }, MAX);
    expect(ok.root?.output).toBe(String(MAX - 8));
    const over = await run({ main, child }, MAX + 1);
    expectLimitFailure(
      over.root,
      "PayloadTooLarge",
      `The input of sub-orchestration 'child' is ${MAX + 1} bytes`,
    );
    expect(over.instances.size).toBe(1); // the child never started
  });

  it("a sub-orchestration whose output is over the limit fails; its parent hears why and can catch it", async () => {
    const child: Gen = function* (ctx) {
      yield ctx.df.callActivity("echo", 1);
      return text(MAX);
    };
    const main: Gen = function* (ctx) {
      try {
        yield ctx.df.callSubOrchestrator("child", null, "the-child");
        return "unexpected";
      } catch (e) {
        return (e as Error).message;
      }
    };
    const r = await run({ main, child });
    expect(r.instances.get("the-child")?.status).toBe("Failed");
    expect(r.root?.status).toBe("Completed");
    expect(JSON.parse(String(r.root?.output))).toContain(
      `PayloadTooLarge: The output of orchestration 'child' is ${MAX + 2} bytes`,
    );
  });

  it("a continue-as-new input: at the limit the next execution runs, over it the instance fails", async () => {
    const main: Gen = function* (ctx) {
      const input = ctx.df.getInput() as number | { s: string };
      if (typeof input === "number") {
        yield ctx.df.callActivity("echo", 1);
        ctx.df.continueAsNew(sized(input));
        return undefined;
      }
      return input.s.length;
    };
    const ok = await run({ main }, MAX);
    expect(ok.root?.status).toBe("Completed");
    expect(ok.root?.output).toBe(String(MAX - 8));
    const over = await run({ main }, MAX + 1);
    expectLimitFailure(
      over.root,
      "PayloadTooLarge",
      `The continue-as-new input of orchestration 'main' is ${MAX + 1} bytes`,
    );
  });

  it("a custom status over 16 KB of UTF-16 JSON text fails the instance; at 16 KB it is kept", async () => {
    // A JSON string of n characters is n + 2 UTF-16 code units, 2 bytes each.
    const atLimit = DURABLE_LIMITS.customStatusBytes / 2 - 2;
    const main: Gen = function* (ctx) {
      ctx.df.setCustomStatus(text(ctx.df.getInput() as number));
      yield ctx.df.callActivity("echo", 1);
      return "done";
    };
    const ok = await run({ main }, atLimit);
    expect(ok.root?.status).toBe("Completed");
    expect(ok.root?.customStatus).toBe(JSON.stringify(text(atLimit)));
    const over = await run({ main }, atLimit + 1);
    expectLimitFailure(
      over.root,
      "PayloadTooLarge",
      `The custom status is ${DURABLE_LIMITS.customStatusBytes + 2} bytes of UTF-16 JSON text; the limit is 16 KB (16384 bytes).`,
    );
    expect(over.root?.customStatus).toBeNull();
  });

  it("an orchestrator's failure with a 3 MB message fails the instance with the message cut to a bound", async () => {
    const main: Gen = function* (ctx) {
      yield ctx.df.callActivity("echo", 1);
      throw new Error(text(3_000_000));
    };
    const r = await run({ main });
    expect(r.root?.status).toBe("Failed");
    expect(Buffer.byteLength(String(r.root?.output))).toBeLessThan(FAILURE_TEXT_BYTES + 200);
    const details = ending(r.root)?.FailureDetails as { ErrorMessage: string };
    expect(Buffer.byteLength(details.ErrorMessage)).toBeLessThanOrEqual(FAILURE_TEXT_BYTES);
    expect(details.ErrorMessage).toContain("(cut: ");
  });
});

describe("activityResultEvent", () => {
  const item: ActivityWorkItem = {
    instanceId: "i",
    executionId: "e",
    taskScheduledId: 3,
    name: "big",
    input: null,
  };
  const now = new Date(Date.UTC(2026, 0, 1));

  it("a result at the limit is TaskCompleted; one byte more is TaskFailed naming the limit", () => {
    const atLimit = JSON.stringify(text(MAX - 2));
    expect(activityResultEvent(item, { result: atLimit }, now, MAX)).toEqual({
      EventType: HistoryEventType.TaskCompleted,
      EventId: -1,
      IsPlayed: false,
      Timestamp: now.toISOString(),
      TaskScheduledId: 3,
      Result: atLimit,
    });
    const over = activityResultEvent(item, { result: JSON.stringify(text(MAX - 1)) }, now, MAX);
    const message = `The result of activity 'big' is ${MAX + 1} bytes; the task hub stores at most ${MAX} (DURABLE_MAX_PAYLOAD_BYTES).`;
    expect(over).toMatchObject({
      EventType: HistoryEventType.TaskFailed,
      TaskScheduledId: 3,
      Reason: message,
      FailureDetails: { ErrorType: "PayloadTooLarge", ErrorMessage: message, IsNonRetriable: true },
    });
  });

  it("a result nested too deep is TaskFailed (PayloadTooDeep); no result is the JSON null", () => {
    const deep = activityResultEvent(
      item,
      { result: JSON.stringify(nested(DURABLE_LIMITS.payloadDepth + 1)) },
      now,
      MAX,
    );
    expect(deep.FailureDetails).toMatchObject({ ErrorType: "PayloadTooDeep", IsNonRetriable: true });
    expect(activityResultEvent(item, { result: null }, now, MAX).Result).toBe("null");
  });

  it("a failure is TaskFailed with its FailureDetails, texts cut to a bound", () => {
    const failure = {
      ErrorType: "RangeError",
      ErrorMessage: text(3_000_000),
      StackTrace: `RangeError\n    at ${text(100_000)}`,
      IsNonRetriable: false,
    };
    const e = activityResultEvent(item, { failure }, now, MAX);
    expect(e.EventType).toBe(HistoryEventType.TaskFailed);
    const d = e.FailureDetails as typeof failure;
    expect(d.ErrorType).toBe("RangeError");
    expect(d.IsNonRetriable).toBe(false);
    expect(Buffer.byteLength(d.ErrorMessage)).toBeLessThanOrEqual(FAILURE_TEXT_BYTES);
    expect(Buffer.byteLength(d.StackTrace)).toBeLessThanOrEqual(FAILURE_TEXT_BYTES);
    expect(e.Reason).toBe(d.ErrorMessage);
    expect(e.Details).toBe(d.StackTrace);
    expect(d.ErrorMessage).toContain("(cut: 3000000 bytes in all)");
  });

  it("an over-limit result reaches the orchestrator as a failure it can catch", async () => {
    const main: Gen = function* (ctx) {
      try {
        yield ctx.df.callActivity("big");
        return "unexpected";
      } catch (e) {
        return (e as Error).message;
      }
    };
    const r = await run({ main }, undefined, { big: () => text(MAX) });
    expect(r.root?.status).toBe("Completed");
    expect(JSON.parse(String(r.root?.output))).toBe(
      `PayloadTooLarge: The result of activity 'big' is ${MAX + 2} bytes; the task hub stores at most ${MAX} (DURABLE_MAX_PAYLOAD_BYTES).`,
    );
  });
});

describe("bounded failure texts", () => {
  it("cuts on a character boundary and keeps short texts as they are", () => {
    expect(boundedText("short")).toBe("short");
    const cut = boundedText("é".repeat(20_000), 1001);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(1001);
    expect(cut).not.toContain("\uFFFD");
    expect(cut.endsWith("(cut: 40000 bytes in all)")).toBe(true);
  });

  it("keeps at most 8 inner failures", () => {
    let d: { ErrorType: string; ErrorMessage: string; InnerFailure?: unknown } = {
      ErrorType: "E",
      ErrorMessage: "0",
    };
    for (let i = 1; i < 20; i++) d = { ErrorType: "E", ErrorMessage: String(i), InnerFailure: d };
    let levels = 0;
    for (
      let x: unknown = boundedFailureDetails(d as never);
      x;
      x = (x as { InnerFailure?: unknown }).InnerFailure
    )
      levels++;
    expect(levels).toBe(9);
  });
});
