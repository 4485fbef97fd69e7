import type { InvocationRequest, InvocationResponse, LogLevel } from "../coreTypes.js";
import type { AppIndex } from "../loader.js";

/**
 * The channel between the dev host and the app's worker process (Node's IPC channel, `serialization: "json"`, bytes
 * as base64: wire.ts).
 * It carries what the Functions host and the Node worker exchange over gRPC (FunctionLoadRequest/Response,
 * InvocationRequest/Response, RpcLog, WorkerTerminate), in the dev host's own small shapes.
 */
export type HostToWorker =
  /** Load the app (the worker's FunctionEnvironmentReload + FunctionsMetadataRequest in one). */
  | { kind: "load"; appDir: string }
  | { kind: "invoke"; functionName: string; request: InvocationRequest }
  /** Environment changes made by the host after the worker started (FunctionEnvironmentReloadRequest). */
  | { kind: "environment"; set: Record<string, string>; unset: string[] }
  /** Send the next piece of an invocation's HTTP response body (the host's reader wants more). */
  | { kind: "bodyPull"; invocationId: string }
  /** The host no longer wants that body (its client went away). */
  | { kind: "bodyCancel"; invocationId: string }
  /** Run appTerminate hooks and exit (WorkerTerminate). */
  | { kind: "terminate" };

export type WorkerToHost =
  /** The worker's own runtime is up and it starts loading the app now: the load's time bound starts here. */
  | { kind: "loading" }
  | { kind: "loaded"; index: AppIndex }
  | { kind: "loadFailed"; error: WireError }
  | { kind: "log"; level: LogLevel; category: string; message: string; invocationId?: string }
  | {
      kind: "result";
      invocationId: string;
      response?: InvocationResponse;
      /**
       * What the handler returned, as JSON gives it (see `resultCloned`); not sent for an HTTP function, whose
       * answer is `response`.
       */
      result?: unknown;
      /** False when the handler's result did not cross the channel (not JSON: a BigInt, a cycle …; or HTTP). */
      resultCloned?: boolean;
      /**
       * Whether the handler returned a value (neither undefined nor null), cloned or not: with HTTP streaming the
       * response then goes through the library's proxy, so the host waits for it to end.
       */
      returned?: boolean;
      error?: WireError;
      /**
       * The HTTP response body (returnValue.http.body) was left out: it has this many bytes and follows in
       * `bodyChunk` messages, one per `bodyPull`.
       */
      bodyBytes?: number;
    }
  /** A piece of a response body announced by `bodyBytes`; `last` ends it. */
  | { kind: "bodyChunk"; invocationId: string; chunk: Uint8Array; last: boolean }
  | { kind: "terminated" };

/** An error as it crosses the channel: the worker's RpcException (message, stack, type) plus a code when set. */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  /** The durable-functions library reads these on activity failures (e.g. a non-retriable marker). */
  isNonRetriable?: boolean;
}

export function toWireError(e: unknown): WireError {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return {
      name: e.name,
      message: e.message,
      ...(e.stack ? { stack: e.stack } : {}),
      ...(typeof code === "string" ? { code } : {}),
    };
  }
  return { name: "Error", message: typeof e === "string" ? e : safeString(e) };
}

/** Rebuilds an Error on the host's side with the worker's name, message and stack. */
export function fromWireError(w: WireError): Error {
  const e = new Error(w.message);
  e.name = w.name;
  e.stack = w.stack ?? `${w.name}: ${w.message}`;
  if (w.code !== undefined) Object.assign(e, { code: w.code });
  return e;
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
