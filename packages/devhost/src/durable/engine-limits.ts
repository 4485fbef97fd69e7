import { DURABLE_LIMITS, payloadProblem } from "./limits.js";
import {
  type ActivityInvoker,
  type ActivityWorkItem,
  type FailureDetails,
  type HistoryEvent,
  HistoryEventType,
} from "./types.js";

/**
 * The payload limits the replay engine enforces on what orchestrators and activities produce (docs/durable-design.md,
 * "Limits"): a payload over DURABLE_MAX_PAYLOAD_BYTES or nested deeper than DURABLE_LIMITS.payloadDepth fails its
 * orchestration (or, for an activity's result, its task) with the limit named, instead of reaching the store; a
 * failure's own text is cut to a bound. So nothing an orchestration computes can make a commit exceed what Cosmos DB
 * takes, and the instance ends with the reason while the others go on.
 */

/** Failure text kept per field (message, stack trace): an Error with a 3 MB message must not halt a commit. */
export const FAILURE_TEXT_BYTES = 16 * 1024;
/** InnerFailure levels kept in FailureDetails. */
const FAILURE_NESTING = 8;

/** A limit's failure of an orchestration or task: the reason, and FailureDetails as the extension reports them. */
export interface LimitFailure {
  reason: string;
  details: FailureDetails;
}

function limitFailure(code: string, message: string): LimitFailure {
  return { reason: message, details: { ErrorType: code, ErrorMessage: message, IsNonRetriable: true } };
}

/** payloadProblem (limits.ts) as a failure: `what` names the payload ("The output of orchestration 'x'"). */
export function payloadFailure(
  text: string | null | undefined,
  what: string,
  maxPayloadBytes: number,
): LimitFailure | undefined {
  const p = payloadProblem(text, what, maxPayloadBytes);
  return p ? limitFailure(p.code, p.message) : undefined;
}

/**
 * A custom status over the extension's limit, "16 KB of UTF-16 JSON text" (learn.microsoft.com,
 * durable-functions-custom-orchestration-status) — measured as the extension does, 2 bytes per UTF-16 code unit —
 * or nested deeper than DURABLE_LIMITS.payloadDepth.
 */
export function customStatusFailure(text: string | null | undefined): LimitFailure | undefined {
  if (text === null || text === undefined) return undefined;
  const bytes = text.length * 2;
  if (bytes > DURABLE_LIMITS.customStatusBytes) {
    return limitFailure(
      "PayloadTooLarge",
      `The custom status is ${bytes} bytes of UTF-16 JSON text; the limit is 16 KB (${DURABLE_LIMITS.customStatusBytes} bytes).`,
    );
  }
  return payloadFailure(text, "The custom status", Number.MAX_SAFE_INTEGER);
}

/** `text` cut to at most `maxBytes` UTF-8 bytes (on a character boundary), saying how much was cut. */
export function boundedText(text: string, maxBytes = FAILURE_TEXT_BYTES): string {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= maxBytes) return text;
  const note = ` … (cut: ${bytes} bytes in all)`;
  let kept = Buffer.from(text, "utf8")
    .subarray(0, Math.max(0, maxBytes - Buffer.byteLength(note)))
    .toString("utf8");
  // A character split by the cut decodes as U+FFFD: drop it.
  if (kept.endsWith("\uFFFD")) kept = kept.slice(0, -1);
  return kept + note;
}

/** FailureDetails with each text cut to FAILURE_TEXT_BYTES and at most FAILURE_NESTING inner failures. */
export function boundedFailureDetails(d: FailureDetails, level = 0): FailureDetails {
  return {
    ErrorType: boundedText(String(d.ErrorType ?? "Error"), 1024),
    ErrorMessage: boundedText(String(d.ErrorMessage ?? "")),
    ...(d.StackTrace ? { StackTrace: boundedText(String(d.StackTrace)) } : {}),
    ...(d.IsNonRetriable !== undefined ? { IsNonRetriable: d.IsNonRetriable } : {}),
    ...(d.InnerFailure && level < FAILURE_NESTING
      ? { InnerFailure: boundedFailureDetails(d.InnerFailure, level + 1) }
      : {}),
  };
}

/** What an activity invocation gave: its result as JSON text, or its failure. */
export type ActivityOutcome = Awaited<ReturnType<ActivityInvoker>>;

/**
 * The completion message's event for an activity's outcome: TaskCompleted with the result, or TaskFailed with
 * FailureDetails (the orchestrator sees a TaskFailedError it can catch). A result over `maxPayloadBytes` or nested
 * too deep becomes TaskFailed naming the limit ("The result of activity 'x' is N bytes; …"); failure texts are cut.
 */
export function activityResultEvent(
  item: ActivityWorkItem,
  outcome: ActivityOutcome,
  now: Date,
  maxPayloadBytes: number,
): HistoryEvent {
  const base = {
    EventId: -1,
    IsPlayed: false,
    Timestamp: now.toISOString(),
    TaskScheduledId: item.taskScheduledId,
  };
  let failure: FailureDetails;
  if ("result" in outcome) {
    const result = outcome.result ?? "null";
    const problem = payloadFailure(result, `The result of activity '${item.name}'`, maxPayloadBytes);
    if (!problem) return { ...base, EventType: HistoryEventType.TaskCompleted, Result: result };
    failure = problem.details;
  } else {
    failure = boundedFailureDetails(outcome.failure);
  }
  return {
    ...base,
    EventType: HistoryEventType.TaskFailed,
    Reason: failure.ErrorMessage,
    Details: failure.StackTrace ?? "",
    FailureDetails: failure,
  };
}
