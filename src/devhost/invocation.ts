import { randomUUID } from "node:crypto";
import type {
  CoreInvocationContext,
  InvocationRequest,
  InvocationResponse,
  InvocationState,
  ParameterBinding,
  TypedData,
} from "./coreTypes.js";
import { formatTimeSpan } from "./cosmos/retry.js";
import { applyOutputs, type BindingExtensions, collectExtraInputs } from "./extensions.js";
import { FunctionTimeoutError, withFunctionTimeout } from "./functionTimeout.js";
import type { LoadedApp, LoadedFunction } from "./loader.js";
import type { HostLogger } from "./logger.js";

export interface InvokeOptions {
  /** The host's wording, e.g. "This function was programmatically called via the host APIs." for HTTP. */
  reason: string;
  /** Trigger and input bindings in the worker's typed-data form, by binding name. */
  inputData: ParameterBinding[];
  triggerMetadata?: Record<string, TypedData>;
  retryContext?: InvocationRequest["retryContext"];
  invocationId?: string;
  /** Input/output bindings other than the trigger; none when absent (a function using one then fails). */
  extensions?: BindingExtensions;
  /** Values for binding expressions (`{id}`) in input bindings: route params, query, trigger properties. */
  bindingData?: Record<string, unknown>;
}

export interface InvocationOutcome {
  invocationId: string;
  durationMs: number;
  /** Set when the invocation succeeded: return value and output bindings in typed-data form. */
  response?: InvocationResponse;
  /** Set when a hook, the handler or the output conversion threw. */
  error?: unknown;
  /** What the handler returned (after post-invocation hooks), before conversion. */
  result?: unknown;
}

export const HTTP_REASON = "This function was programmatically called via the host APIs.";

/**
 * Invokes one function the way the worker's InvocationHandler does: the programming model's invocation model
 * builds the arguments (typed data → HttpRequest, documents …), pre-invocation hooks may swap inputs and the
 * handler, the handler runs, post-invocation hooks see result or error, the model converts the result. Logs
 * the host's Executing/Executed lines. Never throws: a failure comes back as `error`.
 */
export async function invokeFunction(
  app: LoadedApp,
  fn: LoadedFunction,
  logger: HostLogger,
  options: InvokeOptions,
): Promise<InvocationOutcome> {
  const invocationId = options.invocationId ?? randomUUID();
  const name = fn.metadata.name;
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
  let error: unknown;
  try {
    const timeoutMs = app.config.functionTimeoutMs;
    ({ response, result } = await withFunctionTimeout(
      runThroughModel(app, fn, logger, invocationId, options),
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
  if (error instanceof FunctionTimeoutError) {
    // The host restarts the worker process here; the dev host runs the app in its own process and cannot.
    logger.log(
      "warning",
      `A function timeout has occurred. The dev host does not restart the worker (the app runs in its process): the handler of invocation '${invocationId}' may still be running.`,
      { category: `Function.${name}`, invocationId },
    );
  }
  return { invocationId, durationMs, response, result, error };
}

async function runThroughModel(
  app: LoadedApp,
  fn: LoadedFunction,
  logger: HostLogger,
  invocationId: string,
  options: InvokeOptions,
): Promise<{ response: InvocationResponse; result: unknown }> {
  const name = fn.metadata.name;
  const extensions = options.extensions ?? {};
  const extraInputs = await collectExtraInputs(fn, extensions, options.bindingData ?? {});
  let invocationContext: object | undefined; // for log hooks, once the model has built it
  const coreCtx: CoreInvocationContext = {
    invocationId,
    request: {
      invocationId,
      inputData: [...options.inputData, ...extraInputs],
      triggerMetadata: options.triggerMetadata ?? {},
      retryContext: options.retryContext,
    },
    metadata: fn.metadata,
    state: undefined as InvocationState,
    log(level, category, message) {
      const entry = app.registry.applyLogHooks({ level, category, message, invocationContext });
      logger.log(entry.level, entry.message, {
        category: category === "user" ? `Function.${name}.User` : `Function.${name}`,
        invocationId,
      });
    },
  };
  const registry = app.registry;
  const model = await app.programmingModel.getInvocationModel(coreCtx);
  const { context, inputs } = await model.getArguments();
  invocationContext = context;
  const hookData: Record<string, unknown> = {};
  const pre = {
    hookData,
    appHookData: registry.appHookData,
    invocationContext: context,
    functionCallback: fn.callback,
    inputs,
  };
  coreCtx.state = "preInvocationHooks";
  try {
    await registry.runHooks("preInvocation", pre);
  } finally {
    coreCtx.state = undefined;
  }
  const post = {
    hookData,
    appHookData: registry.appHookData,
    invocationContext: context,
    inputs: pre.inputs,
    result: null as unknown,
    error: null as unknown,
  };
  coreCtx.state = "invocation";
  try {
    post.result = await model.invokeFunction(context, pre.inputs, pre.functionCallback);
  } catch (e) {
    post.error = e;
  } finally {
    coreCtx.state = undefined;
  }
  coreCtx.state = "postInvocationHooks";
  try {
    await registry.runHooks("postInvocation", post);
  } finally {
    coreCtx.state = undefined;
  }
  // A post hook may clear the error (and set a result) as with the worker.
  if (post.error !== null && post.error !== undefined) throw post.error;
  const response = await model.getResponse(context, post.result);
  await applyOutputs(fn, extensions, response);
  return { response, result: post.result };
}
