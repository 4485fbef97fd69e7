import { createClientLogger } from "@azure/logger";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { isCosmosFeedError } from "@cosmos-feed/core/errors";
import type { GuardedResponse } from "@cosmos-feed/locks";
import { ApiError } from "./model.js";

// The API's transport-neutral request, and how whatever a handler throws becomes its answer and its log line.

/** Where a request's log lines go when it brings no log of its own (silent unless AZURE_LOG_LEVEL is set). */
const fallbackLogger = createClientLogger("cosmos-feed-app");

/** A request's log: functions/ fills it from the InvocationContext, so the host's log shows each line. */
export interface RequestLog {
  error(message: string): void;
  warn(message: string): void;
}

/** A transport-neutral request: functions/ adapts the Functions HttpRequest to it. */
export interface ApiRequest {
  /** The full request URL (its origin builds Azure-AsyncOperation and nextLink). */
  url: string;
  /** A header by (case-insensitive) name, or null. */
  header(name: string): string | null;
  /** The body as text (read only for PUT and PATCH, after Content-Length is checked). */
  text(): Promise<string>;
  /** The route's parameters. */
  params: Record<string, string | undefined>;
  /**
   * Fires when the answer is no longer wanted: the database calls and the lock wait stop, and the request answers
   * 503 RequestAborted (logged as a warning, not an error).
   */
  signal?: AbortSignal;
  /** The request's log (the invocation's); without one, @azure/logger. */
  log?: RequestLog;
  /** Named in every log line of the request (the Functions invocation id). */
  invocationId?: string;
}

export type ApiResponse = GuardedResponse;

const errorBody = (code: string, message: string) => ({ error: { code, message } });

/** The operation each request created or asked for, once known: its log lines name it. */
const operationOfRequest = new WeakMap<ApiRequest, string>();

/** Records the operation `req` is about, for its log lines. */
export function noteOperation(req: ApiRequest, operationId: string): void {
  operationOfRequest.set(req, operationId);
}

/** A request in log lines: its path, its invocation and, when known, its operation. */
function requestLabel(req: ApiRequest): string {
  let path = req.url;
  try {
    path = new URL(req.url).pathname;
  } catch {
    // a URL the host would not have routed; log it as given
  }
  const ids = [`invocation ${req.invocationId ?? "unknown"}`];
  const op = operationOfRequest.get(req);
  if (op !== undefined) ids.push(`operation ${op}`);
  return `${path} (${ids.join(", ")})`;
}

function logError(req: ApiRequest, message: string): void {
  if (req.log) req.log.error(message);
  else fallbackLogger.error(message);
}

export function logWarning(req: ApiRequest, message: string): void {
  if (req.log) req.log.warn(message);
  else fallbackLogger.warning(message);
}

/**
 * Runs `work` and turns what it throws into the API's answer: ApiError → its status with `{ error: { code,
 * message } }`; an aborted request (`req.signal`) → 503 RequestAborted, logged as a warning; the library's typed
 * errors → their status; Cosmos throttling → 429/503 + Retry-After; anything else → 500 InternalServerError.
 * Every 500 logs one error line to `req.log` naming the path, the invocation and the operation when known; never
 * an unhandled throw.
 */
export async function answer(req: ApiRequest, work: () => Promise<ApiResponse>): Promise<ApiResponse> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof ApiError) return { status: e.statusCode, body: errorBody(e.code, e.message) };
    if (req.signal?.aborted) {
      // Whatever failed, it failed because the request was given up: not a fault to alert on.
      const reason: unknown = req.signal.reason;
      logWarning(
        req,
        `Request ${requestLabel(req)} aborted: ${reason instanceof Error ? reason.message : String(reason)}`,
      );
      return {
        status: 503,
        headers: { "Retry-After": "1" },
        body: errorBody("RequestAborted", "The request was abandoned before it finished; retry it."),
      };
    }
    // Throttling, from the SDK (its `code`) or from the library's own typed errors (their `statusCode`).
    const s = statusOf(e) ?? (isCosmosFeedError(e) ? e.statusCode : undefined);
    if (s === 429 || s === 503) {
      return {
        status: 503,
        headers: { "Retry-After": "1" },
        body: errorBody("ServiceBusy", "The database is busy; retry shortly."),
      };
    }
    if (isCosmosFeedError(e)) {
      // The library refused on the server's side (a missing or misconfigured container, …): not the client's fault.
      logError(req, `Request ${requestLabel(req)} failed with 500 ${e.code}: ${e.message}`);
      return { status: 500, body: errorBody(e.code, e.message) };
    }
    logError(
      req,
      `Request ${requestLabel(req)} failed with 500 InternalServerError: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
    );
    return { status: 500, body: errorBody("InternalServerError", "The request failed; it can be retried.") };
  }
}
