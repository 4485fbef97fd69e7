import { createHash } from "node:crypto";
import { errorMessage } from "../errorMessage.js";
import { DEFAULT_HTTP_ASYNC_SLEEP_MS } from "./http-activity.js";
import {
  ActionType,
  type FailureDetails,
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type OrchestrationTriggerInput,
  type OrchestratorAction,
  type OrchestratorReply,
} from "./types.js";

/**
 * The out-of-process protocol as the replay engine speaks it (docs/durable-design.md): the orchestrator trigger's
 * data, reading the orchestrator's reply (returned, or thrown with `$OutOfProcData$`), its actions in the SDK's
 * numbering order, history events and their JSON payloads. Pure.
 */

/** The out-of-proc schema the extension announces (V3: flat action list with compound WhenAll/WhenAny). */
export const UPPER_SCHEMA_VERSION = 2;
export const UPPER_SCHEMA_VERSION_NEW = 3;

/** Deterministic UUID-shaped ids (sub-orchestration and continue-as-new executions): a re-run gives the same. */
export function derivedId(...parts: (string | number)[]): string {
  const h = createHash("sha1").update(parts.join("|")).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export function historyEvent(
  type: HistoryEvent["EventType"],
  now: string,
  fields: Record<string, unknown> = {},
  id = -1,
) {
  return { EventType: type, EventId: id, IsPlayed: false, Timestamp: now, ...fields } as HistoryEvent;
}

/** The idempotency key of a durable timer's firing (docs/durable-design.md, message keys). */
export const timerFiredKey = (executionId: string, timerId: number): string =>
  `timer-${executionId}-${timerId}`;

/**
 * The message a durable timer sends its instance when it comes due: `TimerFired` (TimerId, FireAt) stamped with
 * the time it fired (the hub's clock; a virtual clock fires it at `fireAt` exactly).
 */
export function timerFiredMessage(
  timer: { instanceId: string; executionId: string; timerId: number; fireAt: string },
  firedAt: string,
): InstanceMessage {
  return {
    key: timerFiredKey(timer.executionId, timer.timerId),
    instanceId: timer.instanceId,
    executionId: timer.executionId,
    event: historyEvent(HistoryEventType.TimerFired, firedAt, {
      TimerId: timer.timerId,
      FireAt: timer.fireAt,
    }),
  };
}

/** JSON text of a value; undefined → null (no payload). */
export function toJsonText(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

export function parseJsonText(text: string | null | undefined): unknown {
  if (text === null || text === undefined || text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The orchestrator's reply, from what the handler returned or threw (`false\n\n$OutOfProcData$:{state}`). */
export function readOrchestratorOutcome(
  outcome: { returned: unknown } | { thrown: unknown },
): { reply: OrchestratorReply } | { failure: string; reply?: OrchestratorReply } {
  if ("returned" in outcome) {
    const r = outcome.returned as OrchestratorReply | undefined;
    if (!r || typeof r !== "object" || !Array.isArray(r.actions)) {
      return {
        failure: `The orchestrator returned no orchestration state (got ${JSON.stringify(r)}): is it registered with df.app.orchestration?`,
      };
    }
    return { reply: r };
  }
  const e = outcome.thrown;
  const message = errorMessage(e);
  const marker = "$OutOfProcData$:";
  const at = message.indexOf(marker);
  if (at >= 0) {
    try {
      const reply = JSON.parse(message.slice(at + marker.length)) as OrchestratorReply;
      return { failure: reply.error ?? message.slice(0, at).trim(), reply };
    } catch {
      // fall through: the message itself is the reason
    }
  }
  return { failure: message };
}

/** Leaf actions in the SDK's numbering order (compound children in order). */
export function flattenActions(actions: OrchestratorReply["actions"]): OrchestratorAction[] {
  const top = (Array.isArray(actions[0]) ? (actions as OrchestratorAction[][]).flat() : actions) as
    | OrchestratorAction[]
    | undefined;
  const out: OrchestratorAction[] = [];
  const walk = (a: OrchestratorAction) => {
    if (a.actionType === ActionType.WhenAll || a.actionType === ActionType.WhenAny) {
      for (const c of a.compoundActions ?? []) walk(c);
    } else out.push(a);
  };
  for (const a of top ?? []) if (a) walk(a);
  return out;
}

export function leafName(a: OrchestratorAction): string | undefined {
  if (a.functionName !== undefined) return a.functionName;
  // A critical section is named by its lock set: another set on replay is a non-deterministic orchestrator.
  if (a.actionType === ActionType.LockEntities && Array.isArray(a.lockSet)) {
    return (a.lockSet as { name?: unknown; key?: unknown }[])
      .map((e) => `@${String(e?.name).toLowerCase()}@${String(e?.key)}`)
      .join(" ");
  }
  if (a.externalEventName !== undefined) return a.externalEventName;
  return undefined;
}

export function describeAction(a: { t: number; n?: string }): string {
  const type = Object.entries(ActionType).find(([, v]) => v === a.t)?.[0] ?? `action type ${a.t}`;
  return a.n === undefined ? type : `${type}('${a.n}')`;
}

/** The orchestrator trigger's data for one replay. */
export function triggerInput(state: OrchestrationState, history: HistoryEvent[]): OrchestrationTriggerInput {
  return {
    history,
    input: parseJsonText(state.input),
    instanceId: state.instanceId,
    isReplaying: false,
    parentInstanceId: state.parent?.instanceId ?? null,
    upperSchemaVersion: UPPER_SCHEMA_VERSION,
    upperSchemaVersionNew: UPPER_SCHEMA_VERSION_NEW,
    longRunningTimerIntervalDuration: "3.00:00:00",
    maximumShortTimerDuration: "6.00:00:00",
    defaultHttpAsyncRequestSleepTimeMillseconds: DEFAULT_HTTP_ASYNC_SLEEP_MS,
  };
}

/** A TaskFailed / SubOrchestrationInstanceFailed / ExecutionFailed payload from a reason. */
export function failureFields(message: string, details?: FailureDetails) {
  return {
    Reason: message,
    Details: details?.StackTrace ?? "",
    FailureDetails: details ?? { ErrorType: "Error", ErrorMessage: message, IsNonRetriable: false },
  };
}

/**
 * durable-functions JSON-encodes string inputs of activities and continueAsNew once more (Utils.processInput); the
 * extension decodes that layer before the function sees it. Applied to what reaches the activity and the new execution.
 */
export function decodeProcessedInput(jsonText: string | null): string | null {
  if (jsonText === null) return null;
  const value = parseJsonText(jsonText);
  if (typeof value !== "string") return jsonText;
  try {
    JSON.parse(value);
    return value;
  } catch {
    return jsonText;
  }
}

/** Ids that already have their outcome in the history (a second completion of one is dropped). */
export function resolvedIds(history: HistoryEvent[]) {
  const scheduled = new Set<number>();
  const resolved = new Set<number>();
  for (const e of history) {
    switch (e.EventType) {
      case HistoryEventType.TaskScheduled:
      case HistoryEventType.SubOrchestrationInstanceCreated:
      case HistoryEventType.TimerCreated:
        scheduled.add(e.EventId);
        break;
      case HistoryEventType.TaskCompleted:
      case HistoryEventType.TaskFailed:
      case HistoryEventType.SubOrchestrationInstanceCompleted:
      case HistoryEventType.SubOrchestrationInstanceFailed:
        resolved.add(Number(e.TaskScheduledId));
        break;
      case HistoryEventType.TimerFired:
        resolved.add(Number(e.TimerId));
        break;
    }
  }
  return { scheduled, resolved };
}

/** The id an incoming completion resolves (undefined for events without one). */
export function completionId(e: HistoryEvent): number | undefined {
  switch (e.EventType) {
    case HistoryEventType.TaskCompleted:
    case HistoryEventType.TaskFailed:
    case HistoryEventType.SubOrchestrationInstanceCompleted:
    case HistoryEventType.SubOrchestrationInstanceFailed:
      return Number(e.TaskScheduledId);
    case HistoryEventType.TimerFired:
      return Number(e.TimerId);
    default:
      return undefined;
  }
}
