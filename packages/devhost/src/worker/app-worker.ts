import type { Readable } from "node:stream";
import type { InvocationRequest, InvocationResponse } from "../coreTypes.js";

/** What one invocation in the worker gave back. */
export interface WorkerInvocationResult {
  /** The worker's response: output bindings and return value. */
  response: InvocationResponse;
  /** What the handler returned (after post-invocation hooks), as far as it crossed the channel. */
  result: unknown;
  /** Whether it returned a value at all (neither undefined nor null), even one that could not cross. */
  returned: boolean;
  /**
   * A large HTTP response body, left out of `response` and read from the worker piece by piece as this stream is
   * read (response-body.ts); its length in bytes is `bodyBytes`.
   */
  body?: { stream: Readable; bytes: number };
}

/**
 * The worker that runs the app's code, as the host sees its language worker channel: invocations in, results
 * and logs out. An invocation rejects with the handler's error, or with a WorkerExitedError when the process
 * died (or was recycled) while it ran.
 */
export interface AppWorker {
  /**
   * Invokes `functionName` in the worker; rejects with the handler's error, or WorkerExitedError when the
   * process died.
   */
  invoke(functionName: string, request: InvocationRequest): Promise<WorkerInvocationResult>;
  /**
   * Resolves once a worker process has loaded the app (at once when one has). Rejects with WorkerUnavailableError
   * when the load under way fails, or while the dev host waits (back-off) before the next attempt: an invocation then
   * never starts, and its functionTimeout never runs.
   */
  ready(): Promise<void>;
  /** Whether a worker process has the app loaded now: ready() would resolve at once (invocations skip the wait). */
  readonly loaded: boolean;
  /**
   * Kills the worker process and starts a new one (the host's answer to a function timeout): every invocation
   * still running in it fails; invocations sent meanwhile wait for the new process.
   */
  recycle(reason: string): void;
  /**
   * Sends the worker what changed in its environment since it started (the host points connections at the
   * emulator after the app is indexed); later worker processes start with it.
   */
  syncEnvironment(): void;
  /** appTerminate hooks, then the process exits (killed after a grace period). */
  close(): Promise<void>;
  /** The current process id (undefined between processes). */
  readonly pid: number | undefined;
}
