import { boundedFailureDetails, boundedText, payloadFailure } from "./engine-limits.js";
import { isEntityId } from "./entity-engine.js";
import { releaseWork } from "./entity-locks.js";
import { decodeProcessedInput, derivedId, failureFields, historyEvent, toJsonText } from "./protocol.js";
import { type Failure, type ReplayResult, type ReplayRun, stringOrUndefined } from "./replay-run.js";
import {
  type FailureDetails,
  HistoryEventType,
  type OrchestrationState,
  type OrchestratorAction,
  type OrchestratorReply,
  type OutboundWork,
} from "./types.js";

/**
 * How a replay ends its episode (replay.ts): the execution fails, continues as new, completes, or runs on. An end
 * decides which of the work decided so far still goes out, releases the critical section the execution held, and
 * tells a parent orchestration; `notifyParent` and `finish` serve the work item's terminate too (engine.ts).
 */

/**
 * The execution fails (`why` cut to a bound): OrchestratorCompleted + ExecutionCompleted(Failed). The work decided
 * so far (retry timers, earlier actions) is moot once the instance failed; the parent hears why, the held section
 * is released.
 */
export function failExecution(run: ReplayRun, why: Failure): ReplayResult {
  const { state, at, newEvents } = run;
  const reason = boundedText(why.reason);
  const details = why.details ? boundedFailureDetails(why.details) : undefined;
  const output = JSON.stringify(`Orchestrator function '${state.name}' failed: ${reason}`);
  newEvents.push(historyEvent(HistoryEventType.OrchestratorCompleted, at));
  newEvents.push(
    historyEvent(HistoryEventType.ExecutionCompleted, at, {
      OrchestrationStatus: "Failed",
      Result: output,
      ...failureFields(reason, details),
    }),
  );
  const next = finish(run.next, "Failed", output, at);
  next.history = [...state.history, ...newEvents];
  const parentWork = state.parent
    ? [notifyParent(state.parent, at, { failed: reason, ...(details ? { details } : {}) })]
    : [];
  return { state: next, newEvents, work: [...parentWork, ...releasedAtEnd(run)] };
}

/**
 * The end of the episode once its actions are in: a continue-as-new (its new input) or a done orchestrator (its
 * output) within the payload limit, else the execution fails; then OrchestratorCompleted, and the execution
 * continues as new, completes, or — neither — waits with the work decided.
 */
export function endEpisode(
  run: ReplayRun,
  reply: OrchestratorReply,
  continueAsNew: OrchestratorAction | undefined,
): ReplayResult {
  const { state, at, newEvents, limits } = run;
  const newInput = continueAsNew ? decodeProcessedInput(toJsonText(continueAsNew.input)) : null;
  const output = !continueAsNew && reply.isDone ? toJsonText(reply.output) : null;
  const tooBig = continueAsNew
    ? payloadFailure(
        newInput,
        `The continue-as-new input of orchestration '${state.name}'`,
        limits.maxPayloadBytes,
      )
    : payloadFailure(output, `The output of orchestration '${state.name}'`, limits.maxPayloadBytes);
  if (tooBig) return failExecution(run, tooBig);
  newEvents.push(historyEvent(HistoryEventType.OrchestratorCompleted, at));
  if (continueAsNew) return continuedAsNew(run, newInput);
  if (reply.isDone) return completed(run, output);
  run.next.history = [...state.history, ...newEvents];
  return { state: run.next, newEvents, work: run.work };
}

/**
 * A new execution with the new input: only its start message and the section's release go out (the rest of this
 * episode's work belongs to an execution that is over); events not yet processed stay pending (they carry no
 * executionId).
 */
function continuedAsNew(run: ReplayRun, input: string | null): ReplayResult {
  const { state, at, newEvents } = run;
  newEvents.push(
    historyEvent(HistoryEventType.ExecutionCompleted, at, {
      OrchestrationStatus: "ContinuedAsNew",
      Result: input,
    }),
  );
  const executionId = derivedId(state.executionId, "continue-as-new");
  const next: OrchestrationState = {
    ...run.next,
    status: "ContinuedAsNew",
    history: [...state.history, ...newEvents],
  };
  const start: OutboundWork = {
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
  };
  return { state: next, newEvents, work: [...releasedAtEnd(run), start] };
}

/**
 * The orchestrator is done: ExecutionCompleted with its output. Pending timers and retries of a finished
 * orchestration are moot; what it sent entities on its way out is not (DTFx sends every message of the last
 * episode, a signalEntity before the return too) — a release() in this episode among it. A section still held is
 * released; the parent gets the output.
 */
function completed(run: ReplayRun, output: string | null): ReplayResult {
  const { state, at, newEvents, book } = run;
  newEvents.push(
    historyEvent(HistoryEventType.ExecutionCompleted, at, {
      OrchestrationStatus: "Completed",
      Result: output,
    }),
  );
  const next = finish(run.next, "Completed", output, at);
  next.history = [...state.history, ...newEvents];
  const sent = run.work.filter((w) => w.kind === "message" && isEntityId(w.message.instanceId));
  const stillHeld = book.lock?.held ? releaseWork({ ...book.lock }, state.instanceId, at) : [];
  const done: OutboundWork[] = [...sent, ...stillHeld];
  if (state.parent) done.push(notifyParent(state.parent, at, { result: output }));
  return { state: next, newEvents, work: done };
}

/** The release of the section held once the work item's events were in (none when none was held). */
function releasedAtEnd(run: ReplayRun): OutboundWork[] {
  return run.held ? releaseWork(run.held, run.state.instanceId, run.at) : [];
}

/** A sub-orchestration's outcome as its parent's message: SubOrchestrationInstanceCompleted or …Failed. */
export function notifyParent(
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

/** The state of an execution that ended with `status` and `output`. */
export function finish(
  state: OrchestrationState,
  status: "Completed" | "Failed" | "Terminated",
  output: string | null,
  at: string,
): OrchestrationState {
  return { ...state, status, output, lastUpdatedTime: at };
}

/** The instance's version, from its execution's ExecutionStarted (for the next execution of a continue-as-new). */
function versionOf(state: OrchestrationState): { version?: string } {
  const started = state.history.find((e) => e.EventType === HistoryEventType.ExecutionStarted);
  const version = stringOrUndefined(started?.Version);
  return version !== undefined ? { version } : {};
}
