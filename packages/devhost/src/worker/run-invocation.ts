import type {
  CoreInvocationContext,
  InvocationRequest,
  InvocationResponse,
  InvocationState,
  LogLevel,
} from "../coreTypes.js";
import type { LocalApp, LocalFunction } from "../loader.js";

/** Where an invocation's log lines go: level, message and the host's category for them. */
export type InvocationLog = (level: LogLevel, message: string, category: string) => void;

/**
 * Runs one invocation the way the worker's InvocationHandler does: the programming model's invocation model
 * builds the arguments (typed data → HttpRequest, documents …), pre-invocation hooks may swap inputs and the
 * handler, the handler runs, post-invocation hooks see result or error, the model converts the result. Throws
 * what the handler (or a hook) threw, after the post-invocation hooks had their say.
 */
export async function runInvocation(
  app: LocalApp,
  fn: LocalFunction,
  request: InvocationRequest,
  log: InvocationLog,
): Promise<{ response: InvocationResponse; result: unknown }> {
  const name = fn.metadata.name;
  const registry = app.registry;
  let invocationContext: object | undefined; // for log hooks, once the model has built it
  const coreCtx: CoreInvocationContext = {
    invocationId: request.invocationId,
    request,
    metadata: fn.metadata,
    state: undefined as InvocationState,
    log(level, category, message) {
      const entry = registry.applyLogHooks({ level, category, message, invocationContext });
      log(entry.level, entry.message, category === "user" ? `Function.${name}.User` : `Function.${name}`);
    },
  };
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
  return { response, result: post.result };
}
