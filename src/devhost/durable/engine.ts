import { createHash } from "node:crypto";
import {
  ActionType,
  type ActionTypeNumber,
  type ApplyMessage,
  type EpisodeResult,
  type FailureDetails,
  type HistoryEvent,
  HistoryEventType,
  type OrchestrationState,
  type OrchestrationTriggerInput,
  type OrchestratorAction,
  type OrchestratorReply,
  type OutboundWork,
  type RetryOptionsWire,
} from "./types.js";

/**
 * The replay engine (docs/durable-design.md): applies one message to one orchestration instance. Each episode hands
 * the orchestrator its stored history + OrchestratorStarted(now) + exactly one new event, reads back all actions
 * since the start, checks the known prefix (non-determinism), numbers the new ones as the SDK's
 * TaskOrchestrationExecutor counts (retry timers and re-attempts included, as DTFx's RetryInterceptor schedules
 * them), and turns them into history events and outbound work. Pure except for the injected orchestrator call.
 */

/** The out-of-proc schema the extension announces (V3: flat action list with compound WhenAll/WhenAny). */
export const UPPER_SCHEMA_VERSION = 2;
export const UPPER_SCHEMA_VERSION_NEW = 3;

/** One leaf action seen in an earlier episode (for the determinism check and timer cancellation). */
interface LeafRecord {
  t: ActionTypeNumber;
  n?: string;
  /** Its sequence id (none for WaitForExternalEvent and ContinueAsNew). */
  id?: number;
  canceled?: boolean;
}

/** A retryable task (activity or sub-orchestration with RetryOptions), keyed by its first attempt's id. */
interface RetryTrack {
  kind: "activity" | "sub";
  name: string;
  /** JSON text of the input. */
  input: string | null;
  options: RetryOptionsWire;
  attempt: number;
  firstScheduledAt: string;
  /** The id of the attempt now running. */
  taskId: number;
  /** The retry timer now pending, if any. */
  timerId?: number;
  subInstanceBase?: string;
}

interface Bookkeeping {
  next: number;
  leaves: LeafRecord[];
  retries: Record<string, RetryTrack>;
}

function bookkeeping(state: OrchestrationState): Bookkeeping {
  // A copy: the episode may be re-run on the stored state (a lost commit race), so it never mutates its input.
  const e = structuredClone(state.engine) as Partial<Bookkeeping>;
  return { next: e.next ?? 0, leaves: e.leaves ?? [], retries: e.retries ?? {} };
}

/** Deterministic UUID-shaped ids (sub-orchestration and continue-as-new executions): a re-run gives the same. */
export function derivedId(...parts: (string | number)[]): string {
  const h = createHash("sha1").update(parts.join("|")).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function event(type: HistoryEvent["EventType"], now: string, fields: Record<string, unknown> = {}, id = -1) {
  return { EventType: type, EventId: id, IsPlayed: false, Timestamp: now, ...fields } as HistoryEvent;
}

/** JSON text of a value; undefined → null (no payload). */
export function toJsonText(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

function parseJsonText(text: string | null | undefined): unknown {
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
  const message = e instanceof Error ? e.message : String(e);
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

function leafName(a: OrchestratorAction): string | undefined {
  if (a.functionName !== undefined) return a.functionName;
  if (a.externalEventName !== undefined) return a.externalEventName;
  return undefined;
}

function describe(a: { t: number; n?: string }): string {
  const type = Object.entries(ActionType).find(([, v]) => v === a.t)?.[0] ?? `action type ${a.t}`;
  return a.n === undefined ? type : `${type}('${a.n}')`;
}

/** The delay before attempt `attempt + 1` after `attempt` failed (DTFx RetryInterceptor.ComputeNextDelay). */
export function retryDelayMs(options: RetryOptionsWire, attempt: number): number {
  const coefficient = options.backoffCoefficient ?? 1;
  let delay = options.firstRetryIntervalInMilliseconds * coefficient ** (attempt - 1);
  const max = options.maxRetryIntervalInMilliseconds;
  if (max !== undefined && max > 0 && delay > max) delay = max;
  return Math.max(0, Math.round(delay));
}

/** Whether another attempt may start (attempts left, and within retryTimeout of the first attempt). */
export function mayRetry(options: RetryOptionsWire, attempt: number, firstAt: string, now: Date): boolean {
  if (attempt >= options.maxNumberOfAttempts) return false;
  const timeout = options.retryTimeoutInMilliseconds;
  if (timeout !== undefined && timeout > 0 && timeout < Number.MAX_SAFE_INTEGER) {
    return now.getTime() - Date.parse(firstAt) < timeout;
  }
  return true;
}

const TERMINAL = new Set(["Completed", "Failed", "Terminated"]);

export function isTerminal(status: OrchestrationState["status"]): boolean {
  return TERMINAL.has(status);
}

/** Ids that already have their outcome in the history (a second completion of one is dropped). */
function resolvedIds(history: HistoryEvent[]) {
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
function completionId(e: HistoryEvent): number | undefined {
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

/** The orchestrator trigger's data for one episode. */
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
    defaultHttpAsyncRequestSleepTimeMillseconds: 30_000,
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

export const applyMessage: ApplyMessage = async (current, message, now, invoke) => {
  const at = now.toISOString();
  const e = message.event;
  const work: OutboundWork[] = [];
  const drop = (reason: string): EpisodeResult => ({
    state: current as OrchestrationState,
    newEvents: [],
    work: [],
    consumed: true,
    dropped: reason,
  });

  if (e.EventType === HistoryEventType.ExecutionStarted) {
    const start = message.start;
    if (!start) return drop("an ExecutionStarted message without its start data");
    if (
      current &&
      !isTerminal(current.status) &&
      current.status !== "ContinuedAsNew" &&
      // The client writes a Pending instance with the start message; the start makes it Running.
      !(current.status === "Pending" && current.executionId === start.executionId)
    ) {
      if (current.executionId === start.executionId) return drop("this execution has already started");
      // A second start of a running instance: the extension refuses it; a sub-orchestration's parent hears why.
      if (start.parent) {
        work.push(
          notifyParent(start.parent, at, {
            failed: `An orchestration with instance id '${message.instanceId}' already exists and is ${current.status}.`,
          }),
        );
        return { state: current, newEvents: [], work, consumed: true, dropped: "instance already running" };
      }
      return drop(`instance already exists and is ${current.status}`);
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
      engine: { next: 0, leaves: [], retries: {} },
    };
    const started = event(HistoryEventType.ExecutionStarted, at, {
      Name: start.name,
      Version: "",
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
    return episode(state, started, at, invoke);
  }

  if (!current) return drop("the instance does not exist");
  if (message.executionId !== undefined && message.executionId !== current.executionId) {
    return drop(
      `the message is for execution ${message.executionId}, not the current ${current.executionId}`,
    );
  }
  if (isTerminal(current.status)) return drop(`the instance is ${current.status}`);

  switch (e.EventType) {
    case HistoryEventType.ExecutionTerminated: {
      const state = finish(
        current,
        "Terminated",
        toJsonText(parseJsonText(e.Input as string) ?? "") ?? null,
        at,
      );
      const newEvents = [event(HistoryEventType.ExecutionTerminated, at, { Input: e.Input ?? null })];
      state.history = [...current.history, ...newEvents];
      if (current.parent) {
        work.push(
          notifyParent(current.parent, at, {
            failed: `Sub-orchestration '${current.instanceId}' was terminated: ${String(parseJsonText(e.Input as string) ?? "")}`,
          }),
        );
      }
      return { state, newEvents, work, consumed: true };
    }
    case HistoryEventType.ExecutionSuspended: {
      if (current.status === "Suspended") return drop("already suspended");
      const newEvents = [event(HistoryEventType.ExecutionSuspended, at, { Reason: e.Reason ?? null })];
      const state = {
        ...current,
        status: "Suspended" as const,
        lastUpdatedTime: at,
        history: [...current.history, ...newEvents],
      };
      return { state, newEvents, work, consumed: true };
    }
    case HistoryEventType.ExecutionResumed: {
      if (current.status !== "Suspended") return drop("not suspended");
      const newEvents = [event(HistoryEventType.ExecutionResumed, at, { Reason: e.Reason ?? null })];
      const state = {
        ...current,
        status: "Running" as const,
        lastUpdatedTime: at,
        history: [...current.history, ...newEvents],
      };
      return { state, newEvents, work, consumed: true };
    }
  }
  // Suspended: only terminate/resume apply. Continued as new: events wait for the new execution's start.
  if (current.status === "Suspended" || current.status === "ContinuedAsNew") {
    return { state: current, newEvents: [], work: [], consumed: false };
  }
  const id = completionId(e);
  if (id !== undefined) {
    const { scheduled, resolved } = resolvedIds(current.history);
    if (!scheduled.has(id)) return drop(`no task or timer ${id} was scheduled`);
    if (resolved.has(id)) return drop(`task or timer ${id} has already completed (a duplicate delivery)`);
  }
  const incoming = { ...e, Timestamp: e.Timestamp || at, IsPlayed: false };
  return episode(current, incoming, at, invoke);
};

function notifyParent(
  parent: NonNullable<OrchestrationState["parent"]>,
  at: string,
  outcome: { result: string | null } | { failed: string; details?: FailureDetails },
): OutboundWork {
  const ev =
    "failed" in outcome
      ? event(HistoryEventType.SubOrchestrationInstanceFailed, at, {
          TaskScheduledId: parent.taskScheduledId,
          ...failureFields(outcome.failed, outcome.details),
        })
      : event(HistoryEventType.SubOrchestrationInstanceCompleted, at, {
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

/** Runs one episode: history + OrchestratorStarted + the new event → the orchestrator → decisions. */
async function episode(
  state: OrchestrationState,
  incoming: HistoryEvent,
  at: string,
  invoke: Parameters<ApplyMessage>[3],
): Promise<EpisodeResult> {
  const book = bookkeeping(state);
  const work: OutboundWork[] = [];
  const newEvents: HistoryEvent[] = [event(HistoryEventType.OrchestratorStarted, at), incoming];
  const schedule = (ev: HistoryEvent) => newEvents.push(ev);

  // 1. The new event's own consequences, in the SDK's order (before the generator resumes): a retryable task's
  //    failed attempt takes an id for its retry timer; that timer firing with attempts left takes one for the next.
  const failedId =
    incoming.EventType === HistoryEventType.TaskFailed ||
    incoming.EventType === HistoryEventType.SubOrchestrationInstanceFailed
      ? Number(incoming.TaskScheduledId)
      : undefined;
  const firedId = incoming.EventType === HistoryEventType.TimerFired ? Number(incoming.TimerId) : undefined;
  for (const track of Object.values(book.retries)) {
    if (failedId !== undefined && track.taskId === failedId && track.timerId === undefined) {
      const timerId = book.next++;
      const delay = mayRetry(track.options, track.attempt, track.firstScheduledAt, new Date(at))
        ? retryDelayMs(track.options, track.attempt)
        : 0;
      const fireAt = new Date(Date.parse(at) + delay).toISOString();
      track.timerId = timerId;
      schedule(event(HistoryEventType.TimerCreated, at, { FireAt: fireAt }, timerId));
      work.push({
        kind: "timer",
        instanceId: state.instanceId,
        executionId: state.executionId,
        timerId,
        fireAt,
      });
    } else if (firedId !== undefined && track.timerId === firedId) {
      track.timerId = undefined;
      if (mayRetry(track.options, track.attempt, track.firstScheduledAt, new Date(at))) {
        track.attempt++;
        track.taskId = book.next++;
        scheduleTask(state, track.kind, track.name, track.input, track.taskId, at, schedule, work, track);
      }
    }
  }

  // 2. The orchestrator, on stored history + this episode's events so far.
  const history = [...state.history, ...newEvents];
  const outcome = readOrchestratorOutcome(await invoke(state.name, triggerInput(state, history)));
  const reply = "reply" in outcome ? outcome.reply : undefined;
  const customStatus =
    reply?.customStatus === undefined ? state.customStatus : toJsonText(reply.customStatus);
  let next: OrchestrationState = {
    ...state,
    customStatus,
    lastUpdatedTime: at,
    engine: book as unknown as Record<string, unknown>,
  };

  const fail = (reason: string, details?: FailureDetails): EpisodeResult => {
    const output = JSON.stringify(`Orchestrator function '${state.name}' failed: ${reason}`);
    newEvents.push(event(HistoryEventType.OrchestratorCompleted, at));
    newEvents.push(
      event(HistoryEventType.ExecutionCompleted, at, {
        OrchestrationStatus: "Failed",
        Result: output,
        ...failureFields(reason, details),
      }),
    );
    next = finish(next, "Failed", output, at);
    next.history = [...state.history, ...newEvents];
    // Work already decided for this episode (retry timers) is moot once the instance failed.
    const parentWork = state.parent
      ? [notifyParent(state.parent, at, { failed: reason, ...(details ? { details } : {}) })]
      : [];
    return { state: next, newEvents, work: parentWork, consumed: true };
  };

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
    const now = { t: leaves[i].actionType, n: leafName(leaves[i]) };
    const same =
      was.t === now.t ||
      // A retryable call and its plain form are the same task to DTFx's history (same name, same id).
      (was.t === ActionType.CallActivityWithRetry && now.t === ActionType.CallActivity) ||
      (was.t === ActionType.CallActivity && now.t === ActionType.CallActivityWithRetry);
    if (!same || was.n !== now.n) {
      return fail(
        `Non-deterministic workflow detected: action #${i} was ${describe(was)} in the history and is ${describe(now)} now. Orchestrator code must be deterministic (see "Orchestrator function code constraints").`,
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
            }
          : undefined;
        if (track) book.retries[String(id)] = track;
        scheduleTask(state, kind, String(a.functionName), input, id, at, schedule, work, track, a.instanceId);
        break;
      }
      case ActionType.CreateTimer: {
        const id = book.next++;
        record.id = id;
        const fireAt = new Date(String(a.fireAt)).toISOString();
        schedule(event(HistoryEventType.TimerCreated, at, { FireAt: fireAt }, id));
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
      case ActionType.CallHttp:
        return fail(
          "callHttp is not supported by the dev host (durable HTTP calls need the Functions host).",
        );
      case ActionType.CallEntity:
      case ActionType.SignalEntity:
      case ActionType.LockEntities:
      case ActionType.ReleaseEntities:
        return fail(
          "Durable entities (callEntity, signalEntity, lock) are not supported by the dev host; see docs/durable.md.",
        );
      default:
        return fail(`The orchestrator returned an action of unknown type ${String(a.actionType)}.`);
    }
    known.push(record);
  }

  newEvents.push(event(HistoryEventType.OrchestratorCompleted, at));
  if (continueAsNew) {
    // A new execution with the new input; events not yet processed stay pending (they carry no executionId).
    const input = decodeProcessedInput(toJsonText(continueAsNew.input));
    newEvents.push(
      event(HistoryEventType.ExecutionCompleted, at, {
        OrchestrationStatus: "ContinuedAsNew",
        Result: input,
      }),
    );
    const executionId = derivedId(state.executionId, "continue-as-new");
    next = { ...next, status: "ContinuedAsNew", history: [...state.history, ...newEvents] };
    work.length = 0;
    work.push({
      kind: "message",
      message: {
        key: `start-${executionId}`,
        instanceId: state.instanceId,
        event: event(HistoryEventType.ExecutionStarted, at),
        start: {
          name: state.name,
          input,
          executionId,
          ...(state.parent ? { parent: state.parent } : {}),
        },
      },
    });
    return { state: next, newEvents, work, consumed: true };
  }
  if (reply?.isDone) {
    const output = toJsonText(reply.output);
    newEvents.push(
      event(HistoryEventType.ExecutionCompleted, at, { OrchestrationStatus: "Completed", Result: output }),
    );
    next = finish(next, "Completed", output, at);
    next.history = [...state.history, ...newEvents];
    // Pending timers and retries of a finished orchestration are moot.
    const done: OutboundWork[] = state.parent ? [notifyParent(state.parent, at, { result: output })] : [];
    return { state: next, newEvents, work: done, consumed: true };
  }
  next.history = [...state.history, ...newEvents];
  return { state: next, newEvents, work, consumed: true };
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

function scheduleTask(
  state: OrchestrationState,
  kind: "activity" | "sub",
  name: string,
  input: string | null,
  id: number,
  at: string,
  schedule: (e: HistoryEvent) => void,
  work: OutboundWork[],
  track?: RetryTrack,
  explicitInstanceId?: string,
): void {
  if (kind === "activity") {
    schedule(event(HistoryEventType.TaskScheduled, at, { Name: name, Version: "", Input: input }, id));
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
    event(
      HistoryEventType.SubOrchestrationInstanceCreated,
      at,
      { Name: name, Version: "", Input: input, InstanceId: instanceId },
      id,
    ),
  );
  work.push({
    kind: "message",
    message: {
      key: `start-${executionId}`,
      instanceId,
      event: event(HistoryEventType.ExecutionStarted, at),
      start: {
        name,
        input,
        executionId,
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
