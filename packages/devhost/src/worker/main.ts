import inspector from "node:inspector";
import type { LogLevel } from "../coreTypes.js";
import { type LocalApp, type LocalFunction, loadApp } from "../loader.js";
import { HostLogger } from "../logger.js";
import { type HostToWorker, toWireError, type WorkerToHost } from "./protocol.js";
import { PendingBodies } from "./response-body.js";
import { runInvocation } from "./run-invocation.js";
import { readWorkerSettings } from "./settings.js";
import { guardStreamProxy, type StreamProxyGuard } from "./stream-proxy-guard.js";
import { hostMessageFromWire, workerMessageToWire } from "./wire.js";

const HTTP_TRIGGER = /^httptrigger$/i;

/** The Node worker's line for an uncaught exception (its src/Worker.ts), before it exits with code 1. */
export const UNCAUGHT_PREFIX =
  "Worker uncaught exception (learn more: https://go.microsoft.com/fwlink/?linkid=2097909 ): ";

/**
 * Ends the worker process. With a debugger attached (languageWorkers__node__arguments=--inspect), node would hold
 * the process at exit until the debugger disconnects ("Waiting for the debugger to disconnect..."): its
 * connections are closed first, so the process ends now and the next worker's inspector can bind the same port.
 */
function exitWorker(code: number): never {
  if (inspector.url()) inspector.close();
  process.exit(code);
}

function send(message: WorkerToHost, then?: () => void): void {
  if (!process.connected) {
    then?.();
    return;
  }
  process.send?.(workerMessageToWire(message), undefined, {}, () => then?.());
}

function log(level: LogLevel, message: string, category: string, invocationId?: string): void {
  send({ kind: "log", level, message, category, ...(invocationId ? { invocationId } : {}) });
}

/**
 * The worker process: loads the app when the host says so, runs invocations, and exits after appTerminate hooks.
 * As the Node worker does, an uncaught exception or unhandled rejection is logged and ends the process (exit
 * code 1); the host then fails what was running and starts a new worker.
 */
export function runWorker(importModule: (url: string) => Promise<unknown>): void {
  let app: LocalApp | undefined;
  let streams: StreamProxyGuard | undefined;
  const byName = new Map<string, LocalFunction>();
  let dying = false;
  const bodies = new PendingBodies(readWorkerSettings().responseChunkBytes);

  const die = (e: unknown) => {
    if (dying) return;
    dying = true;
    const err = e as Error;
    log("error", `${UNCAUGHT_PREFIX}${err?.stack ?? String(e)}`, "Worker");
    // The log must reach the host before the process goes; a stuck channel does not keep it alive.
    const exit = () => exitWorker(1);
    send({ kind: "log", level: "error", category: "Worker", message: "Worker exiting." }, exit);
    setTimeout(exit, 1000).unref();
  };
  process.on("uncaughtException", die);
  process.on("unhandledRejection", die);
  // The host went away (killed, crashed): a worker never outlives its host.
  process.on("disconnect", () => exitWorker(0));
  // A terminal's Ctrl-C reaches the whole process group, this worker included: the host decides when it ends (a
  // graceful stop sends `terminate` after in-flight invocations finished), so the signals are not the worker's.
  process.on("SIGINT", () => {});
  process.on("SIGTERM", () => {});

  const logger = new HostLogger({
    minLevel: "trace", // the host applies host.json's levels
    sink: (r) => log(r.level, r.message, r.category, r.invocationId),
  });

  process.on("message", (wire: HostToWorker) => {
    const message = hostMessageFromWire(wire);
    switch (message.kind) {
      case "load":
        send({ kind: "loading" });
        void load(message.appDir);
        return;
      case "invoke":
        void invoke(message.functionName, message.request);
        return;
      case "environment":
        for (const [k, v] of Object.entries(message.set)) process.env[k] = v;
        for (const k of message.unset) delete process.env[k];
        return;
      case "bodyPull": {
        const piece = bodies.next(message.invocationId);
        if (piece) send({ kind: "bodyChunk", invocationId: message.invocationId, ...piece });
        return;
      }
      case "bodyCancel":
        bodies.cancel(message.invocationId);
        return;
      case "terminate":
        void terminate();
        return;
    }
  });

  async function load(appDir: string) {
    try {
      const guard = guardStreamProxy(readWorkerSettings().streamProxyWaitMs);
      streams = guard;
      app = await loadApp(appDir, {
        logger,
        env: process.env,
        importModule,
        aroundCapabilities: (step) => guard.watch(step),
      });
      for (const fn of app.functions) byName.set(fn.metadata.name, fn);
      // The index crosses as JSON, as the worker's RpcFunctionMetadata carries raw bindings as JSON strings.
      const index = JSON.parse(
        JSON.stringify({
          functions: app.functions.map(({ metadata, triggerName, trigger, bindings }) => ({
            metadata,
            triggerName,
            trigger,
            bindings,
          })),
          functionErrors: app.functionErrors,
          entryPoints: app.entryPoints,
          appliedSettings: app.appliedSettings,
          durableHubName: app.durableHubName,
          capabilities: app.capabilities,
        }),
      );
      send({ kind: "loaded", index });
    } catch (e) {
      send({ kind: "loadFailed", error: toWireError(e) }, () => exitWorker(1));
    }
  }

  async function invoke(functionName: string, request: Parameters<typeof runInvocation>[2]) {
    const invocationId = request.invocationId;
    const fn = byName.get(functionName);
    if (!app || !fn) {
      const error = new Error(`The worker has no function '${functionName}'.`);
      send({ kind: "result", invocationId, error: toWireError(error) });
      return;
    }
    const http = HTTP_TRIGGER.test(fn.trigger.type);
    if (http) streams?.expect(invocationId);
    try {
      const { response, result } = await runInvocation(app, fn, request, (level, message, category) =>
        log(level, message, category, invocationId),
      );
      const returned = result !== undefined && result !== null;
      const bodyBytes = bodies.holdBack(invocationId, response);
      if (bodyBytes !== undefined) {
        // The handler's result holds the same body: only the response (without it) crosses now, the body in pieces.
        send({ kind: "result", invocationId, response, resultCloned: false, returned, bodyBytes });
        return;
      }
      // An HTTP function's answer is its response; what the handler returned matters to the host only elsewhere
      // (durable functions' outputs): so it crosses only there.
      if (http) {
        send({ kind: "result", invocationId, response, resultCloned: false, returned });
        return;
      }
      try {
        send({ kind: "result", invocationId, response, result, resultCloned: true, returned });
      } catch {
        // What the handler returned is not JSON (a BigInt, a cycle …): the response still crosses.
        send({ kind: "result", invocationId, response, resultCloned: false, returned });
      }
    } catch (e) {
      send({ kind: "result", invocationId, error: toWireError(e) });
    } finally {
      streams?.forget(invocationId);
    }
  }

  async function terminate() {
    try {
      if (app) {
        await app.registry.runHooks("appTerminate", {
          hookData: app.registry.appLevelOnlyHookData,
          appHookData: app.registry.appHookData,
        });
      }
    } catch (e) {
      log("error", `An appTerminate hook failed: ${(e as Error)?.stack ?? String(e)}`, "Worker");
    }
    send({ kind: "terminated" }, () => exitWorker(0));
  }
}
