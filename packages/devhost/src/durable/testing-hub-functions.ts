import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import type * as Functions from "@azure/functions";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import type { EntityInvoker } from "./entity-engine.js";
import { invokerFor, type Orchestrator, type RegisteredOrchestrationHandler, toHandler } from "./testing.js";
import { type EntityImplementation, type EntityOperationRun, entityInvokerFor } from "./testing-entities.js";
import type { ActivityInvoker, OrchestratorInvoker } from "./types.js";

/**
 * The test hub's functions (testing-hub.ts): the orchestrators, activities and entities a test registers, as the task
 * hub invokes them — orchestrators through durable-functions' own Orchestrator, entities through its own Entity
 * handler (testing-entities.ts), activities with their input and an InvocationContext as the dev host's worker calls
 * a `df.app.activity` handler — each call's trigger data and reply through JSON, as between the host and the worker.
 */

/** An activity's handler: what `df.app.activity(name, { handler })` takes (the input, the invocation context). */
export type ActivityHandler = (input: unknown, context: Functions.InvocationContext) => unknown;

/** An activity as a test registers it: its handler, or the options `df.app.activity` takes (`{ handler }`). */
export type ActivityRegistration = ActivityHandler | { handler: ActivityHandler };

/** One activity invocation the test hub ran, and how it ended. */
export interface ActivityInvocation {
  /** The activity's name. */
  name: string;
  /** The instance that called it. */
  instanceId: string;
  /** Its input (parsed). */
  input: unknown;
  /** What it returned, or the message of what it threw. */
  outcome: { result: unknown } | { error: string };
}

/** Why a test hub refused a call or a wait gave up: `code` says which in a word. */
export type TestHubErrorCode =
  | "UnknownFunction"
  | "InvalidFunction"
  | "InstanceNotFound"
  | "InstanceNotRunning"
  | "WaitTimedOut"
  | "TooManyTimers"
  | "InvalidDuration";

/** A test hub's refusal (an unknown function name, an instance that is not there) or a wait that gave up. */
export class TestHubError extends CosmosFeedError {
  /** Which refusal. */
  declare readonly code: TestHubErrorCode;
  /** A refusal: `code` the reason, `statusCode` what the durable HTTP API answers in the same case. */
  constructor(message: string, code: TestHubErrorCode, statusCode: number) {
    super(message, { code, statusCode });
  }
}

/** The functions a test hub runs, by name (as the app registers them with `df.app`). */
export interface TestHubFunctions {
  /** Orchestrators: the generator function `df.app.orchestration` takes, or the handler it registered. */
  orchestrators?: Record<string, Orchestrator>;
  /** Activities: the handler `df.app.activity` takes, or its options (`{ handler }`). */
  activities?: Record<string, ActivityRegistration>;
  /** Entities: the function `df.app.entity` takes (names are case-insensitive, as the extension's). */
  entities?: Record<string, EntityImplementation>;
}

const require = createRequire(import.meta.url);
// By require: @azure/functions is a CommonJS bundle whose InvocationContext plain Node ESM cannot name (testing.ts).
const { InvocationContext } = require("@azure/functions") as typeof Functions;

/** The registrations checked: every one a function (a typo'd import is undefined), else InvalidFunction. */
function checked<T>(kind: string, entries: Record<string, T> | undefined, fn: (v: T) => unknown): void {
  for (const [name, value] of Object.entries(entries ?? {})) {
    if (typeof fn(value) !== "function")
      throw new TestHubError(
        `The ${kind} '${name}' given to the test hub is not a function (${typeof fn(value)}).`,
        "InvalidFunction",
        400,
      );
  }
}

const handlerOf = (a: ActivityRegistration): ActivityHandler | undefined =>
  typeof a === "function" ? a : (a as { handler: ActivityHandler } | undefined)?.handler;

/** The hub's invokers over the test's functions; `activityCalls` and `entityOperations` collect what ran. */
export function testHubInvokers(
  functions: TestHubFunctions,
  record: { activityCalls: ActivityInvocation[]; entityOperations: EntityOperationRun[] },
  now: () => string,
  maxPayloadBytes: number,
): { invokeOrchestrator: OrchestratorInvoker; invokeActivity: ActivityInvoker; invokeEntity: EntityInvoker } {
  checked("orchestrator", functions.orchestrators, (o) => o);
  checked("activity", functions.activities, handlerOf);
  checked("entity", functions.entities, (e) => e);
  const orchestrators = new Map<string, RegisteredOrchestrationHandler>(
    Object.entries(functions.orchestrators ?? {}).map(([n, o]) => [n, toHandler(o)]),
  );
  const activities = new Map(Object.entries(functions.activities ?? {}).map(([n, a]) => [n, handlerOf(a)]));
  const invokeActivity: ActivityInvoker = async (item) => {
    const input: unknown = item.input === null ? null : JSON.parse(item.input);
    const handler = activities.get(item.name);
    const call = { name: item.name, instanceId: item.instanceId, input };
    if (!handler) {
      // The dev host's answer (runtime.ts) for an activity the app does not have.
      const message = `The function '${item.name}' doesn't exist, is disabled, or is not an activity function.`;
      record.activityCalls.push({ ...call, outcome: { error: message } });
      return { failure: { ErrorType: "FunctionFailedException", ErrorMessage: message } };
    }
    const context = new InvocationContext({
      functionName: item.name,
      invocationId: randomUUID(),
      triggerMetadata: { instanceId: item.instanceId },
    });
    try {
      // Through JSON, as the worker's reply travels to the host.
      const result: unknown = JSON.parse(JSON.stringify((await handler(input, context)) ?? null));
      record.activityCalls.push({ ...call, outcome: { result } });
      return { result: JSON.stringify(result) };
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      record.activityCalls.push({ ...call, outcome: { error: error.message } });
      return {
        failure: {
          ErrorType: error.name,
          ErrorMessage: error.message,
          ...(error.stack ? { StackTrace: error.stack } : {}),
          IsNonRetriable: false,
        },
      };
    }
  };
  return {
    invokeOrchestrator: invokerFor(orchestrators, () => {}),
    invokeActivity,
    invokeEntity: entityInvokerFor(functions.entities ?? {}, record.entityOperations, now, maxPayloadBytes),
  };
}
