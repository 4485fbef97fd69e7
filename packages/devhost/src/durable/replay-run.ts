import type { CriticalSection } from "./entity-locks.js";
import { decodeProcessedInput, derivedId, historyEvent } from "./protocol.js";
import { type Bookkeeping, bookkeeping, type RetryTrack } from "./retries.js";
import {
  type EngineLimits,
  type FailureDetails,
  type HistoryEvent,
  HistoryEventType,
  type OrchestrationState,
  type OutboundWork,
} from "./types.js";

/**
 * What one replay (replay.ts) has decided so far, shared by its steps: the bookkeeping it updates, the episode's
 * history events and outbound work as they are decided, the state it leads to. Also the two things every step
 * schedules alike: a task (activity or sub-orchestration) and a timer's work.
 */

export interface ReplayRun {
  /** The state before the replay (always Running). */
  readonly state: OrchestrationState;
  /** The replay's time (ISO), every new event's Timestamp. */
  readonly at: string;
  readonly limits: EngineLimits;
  /** A copy of the state's bookkeeping (retries.ts) the steps update: ids taken, leaves seen, retries, the lock. */
  readonly book: Bookkeeping;
  /** The episode's history events, in order: OrchestratorStarted, the work item's events, what it schedules. */
  readonly newEvents: HistoryEvent[];
  /** The outbound work decided so far (moot if the execution fails; replay-end.ts decides what an end keeps). */
  readonly work: OutboundWork[];
  /** The state the replay leads to: `book` as its engine, the custom status once read, the end once decided. */
  next: OrchestrationState;
  /**
   * The critical section held once the work item's events are in: what an end of this execution releases (a
   * release this replay decides is moot when it fails, as all its work is; the section is released instead).
   */
  held?: CriticalSection;
}

/** Why the execution fails: a reason, and the failure details when the cause gave some. */
export interface Failure {
  reason: string;
  details?: FailureDetails;
}

export interface ReplayResult {
  state: OrchestrationState;
  newEvents: HistoryEvent[];
  work: OutboundWork[];
}

/** A run on `state` at `at`: its bookkeeping copied, the episode opened with OrchestratorStarted. */
export function openRun(state: OrchestrationState, at: string, limits: EngineLimits): ReplayRun {
  const book = bookkeeping(state);
  return {
    state,
    at,
    limits,
    book,
    newEvents: [historyEvent(HistoryEventType.OrchestratorStarted, at)],
    work: [],
    next: { ...state, lastUpdatedTime: at, engine: book as unknown as Record<string, unknown> },
  };
}

/** A durable timer of this execution to set (a retry's delay, a callHttp poll's, a createTimer). */
export function timerWork(state: OrchestrationState, timerId: number, fireAt: string): OutboundWork {
  return { kind: "timer", instanceId: state.instanceId, executionId: state.executionId, timerId, fireAt };
}

/**
 * A task's history event and its outbound work: an activity is a TaskScheduled and an activity work item; a
 * sub-orchestration a SubOrchestrationInstanceCreated and the start message of the child (its parent named).
 */
export function scheduleTask(
  run: ReplayRun,
  kind: "activity" | "sub",
  name: string,
  input: string | null,
  id: number,
  sub: { track?: RetryTrack; explicitInstanceId?: string; version?: string } = {},
): void {
  const { state, at, newEvents, work } = run;
  const { track, explicitInstanceId, version } = sub;
  if (kind === "activity") {
    newEvents.push(
      historyEvent(HistoryEventType.TaskScheduled, at, { Name: name, Version: "", Input: input }, id),
    );
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
  newEvents.push(
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
export function stringOrUndefined(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}
