import {
  boundedFailureDetails,
  boundedText,
  customStatusFailure,
  type LimitFailure,
  payloadFailure,
} from "./engine-limits.js";
import { entityActionWork, isEntityId } from "./entity-engine.js";
import {
  type CriticalSection,
  grantFate,
  lockActionWork,
  lockSetOf,
  releaseActionWork,
  releaseHeld,
  releaseWork,
} from "./entity-locks.js";
import { HTTP_ACTIVITY_NAME } from "./http-activity.js";
import { httpPollStep, takesHttpPollId, trackHttpCall } from "./http-polling.js";
import {
  completionId,
  decodeProcessedInput,
  derivedId,
  describeAction,
  failureFields,
  flattenActions,
  historyEvent,
  leafName,
  parseJsonText,
  readOrchestratorOutcome,
  resolvedIds,
  toJsonText,
  triggerInput,
} from "./protocol.js";
import { bookkeeping, type LeafRecord, type RetryTrack, retryStep, takesRetryId } from "./retries.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import {
  ActionType,
  type ApplyMessage,
  type ApplyMessages,
  type EngineLimits,
  type FailureDetails,
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type OrchestratorAction,
  type OrchestratorInvoker,
  type OutboundWork,
  type WorkItemResult,
} from "./types.js";

/**
 * The replay engine (docs/durable-design.md): applies one work item — all pending messages of one orchestration
 * instance — with at most one replay, as DTFx and durabletask-go do. The replay hands the orchestrator its stored
 * history + OrchestratorStarted(now) + all the new events (the SDK's TaskOrchestrationExecutor resumes the
 * generator after each), reads back all actions since the start, checks the known prefix (non-determinism),
 * numbers the new ones as the SDK counts them (retry timers and re-attempts included, as DTFx's RetryInterceptor
 * schedules them), enforces the payload limits (engine-limits.ts), and turns them into history events and outbound
 * work. Control messages (start, terminate, suspend, resume) and drops need no replay. Pure except for the injected
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

function notifyParent(
  parent: NonNullable<OrchestrationState["parent"]>,
  at: string,
  outcome: { result: string | null } | { failed: string; details?: FailureDetails },
): OutboundWork {
  const ev =
    "failed" in outcome
      ? historyEvent(HistoryEventType.SubOrchestrationInstanceFailed, at, {
          TaskScheduledId: parent.taskScheduledId,
          ...failureFields(outcome.failed, outcome.details),
        })
      : historyEvent(HistoryEventType.SubOrchestrationInstanceCompleted, at, {
          TaskScheduledId: parent.taskScheduledId,
          Result: outcome.result ?? "null",
        });
  return {
    kind: "message",
    message: {
      key: `sub-${parent.executionId}-${parent.taskScheduledId}`,
      instanceId: parent.instanceId,
      executionId: parent.executionId,
      event: ev,
    },
  };
}

function finish(
  state: OrchestrationState,
  status: "Completed" | "Failed" | "Terminated",
  output: string | null,
  at: string,
): OrchestrationState {
  return { ...state, status, output, lastUpdatedTime: at };
}

interface ReplayResult {
  state: OrchestrationState;
  newEvents: HistoryEvent[];
  work: OutboundWork[];
}

/** The one replay of a work item: history + OrchestratorStarted + the new events → the orchestrator → decisions. */
async function replay(
  state: OrchestrationState,
  incoming: HistoryEvent[],
  at: string,
  invoke: OrchestratorInvoker,
  limits: EngineLimits,
): Promise<ReplayResult> {
  const book = bookkeeping(state);
  const work: OutboundWork[] = [];
  const newEvents: HistoryEvent[] = [historyEvent(HistoryEventType.OrchestratorStarted, at)];
  const schedule = (ev: HistoryEvent) => newEvents.push(ev);

  // 1. Each new event's own consequences, in the SDK's order (before the generator resumes): a retryable task's
  //    failed attempt takes an id for its retry timer; that timer firing with attempts left takes one for the
  //    next attempt. Those events go first (retries.ts, takesRetryId), so the SDK, which resumes the generator
  //    after each event, counts their ids before any id of a new action, as the engine does below.
  const now = new Date(at);
  const retrying = incoming.filter((e) => takesRetryId(book, e, now) || takesHttpPollId(book, e));
  const ordered =
    retrying.length === 0 ? incoming : [...retrying, ...incoming.filter((e) => !retrying.includes(e))];
  let expired: { reason: string; details: FailureDetails } | undefined;
  for (const ev of ordered) {
    newEvents.push(ev);
    // The grant of the section this execution waits for: it holds the lock from here on.
    if (ev.EventType === HistoryEventType.EventRaised && book.lock && ev.Name === book.lock.id) {
      book.lock.held = true;
    }
    const c = retryStep(book, ev, at);
    if (c?.kind === "expired") expired ??= c;
    else if (c?.kind === "timer") {
      schedule(historyEvent(HistoryEventType.TimerCreated, at, { FireAt: c.fireAt }, c.timerId));
      work.push({
        kind: "timer",
        instanceId: state.instanceId,
        executionId: state.executionId,
        timerId: c.timerId,
        fireAt: c.fireAt,
      });
    } else if (c?.kind === "attempt") {
      const t = c.track;
      scheduleTask(state, t.kind, t.name, t.input, t.taskId, at, schedule, work, {
        track: t,
        version: t.version,
      });
    }
    const poll = httpPollStep(book, ev, at);
    if (poll?.kind === "timer") {
      schedule(historyEvent(HistoryEventType.TimerCreated, at, { FireAt: poll.fireAt }, poll.timerId));
      work.push({
        kind: "timer",
        instanceId: state.instanceId,
        executionId: state.executionId,
        timerId: poll.timerId,
        fireAt: poll.fireAt,
      });
    } else if (poll?.kind === "poll") {
      scheduleTask(state, "activity", HTTP_ACTIVITY_NAME, poll.request, poll.taskId, at, schedule, work);
    }
  }

  let next: OrchestrationState = {
    ...state,
    lastUpdatedTime: at,
    engine: book as unknown as Record<string, unknown>,
  };
  // What an end of this execution releases: the section held once this work item's events are in (a release
  // this replay decides is moot when it fails, as all its work is; the section is released here instead).
  const held: CriticalSection | undefined = book.lock?.held ? { ...book.lock } : undefined;
  const releaseAtEnd = () => (held ? releaseWork(held, state.instanceId, at) : []);
  const fail = (why: string, given?: FailureDetails): ReplayResult => {
    const reason = boundedText(why);
    const details = given ? boundedFailureDetails(given) : undefined;
    const output = JSON.stringify(`Orchestrator function '${state.name}' failed: ${reason}`);
    newEvents.push(historyEvent(HistoryEventType.OrchestratorCompleted, at));
    newEvents.push(
      historyEvent(HistoryEventType.ExecutionCompleted, at, {
        OrchestrationStatus: "Failed",
        Result: output,
        ...failureFields(reason, details),
      }),
    );
    next = finish(next, "Failed", output, at);
    next.history = [...state.history, ...newEvents];
    // Work already decided for this replay (retry timers, earlier actions) is moot once the instance failed.
    const parentWork = state.parent
      ? [notifyParent(state.parent, at, { failed: reason, ...(details ? { details } : {}) })]
      : [];
    return { state: next, newEvents, work: [...parentWork, ...releaseAtEnd()] };
  };
  const failOver = (p: LimitFailure) => fail(p.reason, p.details);
  // A retryable task failed past its retry timeout: the SDK would wait for ever (retries.ts, expiredFailure).
  if (expired) return failOver(expired);

  // 2. The orchestrator, on stored history + this work item's events so far.
  const history = [...state.history, ...newEvents];
  const outcome = readOrchestratorOutcome(await invoke(state.name, triggerInput(state, history)));
  const reply = "reply" in outcome ? outcome.reply : undefined;
  const statusText = reply?.customStatus === undefined ? undefined : toJsonText(reply.customStatus);
  const statusProblem = customStatusFailure(statusText);
  if (statusText !== undefined && !statusProblem) next = { ...next, customStatus: statusText };

  if (statusProblem) return failOver(statusProblem);
  if ("failure" in outcome) return fail(outcome.failure, reply?.failureDetails);

  // 3. The actions: the known prefix must match; the rest are new and get ids in list order.
  const leaves = flattenActions(reply?.actions ?? []);
  const known = book.leaves;
  if (leaves.length < known.length) {
    return fail(
      `Non-deterministic workflow detected: the orchestrator scheduled ${leaves.length} actions where the history has ${known.length}. Orchestrator code must be deterministic (see "Orchestrator function code constraints").`,
    );
  }
  for (let i = 0; i < known.length; i++) {
    const was = known[i];
    const is = { t: leaves[i].actionType, n: leafName(leaves[i]) };
    const same =
      was.t === is.t ||
      // A retryable call and its plain form are the same task to DTFx's history (same name, same id).
      (was.t === ActionType.CallActivityWithRetry && is.t === ActionType.CallActivity) ||
      (was.t === ActionType.CallActivity && is.t === ActionType.CallActivityWithRetry);
    if (!same || was.n !== is.n) {
      return fail(
        `Non-deterministic workflow detected: action #${i} was ${describeAction(was)} in the history and is ${describeAction(is)} now. Orchestrator code must be deterministic (see "Orchestrator function code constraints").`,
      );
    }
    // A timer canceled since (Task.any winner elsewhere): its pending fire is dropped.
    if (was.t === ActionType.CreateTimer && leaves[i].isCanceled === true && !was.canceled) {
      was.canceled = true;
      if (was.id !== undefined) {
        work.push({
          kind: "cancelTimer",
          instanceId: state.instanceId,
          executionId: state.executionId,
          timerId: was.id,
        });
      }
    }
  }
  let continueAsNew: OrchestratorAction | undefined;
  for (const a of leaves.slice(known.length)) {
    const name = leafName(a);
    const record: LeafRecord = { t: a.actionType, ...(name !== undefined ? { n: name } : {}) };
    switch (a.actionType) {
      case ActionType.CallActivity:
      case ActionType.CallActivityWithRetry:
      case ActionType.CallSubOrchestrator:
      case ActionType.CallSubOrchestratorWithRetry: {
        const id = book.next++;
        record.id = id;
        const kind =
          a.actionType === ActionType.CallActivity || a.actionType === ActionType.CallActivityWithRetry
            ? "activity"
            : "sub";
        const input = toJsonText(a.input);
        const what = `The input of ${kind === "activity" ? "activity" : "sub-orchestration"} '${String(a.functionName)}'`;
        const tooBig = payloadFailure(input, what, limits.maxPayloadBytes);
        if (tooBig) return failOver(tooBig);
        // As the extension: a sub-orchestration without a version of its own gets host.json's defaultVersion.
        const version = kind === "sub" ? (stringOrUndefined(a.version) ?? limits.defaultVersion) : undefined;
        const track: RetryTrack | undefined = a.retryOptions
          ? {
              kind,
              name: String(a.functionName),
              input,
              options: a.retryOptions,
              attempt: 1,
              firstScheduledAt: at,
              taskId: id,
              ...(kind === "sub" && a.instanceId ? { subInstanceBase: a.instanceId } : {}),
              ...(version !== undefined ? { version } : {}),
            }
          : undefined;
        if (track) book.retries[String(id)] = track;
        scheduleTask(state, kind, String(a.functionName), input, id, at, schedule, work, {
          track,
          explicitInstanceId: a.instanceId,
          version,
        });
        break;
      }
      case ActionType.CreateTimer: {
        const id = book.next++;
        record.id = id;
        const fireAt = new Date(String(a.fireAt)).toISOString();
        schedule(historyEvent(HistoryEventType.TimerCreated, at, { FireAt: fireAt }, id));
        if (a.isCanceled) record.canceled = true;
        else {
          work.push({
            kind: "timer",
            instanceId: state.instanceId,
            executionId: state.executionId,
            timerId: id,
            fireAt,
          });
        }
        break;
      }
      case ActionType.WaitForExternalEvent:
        break;
      case ActionType.ContinueAsNew:
        continueAsNew = a;
        break;
      case ActionType.CallHttp: {
        // The extension schedules the built-in HTTP activity (http-activity.ts); its result is the response.
        const id = book.next++;
        record.id = id;
        const input = toJsonText(a.httpRequest);
        const tooBig = payloadFailure(input, "The request of callHttp", limits.maxPayloadBytes);
        if (tooBig) return failOver(tooBig);
        trackHttpCall(book, id, input);
        scheduleTask(state, "activity", HTTP_ACTIVITY_NAME, input, id, at, schedule, work);
        break;
      }
      case ActionType.CallEntity:
      case ActionType.SignalEntity: {
        const id = book.next++;
        record.id = id;
        const tooBig = payloadFailure(
          toJsonText(a.input),
          `The input of entity operation '${String(a.operation)}'`,
          limits.maxPayloadBytes,
        );
        if (tooBig) return failOver(tooBig);
        const sent = entityActionWork(state, a, id, a.actionType === ActionType.SignalEntity, at, newEvents);
        schedule(sent.event);
        work.push(sent.work);
        break;
      }
      case ActionType.LockEntities: {
        // One id (the EventSent of the request to the first entity); the grant is an EventRaised (entity-locks.ts).
        const id = book.next++;
        record.id = id;
        const set = lockSetOf(a);
        if (set.length === 0) return fail("context.df.lock was given no entity to lock.");
        const sent = lockActionWork(state, a, set, id, at);
        schedule(sent.event);
        work.push(sent.work);
        book.lock = sent.section;
        break;
      }
      case ActionType.ReleaseEntities: {
        // The SDK counts one id per entity of the section (the extension sends each its release).
        const section = book.lock;
        if (!section) break;
        record.id = book.next;
        book.next += section.set.length;
        const released = releaseActionWork(state, section, record.id, at);
        for (const ev of released.events) schedule(ev);
        work.push(...released.work);
        delete book.lock;
        break;
      }
      default:
        return fail(`The orchestrator returned an action of unknown type ${String(a.actionType)}.`);
    }
    known.push(record);
  }

  // 4. The end of this execution, if it ends: its output (or the next execution's input) within the limits.
  const newInput = continueAsNew ? decodeProcessedInput(toJsonText(continueAsNew.input)) : null;
  const output = !continueAsNew && reply?.isDone ? toJsonText(reply.output) : null;
  const tooBig = continueAsNew
    ? payloadFailure(
        newInput,
        `The continue-as-new input of orchestration '${state.name}'`,
        limits.maxPayloadBytes,
      )
    : payloadFailure(output, `The output of orchestration '${state.name}'`, limits.maxPayloadBytes);
  if (tooBig) return failOver(tooBig);
  newEvents.push(historyEvent(HistoryEventType.OrchestratorCompleted, at));
  if (continueAsNew) {
    // A new execution with the new input; events not yet processed stay pending (they carry no executionId).
    const input = newInput;
    newEvents.push(
      historyEvent(HistoryEventType.ExecutionCompleted, at, {
        OrchestrationStatus: "ContinuedAsNew",
        Result: input,
      }),
    );
    const executionId = derivedId(state.executionId, "continue-as-new");
    next = { ...next, status: "ContinuedAsNew", history: [...state.history, ...newEvents] };
    work.length = 0;
    work.push(...releaseAtEnd(), {
      kind: "message",
      message: {
        key: `start-${executionId}`,
        instanceId: state.instanceId,
        event: historyEvent(HistoryEventType.ExecutionStarted, at),
        start: {
          name: state.name,
          input,
          executionId,
          ...(state.parent ? { parent: state.parent } : {}),
          // The new execution keeps the instance's version (DTFx's ContinueAsNew without a new version).
          ...versionOf(state),
        },
      },
    });
    return { state: next, newEvents, work };
  }
  if (reply?.isDone) {
    newEvents.push(
      historyEvent(HistoryEventType.ExecutionCompleted, at, {
        OrchestrationStatus: "Completed",
        Result: output,
      }),
    );
    next = finish(next, "Completed", output, at);
    next.history = [...state.history, ...newEvents];
    // Pending timers and retries of a finished orchestration are moot; what it sent entities on its way out is not
    // (DTFx sends every message of the last episode, a signalEntity before the return too) — a release() in this
    // episode among it. A section still held is released.
    const sent = work.filter((w) => w.kind === "message" && isEntityId(w.message.instanceId));
    const stillHeld = book.lock?.held ? releaseWork({ ...book.lock }, state.instanceId, at) : [];
    const done: OutboundWork[] = [...sent, ...stillHeld];
    if (state.parent) done.push(notifyParent(state.parent, at, { result: output }));
    return { state: next, newEvents, work: done };
  }
  next.history = [...state.history, ...newEvents];
  return { state: next, newEvents, work };
}

function scheduleTask(
  state: OrchestrationState,
  kind: "activity" | "sub",
  name: string,
  input: string | null,
  id: number,
  at: string,
  schedule: (e: HistoryEvent) => void,
  work: OutboundWork[],
  sub: { track?: RetryTrack; explicitInstanceId?: string; version?: string } = {},
): void {
  const { track, explicitInstanceId, version } = sub;
  if (kind === "activity") {
    schedule(historyEvent(HistoryEventType.TaskScheduled, at, { Name: name, Version: "", Input: input }, id));
    work.push({
      kind: "activity",
      item: {
        instanceId: state.instanceId,
        executionId: state.executionId,
        taskScheduledId: id,
        name,
        input: decodeProcessedInput(input),
      },
    });
    return;
  }
  // DTFx names an unnamed sub-orchestration "<parent>:<sequence id>"; a retry of a named one reuses the name.
  const base = explicitInstanceId ?? track?.subInstanceBase;
  const instanceId = base ?? `${state.instanceId}:${id}`;
  const executionId = derivedId(state.executionId, "sub", id);
  schedule(
    historyEvent(
      HistoryEventType.SubOrchestrationInstanceCreated,
      at,
      { Name: name, Version: version ?? "", Input: input, InstanceId: instanceId },
      id,
    ),
  );
  work.push({
    kind: "message",
    message: {
      key: `start-${executionId}`,
      instanceId,
      event: historyEvent(HistoryEventType.ExecutionStarted, at),
      start: {
        name,
        input,
        executionId,
        ...(version !== undefined ? { version } : {}),
        parent: {
          instanceId: state.instanceId,
          executionId: state.executionId,
          taskScheduledId: id,
          name: state.name,
        },
      },
    },
  });
}

/** An action's optional string field (`version`), undefined when absent or empty. */
function stringOrUndefined(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The instance's version, from its execution's ExecutionStarted (for the next execution of a continue-as-new). */
function versionOf(state: OrchestrationState): { version?: string } {
  const started = state.history.find((e) => e.EventType === HistoryEventType.ExecutionStarted);
  const version = stringOrUndefined(started?.Version);
  return version !== undefined ? { version } : {};
}
