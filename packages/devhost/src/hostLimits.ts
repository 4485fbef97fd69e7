import type { ServerResponse } from "node:http";
import type { BindingInfo } from "./coreTypes.js";
import { durableLimitRefusal } from "./durable/client-refusal.js";
import { DevHostError } from "./errors.js";
import { sendProblem } from "./http/problem.js";
import { WorkerUnavailableError } from "./worker/unavailable.js";

/**
 * What this dev host cannot serve, said the same way at start (a warning per function, bindingCheck.ts) and on a
 * call (the 500's body): which binding, and that it is a limit of the dev host, not of the app or of Azure.
 */

export const UNSUPPORTED_BINDING = "UnsupportedBinding";

const LIMIT =
  "a limit of this dev host, not of the app or of Azure Functions: run the function under Azure Functions Core Tools (func start) to use it";

/** `'queue' output binding 'outQueue'` (the library names extra bindings after their type and a hash). */
export function describeBinding(name: string, binding: BindingInfo): string {
  const direction = binding.direction === "out" ? "output" : binding.direction === "in" ? "input" : "in/out";
  return `'${binding.type}' ${direction} binding '${name}'`;
}

/** The error a call fails with when it needs a binding the dev host has no extension for. */
export function unsupportedBindingError(
  functionName: string,
  name: string,
  binding: BindingInfo,
): DevHostError {
  return new DevHostError(
    `Function '${functionName}' uses the ${describeBinding(name, binding)}, which this dev host cannot serve (${LIMIT}).`,
    { code: UNSUPPORTED_BINDING, statusCode: 500 },
  );
}

/** The start-up warning for a function with bindings the dev host cannot serve (all of them, one line). */
export function unsupportedBindingsWarning(functionName: string, bindings: string[]): string {
  return `The '${functionName}' function uses ${bindings.join(", ")}, which this dev host cannot serve (${LIMIT}). Its other paths run; a call that needs one answers 500 naming it.`;
}

/**
 * The body of a failed call's 500 when the failure is a limit of the dev host (an unsupported binding, a durable
 * client call refused for a payload the extension would store: durable/client-refusal.ts); undefined
 * for the app's own failures, which the host answers with an empty 500 (the details are in the log under the
 * invocation id).
 */
export function devHostLimitMessage(error: unknown): string | undefined {
  const e = error as { code?: unknown; message?: unknown } | null | undefined;
  const message = typeof e?.message === "string" ? e.message : undefined;
  if (e?.code === UNSUPPORTED_BINDING && message) return message;
  return durableLimitRefusal(error);
}

/**
 * Answers a failed invocation: 503 (JSON, Retry-After) when no worker process has the app loaded, so nothing was
 * invoked; a 500 whose text body says which binding when the dev host is the limit; else an empty 500.
 */
export function answerInvocationFailure(res: ServerResponse, error: unknown): void {
  if (error instanceof WorkerUnavailableError) {
    sendProblem(res, 503, error.code, error.message, { "retry-after": String(error.retryAfterSeconds) });
    return;
  }
  const message = devHostLimitMessage(error);
  const body = message === undefined ? Buffer.alloc(0) : Buffer.from(`${message}\n`);
  const headers: Record<string, string> = { "content-length": String(body.length) };
  if (body.length > 0) headers["content-type"] = "text/plain; charset=utf-8";
  res.writeHead(500, headers);
  res.end(res.req?.method === "HEAD" ? undefined : body);
}
