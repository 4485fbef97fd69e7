import { errorMessage } from "../errorMessage.js";
import { isCosmosError } from "./cosmos-backend/store.js";
import { TaskHubError } from "./errors.js";

/**
 * The one place where an error thrown under the durable HTTP API (client-api.ts) becomes an HTTP answer. A client's
 * mistake — a refused request, an unknown instance, a conflict, a payload over a limit, a continuation token the
 * store does not know — is a 4xx with a `code` and the reason; throttling is a 503 with Retry-After; only a failure of
 * the task hub itself is a 500, with a generic body, reported to `onError` with the route and the instance id (the
 * dev host logs it). Bodies are ASP.NET's HttpError shape (`{"Message": …}`) as the extension's, plus `code`.
 */

export interface DurableApiResponse {
  /** The HTTP status code. */
  status: number;
  /** The response headers. */
  headers: Record<string, string>;
  /** The response body (JSON text). */
  body: string;
}

/** Where an error happened, for the answer and the log line. */
export interface DurableErrorContext {
  /** The route as a template with the method ("POST instances/{id}/terminate"). */
  route: string;
  /** The instance the request acts on, when known. */
  instanceId?: string;
  /** The request's `x-ms-continuation-token`: a 400 from the store while listing is about it. */
  continuationToken?: string;
}

export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): DurableApiResponse {
  return {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
    body: JSON.stringify(body),
  };
}

/** An error answer: `{"Message": …, "code": …}` (the extension's CreateErrorResponse body, plus a code). */
export function problem(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): DurableApiResponse {
  return json(status, { Message: message, code }, headers);
}

/** A request the API refuses before it reaches the task hub (bad parameter, body over a limit …). */
export function refused(statusCode: 400 | 404 | 413, code: string, message: string): TaskHubError {
  return new TaskHubError(message, statusCode, code);
}

/** The HTTP status an error carries: TaskHubError and similar `statusCode`, or Cosmos DB's numeric `code`. */
function statusOf(e: unknown): number | undefined {
  if (typeof e !== "object" || e === null) return undefined;
  const { statusCode, code } = e as { statusCode?: unknown; code?: unknown };
  if (typeof statusCode === "number") return statusCode;
  return typeof code === "number" ? code : undefined;
}

/** Cosmos DB's message without the ActivityId line and the JSON wrapping of its error list. */
function reasonOf(e: unknown): string {
  const raw = errorMessage(e);
  const first = raw.split(/\r?\n/, 1)[0] ?? "";
  const errors = /"Errors":\s*\[\s*"([^"]*)"/.exec(raw)?.[1];
  return (errors ?? first).trim().slice(0, 500) || "no reason given";
}

/** Whole seconds for Retry-After: the store's wait rounded up, at least 1. */
function retryAfterSeconds(e: unknown): number {
  const ms = (e as { retryAfterInMs?: unknown })?.retryAfterInMs;
  return typeof ms === "number" && Number.isFinite(ms) && ms > 0 ? Math.max(1, Math.ceil(ms / 1000)) : 1;
}

/** The SDK's own refusal of a continuation token it cannot parse (a plain Error or an ErrorResponse without code). */
const TOKEN_REFUSAL = /invalid continuation token|failed to parse continuation token/i;

function where(context: DurableErrorContext): string {
  return `${context.route}${context.instanceId !== undefined ? ` (instance '${context.instanceId}')` : ""}`;
}

/**
 * The answer for `error`; calls `onError` (message, error) for failures that are not the client's: a 500, and a
 * 503 when the store stayed busy past the SDK's own retries.
 */
export function durableErrorResponse(
  error: unknown,
  context: DurableErrorContext,
  onError?: (message: string, error: unknown) => void,
): DurableApiResponse {
  if (error instanceof TaskHubError) return problem(error.statusCode, error.code, error.message);

  const status = statusOf(error);
  const fromStore = isCosmosError(error);
  const what = fromStore ? `Cosmos DB refused the request: ${reasonOf(error)}` : reasonOf(error);

  if (context.continuationToken !== undefined && (status === 400 || TOKEN_REFUSAL.test(reasonOf(error)))) {
    return problem(
      400,
      "InvalidContinuationToken",
      `The x-ms-continuation-token header is not a continuation token of this task hub's list (${reasonOf(error)}). Send back only the token of the previous page, unchanged.`,
    );
  }
  switch (status) {
    case 400:
      return problem(400, "BadRequest", what);
    case 404:
      return problem(404, "NotFound", what);
    case 409:
      return problem(409, "Conflict", what);
    case 412:
      return problem(
        409,
        "ConcurrentChange",
        `The orchestration instance${context.instanceId !== undefined ? ` '${context.instanceId}'` : ""} changed concurrently; retry.`,
      );
    case 413:
      return problem(413, "PayloadTooLarge", what);
    case 429:
    case 503: {
      const seconds = retryAfterSeconds(error);
      onError?.(`The durable task hub is busy on ${where(context)}: ${reasonOf(error)}`, error);
      return problem(
        503,
        "ServiceBusy",
        `The task hub's Cosmos DB account is busy (${status}); retry after ${seconds} s.`,
        { "retry-after": String(seconds) },
      );
    }
  }
  // Another 4xx a refusal carries (410 Gone, 405 …) is the client's too.
  if (!fromStore && status !== undefined && status >= 400 && status < 500) {
    const code = (error as { code?: unknown }).code;
    return problem(status, typeof code === "string" ? code : "Refused", what);
  }
  onError?.(`The durable task hub failed on ${where(context)}: ${reasonOf(error)}`, error);
  return problem(
    500,
    "TaskHubFailure",
    `The durable task hub failed on ${where(context)}; the dev host log has the details.`,
  );
}
