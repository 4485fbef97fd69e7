import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import type { InvocationContext } from "@azure/functions";
import { applyMessage, isTerminal, readOrchestratorOutcome, triggerInput } from "./engine.js";
import { isEntityId } from "./entity-engine.js";
import { timerFiredKey, timerFiredMessage } from "./protocol.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import {
  type EntityImplementation,
  type EntityOperationRun,
  entityApplier,
  entityInvokerFor,
  entityStates,
} from "./testing-entities.js";

export type { EntityImplementation, EntityOperationRun } from "./testing-entities.js";
export {
  ActionType,
  type ActionTypeNumber,
  type FailureDetails,
  type HistoryEvent,
  HistoryEventType,
  type HistoryEventTypeNumber,
  type OrchestratorAction,
  type OrchestratorReply,
  type RetryOptionsWire,
  type RuntimeStatus,
} from "./types.js";

import { errorMessage } from "../errorMessage.js";
import {
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type OrchestratorInvoker,
  type OrchestratorReply,
  type RuntimeStatus,
} from "./types.js";

/**
 * Unit-test durable orchestrators without a host (durable-js #160): `runOrchestration` runs an orchestrator to its
 * end in memory — on the same replay engine the dev host uses, so sequence ids, retries, timers and the
 * determinism check behave as they do there — with activities you supply, durable timers on a virtual clock
 * (they fire at once, in order, without waiting) and external events raised at virtual times. `replayOrchestration`
 * drives it once with a history you write and returns what it decided. Entities (`callEntity`, `signalEntity`) run
 * with the entity functions you supply, on the dev host's entity engine (testing-entities.ts). Docs:
 * docs/durable-testing.md.
 */

/** The user's generator function (what `df.app.orchestration` takes), or the handler `df.app` registered. */
// biome-ignore lint/suspicious/noExplicitAny: the SDK's OrchestrationHandler yields and returns any values.
export type OrchestratorFunction = (context: any) => Generator<unknown, unknown, any>;
/**
 * An orchestration's handler as `df.app.orchestration` registered it (the trigger and invocation context in,
 * the reply out).
 */
export type RegisteredOrchestrationHandler = (
  trigger: unknown,
  context: InvocationContext,
) => Promise<unknown>;
/**
 * What `runOrchestration` and `replayOrchestration` drive: the generator function, or its registered handler.
 */
export type Orchestrator = OrchestratorFunction | RegisteredOrchestrationHandler;

/**
 * An activity's implementation: takes the activity's input and which attempt (1-based) of which instance this
 * is; returns its result or throws.
 */
export type ActivityImplementation = (
  input: unknown,
  call: { attempt: number; instanceId: string },
) => unknown;

/**
 * Options of `runOrchestration`: the input, the activities, sub-orchestrators, entities, external events
 * (virtual ms).
 */
export interface RunOrchestrationOptions {
  /** The orchestration's input. */
  input?: unknown;
  /** The instance id (default: a new one). */
  instanceId?: string;
  /** The orchestrator's name (its context's functionName); "orchestrator" when not given. */
  name?: string;
  /** Virtual start time (default 2026-01-01T00:00:00Z): currentUtcDateTime and timers count from it. */
  startTime?: Date;
  /** Activity implementations by name; a missing one fails its task with "activity 'x' is not defined". */
  activities?: Record<string, ActivityImplementation>;
  /** Sub-orchestrators by name. */
  orchestrators?: Record<string, Orchestrator>;
  /**
   * Entity functions by entity name (what you pass to `df.app.entity`): `callEntity` and `signalEntity` run them,
   * one operation at a time with the state kept, as the dev host does. A missing one fails the operation.
   */
  entities?: Record<string, EntityImplementation>;
  /** External events, raised at `atMs` virtual ms after the start (default 0, i.e. once the orchestrator waits). */
  events?: { name: string; input?: unknown; atMs?: number }[];
  /** Stop after this many episodes, or entity operations (a guard for what never ends); default 10,000. */
  maxEpisodes?: number;
}

/** One activity call the orchestration made, and how it ended. */
export interface ActivityCall {
  /** The activity's name. */
  name: string;
  /** Its input. */
  input: unknown;
  /** Which attempt (1-based; above 1 under a retry policy). */
  attempt: number;
  /** The calling instance's id. */
  instanceId: string;
  /** Virtual time of the call. */
  at: string;
  /** What it returned, or the error it threw (its message). */
  outcome: { result: unknown } | { error: string };
}

/** How an orchestration run ended: status, output, history, the calls it made, virtual time. */
export interface OrchestrationRun {
  /** The instance's id. */
  instanceId: string;
  /** Its final runtime status (Completed, Failed, Terminated …). */
  status: RuntimeStatus;
  /** Its output (the orchestrator's return value, or the failure's details). */
  output: unknown;
  /** Its last custom status. */
  customStatus: unknown;
  /** The instance's whole history (DurableTask.Core events), as the dev host would store it. */
  history: HistoryEvent[];
  /** Every activity call, in order. */
  activityCalls: ActivityCall[];
  /** Every entity operation run, in order (signals an entity or the orchestration sent run before the end). */
  entityOperations: EntityOperationRun[];
  /** Each entity's final state by `@name@key` (`exists` false after `destructOnExit`). */
  entities: Record<string, { exists: boolean; state: unknown }>;
  /** Virtual ms from the start to the end. */
  elapsedMs: number;
  /** How many episodes (replays) the orchestrator ran. */
  episodes: number;
}

const require = createRequire(import.meta.url);
// @azure/functions is a CommonJS bundle whose InvocationContext Node's ESM loader does not detect as a named export:
// a named import works under vitest (its interop) but fails under plain node or tsx. require sees every export.
const { InvocationContext: InvocationContextClass } =
  require("@azure/functions") as typeof import("@azure/functions");

function isGeneratorFunction(fn: Orchestrator): fn is OrchestratorFunction {
  return fn.constructor?.name === "GeneratorFunction";
}

/**
 * A generator function becomes the handler df.app.orchestration registers (the SDK's own Orchestrator).
 * @internal Shared with testing-hub.ts, not part of the package's API: stripped from its .d.ts (`stripInternal`).
 */
export function toHandler(fn: Orchestrator): RegisteredOrchestrationHandler {
  if (!isGeneratorFunction(fn)) return fn;
  const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
    createOrchestrator: (f: OrchestratorFunction) => RegisteredOrchestrationHandler;
  };
  return createOrchestrator(fn);
}

/**
 * The orchestrator invoker over registered handlers by name; the invocation's log lines go to `log`.
 * @internal Shared with testing-hub.ts, not part of the package's API: stripped from its .d.ts (`stripInternal`).
 */
export function invokerFor(
  orchestrators: Map<string, RegisteredOrchestrationHandler>,
  log: (msg: string) => void,
): OrchestratorInvoker {
  return async (name, input) => {
    const handler = orchestrators.get(name);
    if (!handler) return { thrown: new Error(`No orchestrator named '${name}' was given to the test.`) };
    const context = new InvocationContextClass({
      functionName: name,
      invocationId: randomUUID(),
      logHandler: (_level, ...args) => log(args.map(String).join(" ")),
    });
    try {
      // Through JSON, as the worker's reply travels to the host.
      return { returned: JSON.parse(JSON.stringify(await handler(input, context))) };
    } catch (e) {
      return { thrown: e };
    }
  };
}

/** The payload limit the dev host applies by default (an entity's state and results are held to it). */
const LIMITS = { maxPayloadBytes: DURABLE_HUB_SETTINGS.maxPayloadBytes.default };

interface Pending {
  at: number;
  seq: number;
  message: InstanceMessage;
}

/** Runs `orchestrator` to completion (or until nothing more can happen) in memory, on virtual time. */
export async function runOrchestration(
  orchestrator: Orchestrator,
  options: RunOrchestrationOptions = {},
): Promise<OrchestrationRun> {
  const name = options.name ?? "orchestrator";
  const instanceId = options.instanceId ?? "test-instance";
  const start = (options.startTime ?? new Date(Date.UTC(2026, 0, 1))).getTime();
  const orchestrators = new Map<string, RegisteredOrchestrationHandler>([[name, toHandler(orchestrator)]]);
  for (const [n, o] of Object.entries(options.orchestrators ?? {})) orchestrators.set(n, toHandler(o));
  const invoke = invokerFor(orchestrators, () => {});
  const instances = new Map<string, OrchestrationState>();
  const activityCalls: ActivityCall[] = [];
  const attempts = new Map<string, number>();
  const queue: Pending[] = [];
  let seq = 0;
  let now = start;
  const push = (at: number, message: InstanceMessage) => queue.push({ at, seq: seq++, message });
  const stamp = (at: number) => new Date(at).toISOString();

  push(start, {
    key: "start",
    instanceId,
    event: {
      EventType: HistoryEventType.ExecutionStarted,
      EventId: -1,
      IsPlayed: false,
      Timestamp: stamp(start),
    },
    start: {
      name,
      input: options.input === undefined ? null : JSON.stringify(options.input),
      executionId: "e0",
    },
  });
  for (const ev of options.events ?? []) {
    const at = start + (ev.atMs ?? 0);
    push(at, {
      key: `event-${seq}`,
      instanceId,
      event: {
        EventType: HistoryEventType.EventRaised,
        EventId: -1,
        IsPlayed: false,
        Timestamp: stamp(at),
        Name: ev.name,
        Input: ev.input === undefined ? null : JSON.stringify(ev.input),
      },
    });
  }

  let episodes = 0;
  const max = options.maxEpisodes ?? 10_000;
  const entityOperations: EntityOperationRun[] = [];
  const applyEntity = entityApplier(
    entityInvokerFor(options.entities ?? {}, entityOperations, () => stamp(now), LIMITS.maxPayloadBytes),
  );
  while (queue.length > 0 && episodes < max && entityOperations.length < max) {
    queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const next = queue.shift() as Pending;
    now = Math.max(now, next.at);
    const { message } = next;
    if (isEntityId(message.instanceId)) {
      // One operation per work item, as the messages arrive: its answer and signals go on the queue.
      const r = await applyEntity(
        instances.get(message.instanceId),
        [message],
        new Date(now),
        invoke,
        LIMITS,
      );
      if (r.state) instances.set(message.instanceId, r.state);
      for (const w of r.work) if (w.kind === "message") push(now, w.message);
      continue;
    }
    const result = await applyMessage(instances.get(message.instanceId), message, new Date(now), invoke);
    if (!result.consumed) {
      // Waits (e.g. suspended): retry after everything else due now.
      push(now + 1, message);
      continue;
    }
    if (result.dropped === undefined || result.state) {
      if (result.state) instances.set(message.instanceId, result.state);
    }
    if (result.newEvents.length > 0) episodes++;
    for (const w of result.work) {
      if (w.kind === "timer") {
        push(Date.parse(w.fireAt), timerFiredMessage(w, w.fireAt));
      } else if (w.kind === "cancelTimer") {
        const key = timerFiredKey(w.executionId, w.timerId);
        const i = queue.findIndex((p) => p.message.key === key);
        if (i >= 0) queue.splice(i, 1);
      } else if (w.kind === "message") {
        push(now, w.message);
      } else {
        const item = w.item;
        const impl = options.activities?.[item.name];
        const key = `${item.instanceId}/${item.name}`;
        const attempt = (attempts.get(key) ?? 0) + 1;
        attempts.set(key, attempt);
        const input = item.input === null ? undefined : JSON.parse(item.input);
        let event: HistoryEvent;
        const base = {
          EventId: -1,
          IsPlayed: false,
          Timestamp: stamp(now),
          TaskScheduledId: item.taskScheduledId,
        };
        try {
          if (!impl) throw new Error(`activity '${item.name}' is not defined in the test's activities`);
          const result = await impl(input, { attempt, instanceId: item.instanceId });
          activityCalls.push({
            name: item.name,
            input,
            attempt,
            instanceId: item.instanceId,
            at: stamp(now),
            outcome: { result },
          });
          event = {
            ...base,
            EventType: HistoryEventType.TaskCompleted,
            Result: JSON.stringify(result ?? null),
          };
        } catch (e) {
          const message = errorMessage(e);
          activityCalls.push({
            name: item.name,
            input,
            attempt,
            instanceId: item.instanceId,
            at: stamp(now),
            outcome: { error: message },
          });
          event = {
            ...base,
            EventType: HistoryEventType.TaskFailed,
            Reason: message,
            Details: e instanceof Error ? (e.stack ?? "") : "",
            FailureDetails: {
              ErrorType: e instanceof Error ? e.name : "Error",
              ErrorMessage: message,
              StackTrace: e instanceof Error ? e.stack : undefined,
              IsNonRetriable: false,
            },
          };
        }
        push(now, {
          key: `task-${item.executionId}-${item.taskScheduledId}`,
          instanceId: item.instanceId,
          executionId: item.executionId,
          event,
        });
      }
    }
    const main = instances.get(instanceId);
    if (main && isTerminal(main.status) && queue.every((p) => p.message.instanceId === instanceId)) break;
  }
  const state = instances.get(instanceId);
  const parse = (t: string | null | undefined) => (t === null || t === undefined ? undefined : JSON.parse(t));
  return {
    instanceId,
    status: state?.status ?? "Pending",
    output: parse(state?.output),
    customStatus: parse(state?.customStatus),
    history: state?.history ?? [],
    activityCalls,
    entityOperations,
    entities: entityStates(instances),
    elapsedMs: now - start,
    episodes,
  };
}

/**
 * Runs the orchestrator once on `history` (write it with OrchestratorStarted + ExecutionStarted first, then the
 * events you want it to see) and returns its reply: `isDone`, `output`, the actions it schedules, `customStatus`,
 * or the failure.
 */
export async function replayOrchestration(
  orchestrator: Orchestrator,
  history: HistoryEvent[],
  options: { input?: unknown; instanceId?: string; name?: string } = {},
): Promise<{ reply?: OrchestratorReply; failure?: string }> {
  const name = options.name ?? "orchestrator";
  const invoke = invokerFor(new Map([[name, toHandler(orchestrator)]]), () => {});
  const state = {
    instanceId: options.instanceId ?? "test-instance",
    input: options.input === undefined ? null : JSON.stringify(options.input),
  } as OrchestrationState;
  const outcome = readOrchestratorOutcome(await invoke(name, triggerInput(state, history)));
  return "failure" in outcome ? { failure: outcome.failure, reply: outcome.reply } : { reply: outcome.reply };
}
