import { randomBytes, randomUUID } from "node:crypto";
import type { InvocationRequest, InvocationResponse, ParameterBinding, TypedData } from "./coreTypes.js";
import { formatTimeSpan } from "./cosmos/retry.js";
import { applyOutputs, type BindingExtensions, collectExtraInputs } from "./extensions.js";
import { FunctionTimeoutError, withFunctionTimeout } from "./functionTimeout.js";
import type { LoadedApp, LoadedFunction } from "./loader.js";
import type { HostLogger } from "./logger.js";
import type { WorkerInvocationResult } from "./worker/app-worker.js";

/** Options of `invokeFunction`: why it is invoked and its data. */
export interface InvokeOptions {
  /** The host's wording, e.g. "This function was programmatically called via the host APIs." for HTTP. */
  reason: string;
  /** Trigger and input bindings in the worker's typed-data form, by binding name. */
  inputData: ParameterBinding[];
  /** Trigger metadata (values for binding expressions, `context.triggerMetadata`), typed-data form. */
  triggerMetadata?: Record<string, TypedData>;
  /** The retry attempt, when this invocation retries an earlier one. */
  retryContext?: InvocationRequest["retryContext"];
  /** The invocation's id (default: a new UUID). */
  invocationId?: string;
  /** Input/output bindings other than the trigger; none when absent (a function using one then fails). */
  extensions?: BindingExtensions;
  /** Values for binding expressions (`{id}`) in input bindings: route params, query, trigger properties. */
  bindingData?: Record<string, unknown>;
  /** The caller's W3C `traceparent` (an HTTP request's header), parent of the invocation's trace context. */
  traceParent?: string;
}

/** What an invocation came to: its id, duration, and its response or error. */
export interface InvocationOutcome {
  /** The invocation's id. */
  invocationId: string;
  /** How long it ran (ms). */
  durationMs: number;
  /** Set when the invocation succeeded: return value and output bindings in typed-data form. */
  response?: InvocationResponse;
  /** Set when a hook, the handler or the output conversion threw. */
  error?: unknown;
  /** What the handler returned (after post-invocation hooks), before conversion, when it crossed from the worker. */
  result?: unknown;
  /** Whether the handler returned a value (neither undefined nor null), even one that could not cross (a stream). */
  returned?: boolean;
  /** A large HTTP response body, left out of `response`: read it (or destroy it) — see worker/response-body.ts. */
  body?: WorkerInvocationResult["body"];
}

/** The reason the host gives the worker for an HTTP invocation (the Functions host's wording). */
export const HTTP_REASON = "This function was programmatically called via the host APIs.";

/**
 * Invokes one function as the host does: the extra input bindings read, the invocation sent to the app's worker
 * process (which runs it through the programming model: worker/run-invocation.ts), the output bindings written,
 * all within host.json's functionTimeout. Logs the host's Executing/Executed lines. Never throws: a failure comes
 * back as `error`.
 */
export async function invokeFunction(
  app: LoadedApp,
  fn: LoadedFunction,
  logger: HostLogger,
  options: InvokeOptions,
): Promise<InvocationOutcome> {
  const invocationId = options.invocationId ?? randomUUID();
  const name = fn.metadata.name;
  // Loading is not an invocation: a worker process still loading the app is waited for before functionTimeout
  // starts, and one that failed to load (WorkerUnavailableError: HTTP 503) means this invocation never starts.
  try {
    if (!app.worker.loaded) await app.worker.ready();
  } catch (error) {
    return { invocationId, durationMs: 0, error };
  }
  const started = performance.now();
  logger.log(
    "information",
    `Executing 'Functions.${name}' (Reason='${options.reason}', Id=${invocationId})`,
    {
      category: `Function.${name}`,
      invocationId,
    },
  );
  let response: InvocationResponse | undefined;
  let result: unknown;
  let returned: boolean | undefined;
  let body: InvocationOutcome["body"];
  let error: unknown;
  try {
    const timeoutMs = app.config.functionTimeoutMs;
    ({ response, result, returned, body } = await withFunctionTimeout(
      runInWorker(app, fn, invocationId, options),
      name,
      timeoutMs,
      () =>
        logger.log(
          "error",
          `Timeout value of ${formatTimeSpan(timeoutMs ?? 0)} exceeded by function 'Functions.${name}' (Id: '${invocationId}'). Initiating cancellation.`,
          { category: `Function.${name}`, invocationId },
        ),
      app.clock,
    ));
  } catch (e) {
    error = e;
  }
  const durationMs = Math.round(performance.now() - started);
  if (error !== undefined) {
    const err = error as Error;
    logger.log(
      "error",
      `Exception while executing function: Functions.${name}. Result: Failure\nException: ${err?.message ?? String(error)}\nStack: ${err?.stack ?? ""}`,
      { category: `Function.${name}`, invocationId },
    );
  }
  logger.log(
    error === undefined ? "information" : "error",
    `Executed 'Functions.${name}' (${error === undefined ? "Succeeded" : "Failed"}, Id=${invocationId}, Duration=${durationMs}ms)`,
    { category: `Function.${name}`, invocationId },
  );
  // The host's answer to a handler that outlived functionTimeout: a new worker process (the old one, and whatever
  // else ran in it, goes).
  if (error instanceof FunctionTimeoutError) app.worker.recycle("A function timeout has occurred.");
  return { invocationId, durationMs, response, result, returned, error, ...(body ? { body } : {}) };
}

const NO_INPUTS: ParameterBinding[] = [];

/** Whether the function has input bindings besides its trigger (most have none: nothing to read, no promise). */
function hasExtraInputs(fn: LoadedFunction): boolean {
  for (const [name, binding] of Object.entries(fn.bindings))
    if (name !== fn.triggerName && binding.direction === "in") return true;
  return false;
}

/** Whether applyOutputs has anything to write: output data, or a `$return` that is not the HTTP response. */
function hasOutputs(fn: LoadedFunction, response: InvocationResponse): boolean {
  if ((response.outputData?.length ?? 0) > 0) return true;
  const ret = fn.bindings.$return;
  return ret !== undefined && ret.type.toLowerCase() !== "http" && response.returnValue !== undefined;
}

async function runInWorker(
  app: LoadedApp,
  fn: LoadedFunction,
  invocationId: string,
  options: InvokeOptions,
): Promise<WorkerInvocationResult> {
  const extensions = options.extensions ?? {};
  // Input bindings other than the trigger are read by the host, as the extensions do, and sent as typed data.
  const extraInputs = hasExtraInputs(fn)
    ? await collectExtraInputs(fn, extensions, options.bindingData ?? {})
    : NO_INPUTS;
  const answer = await app.worker.invoke(fn.metadata.name, {
    invocationId,
    inputData: [...options.inputData, ...extraInputs],
    triggerMetadata: options.triggerMetadata ?? {},
    retryContext: options.retryContext,
    traceContext: traceContextFor(options.traceParent),
  });
  try {
    if (hasOutputs(fn, answer.response)) await applyOutputs(fn, extensions, answer.response);
  } catch (e) {
    answer.body?.stream.destroy(); // never to be sent: the worker lets go of it
    throw e;
  }
  return answer;
}

/**
 * The RpcTraceContext the host sends with every invocation (GetRpcTraceContext): the invocation's activity as a W3C
 * traceparent — a child of the caller's when an HTTP request brought a valid `traceparent` — and no state.
 */
export function traceContextFor(parent?: string): NonNullable<InvocationRequest["traceContext"]> {
  const valid = parent !== undefined && /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(parent);
  const traceId = valid && !/^00-0{32}-/.test(parent) ? parent.slice(3, 35) : randomHex(16);
  const flags = valid ? parent.slice(53, 55) : "00";
  return {
    traceParent: `00-${traceId}-${randomHex(8)}-${flags}`,
    traceState: "",
    attributes: {},
  };
}

/** Random ids for trace contexts, drawn from a pooled buffer (one randomBytes call per 4 KiB, not two per invocation). */
const pool = { bytes: Buffer.alloc(0), at: 0 };
function randomHex(length: number): string {
  if (pool.at + length > pool.bytes.length) {
    pool.bytes = randomBytes(4096);
    pool.at = 0;
  }
  pool.at += length;
  return pool.bytes.toString("hex", pool.at - length, pool.at);
}
