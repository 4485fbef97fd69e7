import { DEFAULT_HTTP_ASYNC_SLEEP_MS } from "./http-activity.js";
import { parseJsonText } from "./protocol.js";
import type { Bookkeeping, HttpPollTrack } from "./retries.js";
import { type HistoryEvent, HistoryEventType } from "./types.js";

/**
 * callHttp's asynchronous pattern, as the Durable extension runs it (DurableOrchestrationContext.CallHttpAsync): while
 * the response is a 202 with a `Location` and the request has `asynchronousPatternEnabled`, a durable timer of
 * `Retry-After` seconds (else HttpOptions' DefaultAsyncRequestSleepTimeMilliseconds, the value the engine announces
 * to the SDK) and then a GET of the Location with the same headers (less `x-functions-key`) and token source. The SDK
 * (CallHttpWithPollingTask) returns only the first CallHttp action and, on the 202, counts two ids at once — the timer
 * and the next poll — so the engine takes both when the 202 arrives and schedules the poll under the second when the
 * timer fires.
 */

export type HttpPollConsequence =
  | { kind: "timer"; timerId: number; fireAt: string }
  | { kind: "poll"; taskId: number; request: string };

interface RequestWire {
  headers?: Record<string, unknown>;
  tokenSource?: unknown;
  asynchronousPatternEnabled?: boolean;
}

function header(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== "object") return undefined;
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? String(v[0]) : String(v);
  }
  return undefined;
}

/** Starts tracking a CallHttp action (its request as JSON text) whose requests may need polling. */
export function trackHttpCall(book: Bookkeeping, taskId: number, request: string | null): void {
  const r = parseJsonText(request) as RequestWire | undefined;
  // durable-functions sends asynchronousPatternEnabled: true unless the app turned it off.
  if (r && r.asynchronousPatternEnabled !== false)
    book.polls[String(taskId)] = { request: request as string, taskId };
}

function trackOf(book: Bookkeeping, e: HistoryEvent): { track: HttpPollTrack; fired: boolean } | undefined {
  if (e.EventType === HistoryEventType.TaskCompleted || e.EventType === HistoryEventType.TaskFailed) {
    const id = Number(e.TaskScheduledId);
    const track = Object.values(book.polls).find((t) => t.taskId === id && t.timerId === undefined);
    return track ? { track, fired: false } : undefined;
  }
  if (e.EventType === HistoryEventType.TimerFired) {
    const id = Number(e.TimerId);
    const track = Object.values(book.polls).find((t) => t.timerId === id);
    return track ? { track, fired: true } : undefined;
  }
  return undefined;
}

function accepted(e: HistoryEvent): { location: string; retryAfter: string | undefined } | undefined {
  if (e.EventType !== HistoryEventType.TaskCompleted) return undefined;
  const res = parseJsonText(e.Result as string | null) as
    | { statusCode?: number; headers?: unknown }
    | undefined;
  if (!res || res.statusCode !== 202) return undefined;
  const location = header(res.headers, "location");
  return location ? { location, retryAfter: header(res.headers, "retry-after") } : undefined;
}

/** Whether the event takes ids before the orchestrator resumes (a 202 to poll: the timer's and the poll's). */
export function takesHttpPollId(book: Bookkeeping, e: HistoryEvent): boolean {
  const t = trackOf(book, e);
  return t !== undefined && !t.fired && accepted(e) !== undefined;
}

function forget(book: Bookkeeping, track: HttpPollTrack) {
  for (const [key, t] of Object.entries(book.polls)) if (t === track) delete book.polls[key];
}

/** The polling consequence of one incoming event; updates `book`. Undefined when it schedules nothing. */
export function httpPollStep(
  book: Bookkeeping,
  e: HistoryEvent,
  at: string,
): HttpPollConsequence | undefined {
  const t = trackOf(book, e);
  if (!t) return undefined;
  const { track } = t;
  if (t.fired) {
    track.timerId = undefined;
    return { kind: "poll", taskId: track.taskId, request: track.request };
  }
  const a = accepted(e);
  if (!a) {
    forget(book, track);
    return undefined;
  }
  const seconds =
    a.retryAfter !== undefined && /^\d+$/.test(a.retryAfter.trim()) ? Number(a.retryAfter) : undefined;
  const delayMs = seconds !== undefined ? seconds * 1000 : DEFAULT_HTTP_ASYNC_SLEEP_MS;
  const timerId = book.next++;
  track.timerId = timerId;
  track.taskId = book.next++;
  const previous = (parseJsonText(track.request) ?? {}) as RequestWire;
  const headers = Object.fromEntries(
    Object.entries(previous.headers ?? {}).filter(([k]) => k.toLowerCase() !== "x-functions-key"),
  );
  track.request = JSON.stringify({
    method: "GET",
    uri: a.location,
    headers,
    ...(previous.tokenSource ? { tokenSource: previous.tokenSource } : {}),
    asynchronousPatternEnabled: true,
  });
  return { kind: "timer", timerId, fireAt: new Date(Date.parse(at) + delayMs).toISOString() };
}
