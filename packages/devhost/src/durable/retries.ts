import type { CriticalSection } from "./entity-locks.js";
import type {
  ActionTypeNumber,
  FailureDetails,
  HistoryEvent,
  OrchestrationState,
  RetryOptionsWire,
} from "./types.js";
import { HistoryEventType } from "./types.js";

/**
 * The replay engine's bookkeeping (kept in `state.engine`, saved verbatim by the store): the leaf actions seen so
 * far, the next sequence id, and the retryable tasks in flight. Retries are the extension's job in the
 * out-of-process protocol (DTFx RetryInterceptor): the SDK's RetryableTask only counts ids for them, so the engine
 * schedules the retry timers and re-attempts itself and must take the same ids at the same points.
 */

/** One leaf action seen in an earlier replay (for the determinism check and timer cancellation). */
export interface LeafRecord {
  t: ActionTypeNumber;
  n?: string;
  /** Its sequence id (none for WaitForExternalEvent and ContinueAsNew). */
  id?: number;
  canceled?: boolean;
}

/** A retryable task (activity or sub-orchestration with RetryOptions), keyed by its first attempt's id. */
export interface RetryTrack {
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
  /** A sub-orchestration's version, for every attempt. */
  version?: string;
}

export interface Bookkeeping {
  next: number;
  leaves: LeafRecord[];
  retries: Record<string, RetryTrack>;
  /** callHttp requests polling a 202 (http-polling.ts), keyed by the CallHttp action's id. */
  polls: Record<string, HttpPollTrack>;
  /** The critical section (context.df.lock) requested or held, until released (entity-locks.ts). */
  lock?: CriticalSection;
}

/** A callHttp with the asynchronous pattern: the request, the HTTP task running, the poll timer pending. */
export interface HttpPollTrack {
  /** JSON text of the DurableHttpRequest the next poll sends. */
  request: string;
  taskId: number;
  timerId?: number;
}

export function bookkeeping(state: OrchestrationState): Bookkeeping {
  // A copy: a work item may be re-run on the stored state (a lost commit race), so it never mutates its input.
  // Through JSON (the store keeps it as JSON): structuredClone cost several times as much for these small objects.
  const e = (
    state.engine === undefined ? {} : JSON.parse(JSON.stringify(state.engine))
  ) as Partial<Bookkeeping>;
  return {
    next: e.next ?? 0,
    leaves: e.leaves ?? [],
    retries: e.retries ?? {},
    polls: e.polls ?? {},
    ...(e.lock ? { lock: e.lock } : {}),
  };
}

/** The delay before attempt `attempt + 1` after `attempt` failed (DTFx RetryInterceptor.ComputeNextDelay). */
export function retryDelayMs(options: RetryOptionsWire, attempt: number): number {
  const coefficient = options.backoffCoefficient ?? 1;
  let delay = options.firstRetryIntervalInMilliseconds * coefficient ** (attempt - 1);
  const max = options.maxRetryIntervalInMilliseconds;
  if (max !== undefined && max > 0 && delay > max) delay = max;
  return Math.max(0, Math.round(delay));
}

/**
 * Whether a failed attempt is followed by a retry timer (DTFx RetryInterceptor.ComputeNextDelay): while `now` is
 * within retryTimeoutInMilliseconds of the first attempt — after the last attempt too (DTFx waits the delay, and
 * the SDK fails the task when that timer fires). The timeout is looked at only there: once the timer fires, the
 * next attempt runs if any is left, however late (DTFx's loop).
 */
export function withinRetryTimeout(options: RetryOptionsWire, firstAt: string, now: Date): boolean {
  const timeout = options.retryTimeoutInMilliseconds;
  if (timeout !== undefined && timeout > 0 && timeout < Number.MAX_SAFE_INTEGER) {
    return now.getTime() - Date.parse(firstAt) < timeout;
  }
  return true;
}

/**
 * What one incoming event means for a retryable task: a retry timer to create, the next attempt to schedule, or —
 * a failed attempt past the retry timeout — the end of the instance (`expired`).
 */
export type RetryConsequence =
  | { kind: "timer"; timerId: number; fireAt: string }
  | { kind: "attempt"; track: RetryTrack }
  | { kind: "expired"; reason: string; details: FailureDetails };

function trackOf(book: Bookkeeping, incoming: HistoryEvent, now: Date) {
  if (
    incoming.EventType === HistoryEventType.TaskFailed ||
    incoming.EventType === HistoryEventType.SubOrchestrationInstanceFailed
  ) {
    const id = Number(incoming.TaskScheduledId);
    const track = Object.values(book.retries).find((t) => t.taskId === id && t.timerId === undefined);
    if (!track) return undefined;
    return {
      track,
      failed: true as const,
      expired: !withinRetryTimeout(track.options, track.firstScheduledAt, now),
    };
  }
  if (incoming.EventType === HistoryEventType.TimerFired) {
    const id = Number(incoming.TimerId);
    const track = Object.values(book.retries).find((t) => t.timerId === id);
    if (!track) return undefined;
    return { track, failed: false as const, again: track.attempt < track.options.maxNumberOfAttempts };
  }
  return undefined;
}

/**
 * Whether an incoming event takes a sequence id before the orchestrator resumes: a retryable task's failed attempt
 * (its retry timer — even after the last attempt, as DTFx), or that timer firing with attempts left (the next
 * attempt). Such an event never resumes the orchestrator (its task is still running), so a work item replays these
 * first: the SDK then counts their ids before those of the actions the other events lead to, as the engine does.
 */
export function takesRetryId(book: Bookkeeping, incoming: HistoryEvent, now: Date): boolean {
  const t = trackOf(book, incoming, now);
  return t !== undefined && (t.failed ? !t.expired : t.again);
}

/**
 * Why the instance fails when an attempt fails past its retry timeout. DTFx then creates no retry timer and fails
 * the task at once, but durable-functions' RetryableTask always waits for a retry timer after a failed attempt, so
 * on Azure the orchestration waits for ever, its catch never reached
 * (https://github.com/Azure/azure-functions-durable-js/issues/629). The dev host fails it instead, saying why.
 */
function expiredFailure(
  track: RetryTrack,
  failed: HistoryEvent,
): { reason: string; details: FailureDetails } {
  const what = `${track.kind === "activity" ? "Activity" : "Sub-orchestration"} '${track.name}'`;
  const last = failed.FailureDetails as FailureDetails | undefined;
  const lastText = last?.ErrorMessage ?? (failed.Reason as string | undefined) ?? "";
  const reason =
    `${what} failed on attempt ${track.attempt} of ${track.options.maxNumberOfAttempts} after its retry timeout ` +
    `(retryTimeoutInMilliseconds: ${track.options.retryTimeoutInMilliseconds}) had expired. Durable Task schedules ` +
    "no retry then, and durable-functions waits for one that never comes (on Azure the orchestration would stay " +
    "Running: https://github.com/Azure/azure-functions-durable-js/issues/629), so the dev host fails the " +
    `orchestration. Last failure: ${lastText}`;
  return {
    reason,
    details: {
      ErrorType: "RetryTimeoutExpired",
      ErrorMessage: reason,
      IsNonRetriable: true,
      ...(last ? { InnerFailure: last } : {}),
    },
  };
}

/** A retryable task that ended (its attempt succeeded, or no attempt is left) is forgotten: `book` stays small. */
function forget(book: Bookkeeping, track: RetryTrack): void {
  for (const [key, t] of Object.entries(book.retries)) if (t === track) delete book.retries[key];
}

/**
 * The retry consequence of one incoming event, in the SDK's order (before the orchestrator resumes); updates
 * `book` (ids taken, attempt counted, ended tasks forgotten). Undefined when it schedules nothing.
 */
export function retryStep(
  book: Bookkeeping,
  incoming: HistoryEvent,
  at: string,
): RetryConsequence | undefined {
  const now = new Date(at);
  if (
    incoming.EventType === HistoryEventType.TaskCompleted ||
    incoming.EventType === HistoryEventType.SubOrchestrationInstanceCompleted
  ) {
    const id = Number(incoming.TaskScheduledId);
    const done = Object.values(book.retries).find((r) => r.taskId === id);
    if (done) forget(book, done);
    return undefined;
  }
  const t = trackOf(book, incoming, now);
  if (!t) return undefined;
  const { track } = t;
  if (t.failed) {
    if (t.expired) {
      forget(book, track);
      return { kind: "expired", ...expiredFailure(track, incoming) };
    }
    const timerId = book.next++;
    track.timerId = timerId;
    const fireAt = new Date(now.getTime() + retryDelayMs(track.options, track.attempt));
    return { kind: "timer", timerId, fireAt: fireAt.toISOString() };
  }
  track.timerId = undefined;
  if (!t.again) {
    forget(book, track);
    return undefined;
  }
  track.attempt++;
  track.taskId = book.next++;
  return { kind: "attempt", track };
}
