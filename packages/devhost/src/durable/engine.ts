import { grantFate, releaseHeld, releaseWork } from "./entity-locks.js";
import { completionId, historyEvent, parseJsonText, resolvedIds, toJsonText } from "./protocol.js";
import { replay } from "./replay.js";
import { finish, notifyParent } from "./replay-end.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import {
  type ApplyMessage,
  type ApplyMessages,
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type OutboundWork,
  type WorkItemResult,
} from "./types.js";

/**
 * The replay engine (docs/durable-design.md): applies one work item — all pending messages of one orchestration
 * instance — with at most one replay, as DTFx and durabletask-go do. This module decides which messages join the
 * replay, which wait and which are dropped; control messages (start, terminate, suspend, resume) and drops need no
 * replay. The replay itself (replay.ts) hands the orchestrator its stored history + OrchestratorStarted(now) + all
 * the new events (the SDK's TaskOrchestrationExecutor resumes the generator after each), reads back all actions
 * since the start, checks the known prefix (non-determinism), numbers the new ones as the SDK counts them (retry
 * timers and re-attempts included, as DTFx's RetryInterceptor schedules them), enforces the payload limits
 * (engine-limits.ts), and turns them into history events and outbound work. Pure except for the injected
 * orchestrator call.
 */

export { activityResultEvent } from "./engine-limits.js";
export {
  decodeProcessedInput,
  derivedId,
  failureFields,
  flattenActions,
  readOrchestratorOutcome,
  toJsonText,
  triggerInput,
  UPPER_SCHEMA_VERSION,
  UPPER_SCHEMA_VERSION_NEW,
} from "./protocol.js";
export { retryDelayMs, withinRetryTimeout } from "./retries.js";

const TERMINAL = new Set(["Completed", "Failed", "Terminated"]);

export function isTerminal(status: OrchestrationState["status"]): boolean {
  return TERMINAL.has(status);
}

/** The events one work item replays, on the state before the replay (always Running). */
interface Batch {
  base: OrchestrationState;
  incoming: HistoryEvent[];
  /** Ids the batch's completions resolve (a second completion of one in the same work item is a duplicate). */
  resolved: Set<number>;
}

const CONTROL = new Set<number>([
  HistoryEventType.ExecutionTerminated,
  HistoryEventType.ExecutionSuspended,
  HistoryEventType.ExecutionResumed,
]);

/** Limits applyMessage uses (applyMessages takes them from the caller). */
const DEFAULT_LIMITS = { maxPayloadBytes: DURABLE_HUB_SETTINGS.maxPayloadBytes.default };

/**
 * One work item: the messages in arrival order, each handled by its kind's rule, with at most one replay.
 * - ExecutionStarted creates or restarts the instance; its replay may take the events after it.
 * - Completions and raised events join the work item's replay. They wait (stay unconsumed) while the instance is
 *   Pending, Suspended or ContinuedAsNew; a stale execution's, an unscheduled task's or a second completion of
 *   a task is dropped; anything for a Completed, Failed or Terminated instance is dropped.
 * - Terminate, suspend and resume need no replay: the replay gathered so far runs first (its outcome decides
 *   whether they apply), then they apply. Terminate and suspend of a ContinuedAsNew instance, and suspend of a
 *   Pending one, wait for the new execution's start (written with it), so that start cannot undo them.
 * - A message that would need a second replay ends the work item: it and all after it stay pending, in order
 *   (the caller calls again while a call consumes something). A raised event joins only a replay with no event
 *   before it: if the orchestrator continues as new on an earlier event, the events after it were never seen and
 *   must stay pending for the new execution, as with one replay per message.
 */
export const applyMessages: ApplyMessages = async (current, messages, now, invoke, limits) => {
  const at = now.toISOString();
  const out: WorkItemResult = {
    state: current,
    newEvents: [],
    work: [],
    consumed: [],
    dropped: [],
    invocations: 0,
  };
  let batch: Batch | undefined;
  let known: { history: HistoryEvent[]; ids: ReturnType<typeof resolvedIds> } | undefined;
  const idsOf = (history: HistoryEvent[]) => {
    if (known?.history !== history) known = { history, ids: resolvedIds(history) };
    return known.ids;
  };
  const drop = (m: InstanceMessage, reason: string) => {
    out.consumed.push(m.key);
    out.dropped.push({ key: m.key, reason });
    // A critical section's grant nobody waits for: what it locked is released (entity-locks.ts).
    if (m.lockGrant) out.work.push(...releaseWork(m.lockGrant, m.instanceId, at));
  };
  const flush = async () => {
    if (!batch) return;
    const { base, incoming } = batch;
    batch = undefined;
    out.invocations++;
    const r = await replay(base, incoming, at, invoke, limits);
    out.state = r.state;
    out.newEvents.push(...r.newEvents);
    out.work.push(...r.work);
  };

  for (const m of messages) {
    const e = m.event;
    if (e.EventType === HistoryEventType.ExecutionStarted) {
      await flush(); // the replay's outcome decides whether this start restarts the instance
      const d = startOf(out.state, m, at);
      if ("dropped" in d) {
        if (d.work) out.work.push(d.work);
        drop(m, d.dropped);
        continue;
      }
      if (out.invocations > 0) break;
      out.state = d.state;
      out.newEvents = [];
      batch = { base: d.state, incoming: [d.started], resolved: new Set() };
      out.consumed.push(m.key);
      continue;
    }
    if (!out.state) {
      drop(m, "the instance does not exist");
      continue;
    }
    if (m.executionId !== undefined && m.executionId !== out.state.executionId) {
      drop(m, `the message is for execution ${m.executionId}, not the current ${out.state.executionId}`);
      continue;
    }
    if (CONTROL.has(e.EventType)) await flush();
    const state = out.state;
    if (isTerminal(state.status)) {
      drop(m, `the instance is ${state.status}`);
      continue;
    }
    if (CONTROL.has(e.EventType)) {
      const c = control(state, e, at);
      if (c === "wait") continue;
      if ("dropped" in c) {
        drop(m, c.dropped);
        continue;
      }
      out.state = { ...c.state, history: [...state.history, ...c.newEvents] };
      out.newEvents.push(...c.newEvents);
      out.work.push(...c.work);
      out.consumed.push(m.key);
      continue;
    }
    // An event for the orchestrator. Pending: before its start; continued as new: for the new execution.
    if (state.status === "Suspended" || state.status === "ContinuedAsNew" || state.status === "Pending") {
      continue;
    }
    const grant = grantFate(m, state.engine);
    if (grant === "duplicate") {
      out.consumed.push(m.key);
      out.dropped.push({
        key: m.key,
        reason: `lock ${m.lockGrant?.id} is held already (a duplicate delivery)`,
      });
      continue;
    }
    if (grant === "stale") {
      drop(m, `no critical section of this execution waits for lock ${m.lockGrant?.id}`);
      continue;
    }
    const id = completionId(e);
    if (id !== undefined) {
      const { scheduled, resolved } = idsOf(state.history);
      if (!scheduled.has(id)) {
        drop(m, `no task or timer ${id} was scheduled`);
        continue;
      }
      if (resolved.has(id) || batch?.resolved.has(id)) {
        drop(m, `task or timer ${id} has already completed (a duplicate delivery)`);
        continue;
      }
    }
    if (out.invocations > 0) break;
    if (e.EventType === HistoryEventType.EventRaised && batch && batch.incoming.length > 0) break;
    batch ??= { base: state, incoming: [], resolved: new Set() };
    batch.incoming.push({ ...e, Timestamp: e.Timestamp || at, IsPlayed: false });
    if (id !== undefined) batch.resolved.add(id);
    out.consumed.push(m.key);
  }
  await flush();
  return out;
};

/** applyMessages with one message, as an episode result (the dev host's test helper, testing.ts, uses it). */
export const applyMessage: ApplyMessage = async (current, message, now, invoke) => {
  const r = await applyMessages(current, [message], now, invoke, DEFAULT_LIMITS);
  return {
    state: r.state as OrchestrationState,
    newEvents: r.newEvents,
    work: r.work,
    consumed: r.consumed.includes(message.key),
    ...(r.dropped.length > 0 ? { dropped: r.dropped[0].reason } : {}),
  };
};

/** What an ExecutionStarted does: a new (or restarted) execution to replay, or a drop (and a parent to tell). */
function startOf(
  current: OrchestrationState | undefined,
  message: InstanceMessage,
  at: string,
): { state: OrchestrationState; started: HistoryEvent } | { dropped: string; work?: OutboundWork } {
  const start = message.start;
  if (!start) return { dropped: "an ExecutionStarted message without its start data" };
  if (current) {
    // The client writes a Pending instance with the start message; the start makes it Running.
    const pendingStart = current.status === "Pending" && current.executionId === start.executionId;
    // Its own execution again (a redelivery; or terminated while Pending): nothing to start.
    if (!pendingStart && current.executionId === start.executionId) {
      return { dropped: "this execution has already started" };
    }
    if (!pendingStart && !isTerminal(current.status) && current.status !== "ContinuedAsNew") {
      // A second start of a running instance: the extension refuses it; a sub-orchestration's parent hears why.
      if (start.parent) {
        return {
          dropped: "instance already running",
          work: notifyParent(start.parent, at, {
            failed: `An orchestration with instance id '${message.instanceId}' already exists and is ${current.status}.`,
          }),
        };
      }
      return { dropped: `instance already exists and is ${current.status}` };
    }
  }
  const state: OrchestrationState = {
    instanceId: message.instanceId,
    executionId: start.executionId,
    name: start.name,
    input: start.input,
    status: "Running",
    output: null,
    customStatus: null,
    createdTime: current?.status === "Pending" ? current.createdTime : at,
    lastUpdatedTime: at,
    ...(start.parent ? { parent: start.parent } : {}),
    history: [],
    engine: { next: 0, leaves: [], retries: {}, polls: {} },
  };
  const started = historyEvent(HistoryEventType.ExecutionStarted, at, {
    Name: start.name,
    Version: start.version ?? "",
    Input: start.input,
    OrchestrationInstance: { InstanceId: message.instanceId, ExecutionId: start.executionId },
    ...(start.parent
      ? {
          ParentInstance: {
            Name: start.parent.name,
            TaskScheduleId: start.parent.taskScheduledId,
            OrchestrationInstance: {
              InstanceId: start.parent.instanceId,
              ExecutionId: start.parent.executionId,
            },
          },
        }
      : {}),
  });
  return { state, started };
}

/** Terminate, suspend or resume of a non-terminal instance: the new state and events, a drop, or "wait". */
function control(
  current: OrchestrationState,
  e: HistoryEvent,
  at: string,
):
  | { state: OrchestrationState; newEvents: HistoryEvent[]; work: OutboundWork[] }
  | { dropped: string }
  | "wait" {
  switch (e.EventType) {
    case HistoryEventType.ExecutionTerminated: {
      if (current.status === "ContinuedAsNew") return "wait";
      const reason = parseJsonText(e.Input as string) ?? "";
      const state = finish(current, "Terminated", toJsonText(reason), at);
      const work = current.parent
        ? [
            notifyParent(current.parent, at, {
              failed: `Sub-orchestration '${current.instanceId}' was terminated: ${String(reason)}`,
            }),
          ]
        : [];
      work.push(...releaseHeld(current, at));
      return {
        state,
        newEvents: [historyEvent(HistoryEventType.ExecutionTerminated, at, { Input: e.Input ?? null })],
        work,
      };
    }
    case HistoryEventType.ExecutionSuspended: {
      if (current.status === "ContinuedAsNew" || current.status === "Pending") return "wait";
      if (current.status === "Suspended") return { dropped: "already suspended" };
      return {
        state: { ...current, status: "Suspended", lastUpdatedTime: at },
        newEvents: [historyEvent(HistoryEventType.ExecutionSuspended, at, { Reason: e.Reason ?? null })],
        work: [],
      };
    }
    default: {
      if (current.status !== "Suspended") return { dropped: "not suspended" };
      return {
        state: { ...current, status: "Running", lastUpdatedTime: at },
        newEvents: [historyEvent(HistoryEventType.ExecutionResumed, at, { Reason: e.Reason ?? null })],
        work: [],
      };
    }
  }
}
