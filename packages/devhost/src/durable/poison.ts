import type { InstanceDoc, PartitionSnapshot } from "./documents.js";
import { stateOf } from "./documents.js";
import { releaseHeld } from "./entity-locks.js";
import {
  type FailureDetails,
  type HistoryEvent,
  HistoryEventType,
  type OrchestrationState,
  type WorkItemResult,
} from "./types.js";

/**
 * How a poisoned instance ends (pure): `Failed` with the reason and FailureDetails as the extension reports them,
 * or `Terminated` when a terminate was waiting; its parent told. The dispatcher commits it as a work item's result
 * that consumed nothing (its pending documents are deleted with it).
 */
export function poisonEnding(
  inst: InstanceDoc,
  snap: PartitionSnapshot,
  reason: string,
  error: unknown,
  now: Date,
): WorkItemResult {
  const at = now.toISOString();
  const terminate = snap.messages.find(
    (m) => m.message.event.EventType === HistoryEventType.ExecutionTerminated,
  );
  const details: FailureDetails = {
    ErrorType: error instanceof Error ? error.name : "Error",
    ErrorMessage: reason,
    IsNonRetriable: true,
  };
  const state = stateOf(inst, snap.history);
  const ended: OrchestrationState = terminate
    ? { ...state, status: "Terminated", output: (terminate.message.event.Input as string | null) ?? null }
    : { ...state, status: "Failed", output: JSON.stringify(reason) };
  ended.lastUpdatedTime = at;
  const event: HistoryEvent = terminate
    ? {
        EventType: HistoryEventType.ExecutionTerminated,
        EventId: -1,
        IsPlayed: false,
        Timestamp: at,
        Input: ended.output,
      }
    : {
        EventType: HistoryEventType.ExecutionCompleted,
        EventId: -1,
        IsPlayed: false,
        Timestamp: at,
        OrchestrationStatus: "Failed",
        Result: ended.output,
        Reason: reason,
        Details: "",
        FailureDetails: details,
      };
  ended.history = [...snap.history, event];
  // The critical section it holds is released, as at any end of an orchestration.
  const work: WorkItemResult["work"] = releaseHeld(state, at);
  if (inst.parent) {
    const p = inst.parent;
    work.push({
      kind: "message",
      message: {
        key: `sub-${p.executionId}-${p.taskScheduledId}`,
        instanceId: p.instanceId,
        executionId: p.executionId,
        event: {
          EventType: HistoryEventType.SubOrchestrationInstanceFailed,
          EventId: -1,
          IsPlayed: false,
          Timestamp: at,
          TaskScheduledId: p.taskScheduledId,
          Reason: reason,
          Details: "",
          FailureDetails: details,
        },
      },
    });
  }
  return { state: ended, newEvents: [event], work, consumed: [], dropped: [], invocations: 0 };
}
