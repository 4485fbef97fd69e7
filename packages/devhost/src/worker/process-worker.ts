import type { ChildProcess } from "node:child_process";
import type { InvocationRequest } from "../coreTypes.js";
import { DevHostError } from "../errors.js";
import type { AppIndex } from "../loader.js";
import type { HostLogger } from "../logger.js";
import type { AppWorker, WorkerInvocationResult } from "./app-worker.js";
import { nodeArgumentsOnceFree } from "./inspector-port.js";
import { workerNodeArguments } from "./node-arguments.js";
import { fromWireError, type HostToWorker, type WorkerToHost } from "./protocol.js";
import { PulledBody } from "./response-body.js";
import type { WorkerSettings } from "./settings.js";
import { spawnWorker } from "./spawn-worker.js";
import { WorkerUnavailableError } from "./unavailable.js";
import { hostMessageToWire } from "./wire.js";

/** An invocation failed because its worker process exited (crashed, or was recycled after a timeout). */
export class WorkerExitedError extends DevHostError {
  constructor(message: string) {
    super(message, { code: "WorkerExited" });
    this.name = "WorkerExitedError";
  }
}

export interface ProcessWorkerOptions {
  appDir: string;
  /** The worker's whole environment (the host's, the app settings, the host's own variables), read at each start. */
  env: () => NodeJS.ProcessEnv;
  logger: HostLogger;
  settings: WorkerSettings;
  /** `cosmos-feed start --inspect[=[host:]port]`: the worker's debugger, over languageWorkers__node__arguments. */
  inspect?: string | true;
}

interface Pending {
  child: ChildProcess;
  resolve(result: WorkerInvocationResult): void;
  reject(error: unknown): void;
}

/**
 * The app in a process of its own, as the Functions host runs the Node worker: started with the app folder as its
 * working directory and the app settings in its environment, restarted when it dies (with back-off while it keeps
 * dying), recycled after a function timeout. An invocation running in a process that dies fails with
 * WorkerExitedError; the dev host and every other function keep running.
 */
export class ProcessWorker implements AppWorker {
  readonly #o: ProcessWorkerOptions;
  #child: ChildProcess | undefined;
  #ready: Promise<ChildProcess>;
  /** The process that has the app loaded, while it runs (what #ready resolved to): invocations go to it at once. */
  #loaded: ChildProcess | undefined;
  readonly #pending = new Map<string, Pending>();
  /** Response bodies being pulled from a worker process, by invocation id. */
  readonly #bodies = new Map<string, { child: ChildProcess; stream: PulledBody }>();
  #bodyPieces = 0;
  /** Unexpected exits since an invocation last completed. */
  #crashes = 0;
  #recycling = false;
  /** The process loading the app, while it does. */
  #loading: ChildProcess | undefined;
  #closing = false;
  #restartTimer: NodeJS.Timeout | undefined;
  #exited: Promise<void> = Promise.resolve();
  /** Why the last load attempt failed, until one succeeds. */
  #loadFailure: string | undefined;
  /** When the next start is due (Date.now()), while it waits out the back-off. */
  #nextStartAt = 0;
  /** The environment the current process has (what it started with, plus what was synced since). */
  #sentEnv: NodeJS.ProcessEnv;

  private constructor(options: ProcessWorkerOptions, first: { child: ChildProcess; env: NodeJS.ProcessEnv }) {
    this.#o = options;
    this.#child = first.child;
    this.#sentEnv = first.env;
    this.#ready = Promise.resolve(first.child);
    this.#loaded = first.child;
  }

  /** Starts the first worker process and waits until the app loaded in it (its load error rejects). */
  static async start(options: ProcessWorkerOptions): Promise<{ worker: ProcessWorker; index: AppIndex }> {
    let worker: ProcessWorker | undefined;
    const env = options.env();
    const node = workerNodeArguments(env, options.inspect);
    if (node)
      options.logger.info(
        `The worker process starts with node arguments '${node.args.join(" ")}' (${node.source}).`,
      );
    const { child, index } = await spawnWorker(
      options,
      env,
      await nodeArgumentsOnceFree(options, env),
      (child, code, signal) => {
        if (worker) worker.#onExit(child, code, signal);
      },
      undefined,
      (child, m) => {
        if (worker) worker.#onMessage(child, m);
      },
    );
    worker = new ProcessWorker(options, { child, env });
    worker.#watch(child);
    return { worker, index };
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get loaded(): boolean {
    return this.#loaded !== undefined;
  }

  async ready(): Promise<void> {
    const waitMs = this.#nextStartAt - Date.now();
    // Waiting out the back-off after a failed load: say so at once, with when the next attempt starts.
    if (this.#loadFailure !== undefined && waitMs > 0)
      throw new WorkerUnavailableError(this.#loadFailure, waitMs);
    await this.#ready;
  }

  async invoke(functionName: string, request: InvocationRequest): Promise<WorkerInvocationResult> {
    // Loaded (nearly always): no promise to wait on before the invocation is sent.
    let child = this.#loaded;
    if (!child) {
      await this.ready();
      child = await this.#ready;
    }
    const to = child;
    return new Promise<WorkerInvocationResult>((resolve, reject) => {
      const id = request.invocationId;
      this.#pending.set(id, { child: to, resolve, reject });
      const message: HostToWorker = { kind: "invoke", functionName, request };
      const failed = (e: unknown) => {
        if (this.#pending.get(id)?.child !== to) return;
        this.#pending.delete(id);
        reject(
          new WorkerExitedError(
            `The invocation could not be sent to the worker process: ${(e as Error).message}`,
          ),
        );
      };
      try {
        to.send(hostMessageToWire(message), (e) => e && failed(e));
      } catch (e) {
        failed(e);
      }
    });
  }

  syncEnvironment(): void {
    const now = this.#o.env();
    const set: Record<string, string> = {};
    for (const [k, v] of Object.entries(now)) if (v !== undefined && this.#sentEnv[k] !== v) set[k] = v;
    const unset = Object.keys(this.#sentEnv).filter((k) => now[k] === undefined);
    this.#sentEnv = { ...now };
    if (Object.keys(set).length === 0 && unset.length === 0) return;
    try {
      this.#child?.send(hostMessageToWire({ kind: "environment", set, unset }));
    } catch {
      // A process that is gone gets the whole environment when the next one starts.
    }
  }

  recycle(reason: string): void {
    const child = this.#child;
    // A process still loading runs no invocation: killing it would only start the load over.
    if (!child || this.#closing || this.#recycling || this.#loading === child) return;
    this.#recycling = true;
    this.#o.logger.warn(`${reason} Restarting the worker process (pid ${child.pid}).`);
    child.kill("SIGKILL");
  }

  async close(): Promise<void> {
    if (this.#closing) return this.#exited;
    this.#closing = true;
    clearTimeout(this.#restartTimer);
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const kill = setTimeout(() => child.kill("SIGKILL"), this.#o.settings.stopGraceMs);
    try {
      child.send(hostMessageToWire({ kind: "terminate" }));
    } catch {
      child.kill("SIGKILL");
    }
    await this.#exited;
    clearTimeout(kill);
  }

  #watch(child: ChildProcess): void {
    this.#exited = new Promise((resolve) => child.once("exit", () => resolve()));
  }

  /** An invocation's answer or a piece of its body from `child` (spawnWorker's one message dispatcher routes here). */
  #onMessage(child: ChildProcess, m: Extract<WorkerToHost, { kind: "result" | "bodyChunk" }>): void {
    if (m.kind === "result") this.#onResult(child, m);
    else this.#onBodyChunk(child, m);
  }

  /** An invocation's answer from `child`. */
  #onResult(child: ChildProcess, m: Extract<WorkerToHost, { kind: "result" }>): void {
    const pending = this.#pending.get(m.invocationId);
    if (!pending || pending.child !== child) return;
    this.#pending.delete(m.invocationId);
    this.#crashes = 0;
    if (m.error) pending.reject(fromWireError(m.error));
    else if (m.response)
      pending.resolve({
        response: m.response,
        result: m.resultCloned ? m.result : undefined,
        returned: m.returned ?? (m.result !== undefined && m.result !== null),
        ...(m.bodyBytes !== undefined ? { body: this.#pullBody(child, m.invocationId, m.bodyBytes) } : {}),
      });
    else pending.reject(new Error("The worker answered an invocation with neither a response nor an error."));
  }

  /** A response body the worker holds back, as a stream that pulls its pieces (response-body.ts). */
  #pullBody(child: ChildProcess, invocationId: string, bytes: number): { stream: PulledBody; bytes: number } {
    const tell = (message: HostToWorker) => {
      try {
        child.send(hostMessageToWire(message));
      } catch {
        // The process is gone: the stream fails on its exit.
      }
    };
    const stream = new PulledBody(
      () => tell({ kind: "bodyPull", invocationId }),
      () => {
        this.#bodies.delete(invocationId);
        tell({ kind: "bodyCancel", invocationId });
      },
    );
    this.#bodies.set(invocationId, { child, stream });
    stream.once("end", () => this.#bodies.delete(invocationId));
    return { stream, bytes };
  }

  /** A piece of a held-back body from `child` (spawnWorker's dispatcher routes it here). */
  #onBodyChunk(child: ChildProcess, m: Extract<WorkerToHost, { kind: "bodyChunk" }>): void {
    const body = this.#bodies.get(m.invocationId);
    if (!body || body.child !== child) return;
    this.#bodyPieces++;
    body.stream.deliver(m.chunk, m.last);
  }

  /** Pieces of held-back response bodies received so far (diagnostics and tests). */
  get bodyPiecesReceived(): number {
    return this.#bodyPieces;
  }

  #onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    for (const [id, body] of this.#bodies) {
      if (body.child !== child) continue;
      this.#bodies.delete(id);
      body.stream.destroy(new WorkerExitedError(`The worker process exited while sending a response body.`));
    }
    if (child === this.#loaded) this.#loaded = undefined;
    if (child !== this.#child) return;
    this.#child = undefined;
    const how = signal ? `signal ${signal}` : `code ${code} (0x${(code ?? 0).toString(16).toUpperCase()})`;
    const running = [...this.#pending].filter(([, p]) => p.child === child);
    for (const [id, p] of running) {
      this.#pending.delete(id);
      p.reject(
        new WorkerExitedError(
          `The worker process (pid ${child.pid}) exited with ${how} while invocation '${id}' was running in it.`,
        ),
      );
    }
    if (this.#closing) return;
    const recycled = this.#recycling;
    this.#recycling = false;
    if (!recycled) {
      this.#crashes += 1;
      this.#o.logger.error(`Language Worker Process exited. Pid=${child.pid}. node exited with ${how}.`);
    }
    const { restartBackoffMs: base, restartBackoffMaxMs: max } = this.#o.settings;
    const delay = recycled || this.#crashes <= 1 ? 0 : Math.min(max, base * 2 ** (this.#crashes - 2));
    this.#nextStartAt = Date.now() + delay;
    if (delay > 0)
      this.#o.logger.warn(`The worker process keeps exiting: the next one starts in ${delay} ms.`);
    this.#ready = this.#restart(delay);
    this.#ready.catch(() => {}); // waiting invocations see the rejection; nobody else must
  }

  async #restart(delayMs: number): Promise<ChildProcess> {
    if (delayMs > 0) {
      await new Promise<void>((resolve) => {
        this.#restartTimer = setTimeout(resolve, delayMs);
      });
    }
    const stopping = () => new WorkerExitedError("The dev host is stopping.");
    if (this.#closing) throw stopping();
    try {
      const env = this.#o.env();
      // The same debugger port as the process before: it has exited, and nothing else may hold the port now.
      const nodeArgs = await nodeArgumentsOnceFree(this.#o, env, () => this.#closing);
      if (this.#closing) throw stopping();
      const { child } = await spawnWorker(
        this.#o,
        env,
        nodeArgs,
        (c, code, signal) => this.#onExit(c, code, signal),
        (c) => {
          this.#child = c;
          this.#loading = c;
          this.#sentEnv = env;
        },
        (c, m) => this.#onMessage(c, m),
      );
      this.#loading = undefined;
      this.#loadFailure = undefined;
      this.#watch(child);
      // Exited meanwhile (its exit event came first): not the process to send invocations to.
      if (child.exitCode === null && child.signalCode === null) this.#loaded = child;
      this.#o.logger.info(`Worker process started and initialized (pid ${child.pid}).`);
      return child;
    } catch (e) {
      this.#loading = undefined;
      const message = (e as Error).message;
      this.#loadFailure = message;
      this.#o.logger.error(`The worker process could not load the app: ${message}`);
      // What waited for this attempt is answered now (503), not when the next one, after its back-off, ends.
      throw new WorkerUnavailableError(message, Math.max(0, this.#nextStartAt - Date.now()));
    }
  }
}
