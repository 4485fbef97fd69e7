import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DevHostError } from "../errors.js";
import type { AppIndex } from "../loader.js";
import { logWorkerConsole } from "./console-lines.js";
import type { ProcessWorkerOptions } from "./process-worker.js";
import { fromWireError, type WorkerToHost } from "./protocol.js";
import { hostMessageToWire, workerMessageFromWire } from "./wire.js";

// From the TypeScript sources the worker registers tsx for its own code first (entry.mjs); compiled, it is plain
// JavaScript (compiled-entry.js, beside this file in dist/).
const ENTRY = fileURLToPath(
  new URL(import.meta.url.endsWith(".ts") ? "./entry.mjs" : "./compiled-entry.js", import.meta.url),
);

/**
 * The worker's environment. From the TypeScript sources, the dev host (and the tests that start it) resolve the
 * workspace packages to their sources — the "source" condition in NODE_OPTIONS (docs/packages.md) — which only a
 * process with tsx's loader can import. The app is imported by node itself (entry.mjs), as the Functions host's Node
 * worker does: so the worker resolves the packages as the deployed app does, to their compiled dist/.
 */
export function workerEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const options = env.NODE_OPTIONS;
  if (!import.meta.url.endsWith(".ts") || !options?.includes("--conditions=source")) return env;
  return { ...env, NODE_OPTIONS: options.replace(/(^|\s)--conditions=source(?=\s|$)/g, " ").trim() };
}

/**
 * Spawns one worker process (`node <nodeArgs> entry.mjs`, node's arguments before the entry file as the host puts
 * them before the worker's) and loads the app in it. `onExit` hears every exit of that process, even one before
 * the load finished (then the returned promise rejects too).
 */
export function spawnWorker(
  o: ProcessWorkerOptions,
  env: NodeJS.ProcessEnv,
  nodeArgs: { args: string[]; spawned(child: ChildProcess): void },
  onExit: (child: ChildProcess, code: number | null, signal: NodeJS.Signals | null) => void,
  onSpawned?: (child: ChildProcess) => void,
  onResult?: (child: ChildProcess, m: Extract<WorkerToHost, { kind: "result" | "bodyChunk" }>) => void,
): Promise<{ child: ChildProcess; index: AppIndex }> {
  const child = spawn(process.execPath, [...nodeArgs.args, ENTRY], {
    cwd: o.appDir,
    env: workerEnv(env),
    stdio: ["ignore", "pipe", "pipe", "ipc"],
    serialization: "json", // wire.ts says why; bytes cross as base64
  });
  nodeArgs.spawned(child);
  onSpawned?.(child);
  logWorkerConsole(child, o.logger);
  return new Promise((resolve, reject) => {
    let loaded = false;
    let timedOut = false;
    const loadTimeoutMs = o.settings.loadTimeoutMs;
    // Loading is not an invocation: it has a bound of its own, and past it the process is killed (the exit below
    // then rejects, and the caller's back-off decides when the next attempt starts). The bound starts when the
    // worker says it begins loading the app, so the worker's own start (its runtime, a transpiler on a busy
    // machine) is not counted against the app.
    // Under a debugger (node's --inspect arguments) a load may stand on a breakpoint for as long as the user looks:
    // it is not timed then.
    const debugging = nodeArgs.args.some((a) => a.startsWith("--inspect"));
    let loadTimer: NodeJS.Timeout | undefined;
    const startLoadTimer = () => {
      if (loadTimer || loaded || debugging) return;
      loadTimer = setTimeout(() => {
        timedOut = true;
        o.logger.error(
          `The worker process (pid ${child.pid}) did not load the app within ${loadTimeoutMs} ms (DEVHOST_WORKER_LOAD_TIMEOUT_MS); stopping it.`,
        );
        child.kill("SIGKILL");
      }, loadTimeoutMs);
      loadTimer.unref();
    };
    child.once("exit", (code, signal) => {
      clearTimeout(loadTimer);
      if (!loaded) {
        reject(
          new DevHostError(
            timedOut
              ? `The worker process did not load the app within ${loadTimeoutMs} ms (DEVHOST_WORKER_LOAD_TIMEOUT_MS).`
              : `The worker process exited with ${signal ?? `code ${code}`} before the app loaded.`,
            { code: timedOut ? "AppLoadTimeout" : "AppLoad" },
          ),
        );
      }
      onExit(child, code, signal);
    });
    child.once("error", (e) => {
      if (!loaded)
        reject(new DevHostError(`The worker process could not start: ${e.message}`, { code: "AppLoad" }));
    });
    // One dispatcher for everything the worker sends: logs, the load's answer, invocation results.
    child.on("message", (wire: WorkerToHost) => {
      const m = workerMessageFromWire(wire);
      switch (m.kind) {
        case "loading":
          startLoadTimer();
          return;
        case "log":
          o.logger.log(m.level, m.message, { category: m.category, invocationId: m.invocationId });
          return;
        case "loaded":
          loaded = true;
          clearTimeout(loadTimer);
          resolve({ child, index: m.index });
          return;
        case "loadFailed": {
          loaded = true; // the process exits next; the load error is the one to report
          clearTimeout(loadTimer);
          const e = fromWireError(m.error);
          reject(new DevHostError(e.message, { code: m.error.code ?? "AppLoad", cause: e }));
          return;
        }
        case "result":
        case "bodyChunk":
          onResult?.(child, m);
          return;
      }
    });
    child.send(hostMessageToWire({ kind: "load", appDir: o.appDir }));
  });
}
