import { payloadFailure } from "./engine-limits.js";
import { entityActionWork } from "./entity-engine.js";
import { lockActionWork, lockSetOf, releaseActionWork } from "./entity-locks.js";
import { HTTP_ACTIVITY_NAME } from "./http-activity.js";
import { trackHttpCall } from "./http-polling.js";
import { describeAction, historyEvent, leafName, toJsonText } from "./protocol.js";
import { type Failure, type ReplayRun, scheduleTask, stringOrUndefined, timerWork } from "./replay-run.js";
import type { LeafRecord, RetryTrack } from "./retries.js";
import { ActionType, HistoryEventType, type OrchestratorAction } from "./types.js";

/**
 * The orchestrator's actions in a replay (replay.ts). It returns all of them since the start, flattened in the
 * SDK's numbering order: the leaves the bookkeeping has seen must come back as they were (else the orchestrator
 * is not deterministic), and the rest are new — each takes its sequence id as the SDK counts them and becomes
 * history events and outbound work.
 */

const NON_DETERMINISTIC_HINT =
  'Orchestrator code must be deterministic (see "Orchestrator function code constraints").';

/**
 * The known prefix: as many actions as the history has, each of the same type (a call and its `…WithRetry` form
 * are one task to DTFx's history) and name — else the failure that says which. A timer canceled since (a Task.any
 * won elsewhere) is marked so and its pending fire canceled.
 */
export function matchKnownActions(run: ReplayRun, leaves: OrchestratorAction[]): Failure | undefined {
  const known = run.book.leaves;
  if (leaves.length < known.length) {
    return {
      reason: `Non-deterministic workflow detected: the orchestrator scheduled ${leaves.length} actions where the history has ${known.length}. ${NON_DETERMINISTIC_HINT}`,
    };
  }
  for (let i = 0; i < known.length; i++) {
    const was = known[i];
    const is = { t: leaves[i].actionType, n: leafName(leaves[i]) };
    if (!sameTask(was, is)) {
      return {
        reason: `Non-deterministic workflow detected: action #${i} was ${describeAction(was)} in the history and is ${describeAction(is)} now. ${NON_DETERMINISTIC_HINT}`,
      };
    }
    if (was.t === ActionType.CreateTimer && leaves[i].isCanceled === true && !was.canceled) {
      was.canceled = true;
      if (was.id !== undefined) {
        run.work.push({
          kind: "cancelTimer",
          instanceId: run.state.instanceId,
          executionId: run.state.executionId,
          timerId: was.id,
        });
      }
    }
  }
  return undefined;
}

function sameTask(was: LeafRecord, is: { t: LeafRecord["t"]; n: string | undefined }): boolean {
  const sameType =
    was.t === is.t ||
    // A retryable call and its plain form are the same task to DTFx's history (same name, same id).
    (was.t === ActionType.CallActivityWithRetry && is.t === ActionType.CallActivity) ||
    (was.t === ActionType.CallActivity && is.t === ActionType.CallActivityWithRetry);
  return sameType && was.n === is.n;
}

/**
 * The new actions, in list order, each recorded in the bookkeeping's leaves once scheduled: the first that cannot
 * be (a payload over the limit, a lock of nothing, an unknown type) fails the execution; a ContinueAsNew among
 * them (the last one counts) is what the episode's end starts.
 */
export function scheduleNewActions(
  run: ReplayRun,
  actions: OrchestratorAction[],
): { failure: Failure } | { continueAsNew: OrchestratorAction | undefined } {
  let continueAsNew: OrchestratorAction | undefined;
  for (const a of actions) {
    const name = leafName(a);
    const record: LeafRecord = { t: a.actionType, ...(name !== undefined ? { n: name } : {}) };
    if (a.actionType === ActionType.ContinueAsNew) continueAsNew = a;
    const failure = scheduleAction(run, a, record);
    if (failure) return { failure };
    run.book.leaves.push(record);
  }
  return { continueAsNew };
}

/** One new action: its id (in `record`), history events and work; or why it fails the execution. */
function scheduleAction(run: ReplayRun, a: OrchestratorAction, record: LeafRecord): Failure | undefined {
  switch (a.actionType) {
    case ActionType.CallActivity:
    case ActionType.CallActivityWithRetry:
    case ActionType.CallSubOrchestrator:
    case ActionType.CallSubOrchestratorWithRetry:
      return scheduleCall(run, a, record);
    case ActionType.CreateTimer:
      scheduleTimer(run, a, record);
      return undefined;
    case ActionType.WaitForExternalEvent:
    case ActionType.ContinueAsNew:
      return undefined;
    case ActionType.CallHttp:
      return scheduleHttpCall(run, a, record);
    case ActionType.CallEntity:
    case ActionType.SignalEntity:
      return scheduleEntityOperation(run, a, record);
    case ActionType.LockEntities:
      return requestLock(run, a, record);
    case ActionType.ReleaseEntities:
      releaseLock(run, record);
      return undefined;
    default:
      return { reason: `The orchestrator returned an action of unknown type ${String(a.actionType)}.` };
  }
}

/**
 * An activity or sub-orchestration call, with or without retries (a retryable one is tracked under its first
 * attempt's id, retries.ts). A sub-orchestration without a version of its own gets host.json's defaultVersion,
 * as the extension gives it.
 */
function scheduleCall(run: ReplayRun, a: OrchestratorAction, record: LeafRecord): Failure | undefined {
  const { book, limits, at } = run;
  const id = book.next++;
  record.id = id;
  const kind =
    a.actionType === ActionType.CallActivity || a.actionType === ActionType.CallActivityWithRetry
      ? "activity"
      : "sub";
  const input = toJsonText(a.input);
  const what = `The input of ${kind === "activity" ? "activity" : "sub-orchestration"} '${String(a.functionName)}'`;
  const tooBig = payloadFailure(input, what, limits.maxPayloadBytes);
  if (tooBig) return tooBig;
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
  scheduleTask(run, kind, String(a.functionName), input, id, {
    track,
    explicitInstanceId: a.instanceId,
    version,
  });
  return undefined;
}

/** A durable timer: TimerCreated, and the timer's work unless the orchestrator canceled it already. */
function scheduleTimer(run: ReplayRun, a: OrchestratorAction, record: LeafRecord): void {
  const id = run.book.next++;
  record.id = id;
  const fireAt = new Date(String(a.fireAt)).toISOString();
  run.newEvents.push(historyEvent(HistoryEventType.TimerCreated, run.at, { FireAt: fireAt }, id));
  if (a.isCanceled) record.canceled = true;
  else run.work.push(timerWork(run.state, id, fireAt));
}

/** callHttp: the extension schedules the built-in HTTP activity (http-activity.ts); its result is the response. */
function scheduleHttpCall(run: ReplayRun, a: OrchestratorAction, record: LeafRecord): Failure | undefined {
  const id = run.book.next++;
  record.id = id;
  const input = toJsonText(a.httpRequest);
  const tooBig = payloadFailure(input, "The request of callHttp", run.limits.maxPayloadBytes);
  if (tooBig) return tooBig;
  trackHttpCall(run.book, id, input);
  scheduleTask(run, "activity", HTTP_ACTIVITY_NAME, input, id);
  return undefined;
}

/** callEntity / signalEntity: an EventSent and the request message to the entity (entity-engine.ts). */
function scheduleEntityOperation(
  run: ReplayRun,
  a: OrchestratorAction,
  record: LeafRecord,
): Failure | undefined {
  const id = run.book.next++;
  record.id = id;
  const tooBig = payloadFailure(
    toJsonText(a.input),
    `The input of entity operation '${String(a.operation)}'`,
    run.limits.maxPayloadBytes,
  );
  if (tooBig) return tooBig;
  const signal = a.actionType === ActionType.SignalEntity;
  const sent = entityActionWork(run.state, a, id, signal, run.at, run.newEvents);
  run.newEvents.push(sent.event);
  run.work.push(sent.work);
  return undefined;
}

/**
 * context.df.lock: one id (the EventSent of the request to the first entity); the grant comes back as an
 * EventRaised (entity-locks.ts), and the section is the bookkeeping's until released.
 */
function requestLock(run: ReplayRun, a: OrchestratorAction, record: LeafRecord): Failure | undefined {
  const id = run.book.next++;
  record.id = id;
  const set = lockSetOf(a);
  if (set.length === 0) return { reason: "context.df.lock was given no entity to lock." };
  const sent = lockActionWork(run.state, a, set, id, run.at);
  run.newEvents.push(sent.event);
  run.work.push(sent.work);
  run.book.lock = sent.section;
  return undefined;
}

/** The release of the section: the SDK counts one id per entity of it (the extension sends each its release). */
function releaseLock(run: ReplayRun, record: LeafRecord): void {
  const section = run.book.lock;
  if (!section) return;
  record.id = run.book.next;
  run.book.next += section.set.length;
  const released = releaseActionWork(run.state, section, record.id, run.at);
  run.newEvents.push(...released.events);
  run.work.push(...released.work);
  delete run.book.lock;
}
