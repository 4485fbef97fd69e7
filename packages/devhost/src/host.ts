import { resolve } from "node:path";
import type { Clock } from "@cosmos-feed/core/clock";
import { parseAllowedHosts } from "@cosmos-feed/emulator/hosts";
import { applySettings, readAppConfig } from "./appConfig.js";
import { indexBindings, triggerErrorLine } from "./bindingCheck.js";
import type { BindingExtensions } from "./extensions.js";
import { type CorsPolicy, parseCorsPolicy } from "./http/cors.js";
import { buildRouteTable, routeUrl } from "./http/router.js";
import { type BuiltinRoutes, DevHttpServer } from "./http/server.js";
import { readDevHttpSettings } from "./http/settings.js";
import { type InvocationOutcome, type InvokeOptions, invokeFunction } from "./invocation.js";
import type { LoadedApp, LoadedFunction } from "./loader.js";
import { HostLogger, type LogSink } from "./logger.js";
import { ProcessWorker } from "./worker/process-worker.js";
import { readWorkerSettings } from "./worker/settings.js";

/** A running non-HTTP trigger (cosmosDB change feed, timer …); stopped after HTTP has drained. */
export interface TriggerRunner {
  /** Stops the runner: no new invocations; resolves when those in flight have finished. */
  stop(): Promise<void>;
}

/** What a trigger runner gets from the host. */
export interface TriggerRunnerContext {
  /** The loaded app. */
  app: LoadedApp;
  /** The host's log. */
  logger: HostLogger;
  /** Invokes this runner's function through the worker contract (hooks, typed data, Executing/Executed lines). */
  invoke(options: Omit<InvokeOptions, "extensions">): Promise<InvocationOutcome>;
}

/** Starts a runner for one function; keyed by trigger binding type (e.g. "cosmosDBTrigger", "timerTrigger"). */
export type TriggerRunnerFactory = (
  fn: LoadedFunction,
  context: TriggerRunnerContext,
) => Promise<TriggerRunner>;

/** Options of `startDevHost`. */
export interface DevHostOptions {
  /** The app folder (host.json, package.json, local.settings.json). */
  appDir: string;
  /** HTTP port; 7071 as Core Tools (local.settings.json Host.LocalHttpPort when set); 0 = any free port. */
  port?: number;
  /** Interface to bind; "127.0.0.1". */
  hostname?: string;
  /** Where log lines go (console by default, in Core Tools' format). */
  logSink?: LogSink;
  /** The environment the app's settings resolve in and the worker gets (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Input and output bindings besides HTTP (e.g. `createCosmosRuntime().extensions`). */
  extensions?: BindingExtensions;
  /** Trigger runners by trigger binding type (e.g. "cosmosDBTrigger", "timerTrigger"). */
  triggers?: Record<string, TriggerRunnerFactory>;
  /** Largest HTTP request body accepted (bytes). Default DEFAULT_MAX_REQUEST_BODY_BYTES. */
  maxRequestBodyBytes?: number;
  /** CORS for HTTP triggers; default local.settings.json `Host.CORS` / `Host.CORSCredentials` (none = off). */
  cors?: CorsPolicy;
  /** Host names answered besides loopback ones (`--allowed-hosts`); default local.settings.json `Host.AllowedHosts`. */
  allowedHosts?: string;
  /** Runs after the app loaded and before HTTP listens and triggers start (e.g. to point connections). */
  prepare?: (app: LoadedApp, logger: HostLogger) => Promise<void>;
  /** The host's own HTTP endpoints (Durable's webhooks), served before function routes. */
  builtinRoutes?: BuiltinRoutes[];
  /** Told the base URL once HTTP listens, before trigger runners start. */
  listening?: (baseUrl: string) => void;
  /**
   * The clock host.json's functionTimeout and the front door's minimum data rate run on; the system's by default
   * (tests inject a FakeClock).
   */
  clock?: Clock;
  /**
   * `cosmos-feed start --inspect[=[host:]port]`: node's `--inspect` for the worker process (only it, not this one),
   * over any inspector flag of languageWorkers__node__arguments. The same port at every start of the worker.
   */
  inspect?: string | true;
}

/** A started dev host: where it listens, the app, its log, and `close()`. */
export interface RunningDevHost {
  /** e.g. http://127.0.0.1:7071 */
  baseUrl: string;
  /** The HTTP port it listens on. */
  port: number;
  /** The loaded app. */
  app: LoadedApp;
  /** The host's log. */
  logger: HostLogger;
  /** Graceful stop: no new HTTP, in-flight invocations finish, trigger runners stop, appTerminate hooks run. */
  close(): Promise<void>;
}

function makeContext(
  app: LoadedApp,
  fn: LoadedFunction,
  logger: HostLogger,
  extensions: BindingExtensions | undefined,
): TriggerRunnerContext {
  return { app, logger, invoke: (options) => invokeFunction(app, fn, logger, { ...options, extensions }) };
}

/** The HTTP server's checked settings: throttles and body limits, and the Host names it answers. */
type FrontDoor = {
  settings: ReturnType<typeof readDevHttpSettings>;
  allowedHosts: ReturnType<typeof parseAllowedHosts>;
};

/** Loads an app folder and serves it: HTTP triggers on node:http, other triggers through `triggers`. */
export async function startDevHost(options: DevHostOptions): Promise<RunningDevHost> {
  const appDir = resolve(options.appDir);
  const config = readAppConfig(appDir);
  const cors = options.cors ?? parseCorsPolicy(config.cors.origins, config.cors.credentials);
  const logger = new HostLogger({
    minLevel: config.logLevel,
    categoryLevels: config.categoryLogLevels,
    sink: options.logSink,
  });
  // The app settings go into the host's environment (its connections read them) and from there to the worker's.
  const env = options.env ?? process.env;
  const startedAt = performance.now();
  // The front door's settings are checked before anything starts: a bad one is one line, with nothing to undo.
  const front: FrontDoor = {
    // local.settings.json Values as the host reads app settings, the real environment winning (as Core Tools).
    settings: readDevHttpSettings({ ...config.settings, ...env }, config.httpThrottle),
    allowedHosts: parseAllowedHosts(
      options.allowedHosts ?? config.allowedHosts,
      options.allowedHosts !== undefined ? "--allowed-hosts" : "local.settings.json Host.AllowedHosts",
    ),
  };
  const appliedSettings = applySettings(config.settings, env);
  const { worker, index } = await ProcessWorker.start({
    appDir,
    env: () => workerEnvironment(appDir, env),
    logger,
    settings: readWorkerSettings(env),
    ...(options.inspect !== undefined ? { inspect: options.inspect } : {}),
  });
  const app: LoadedApp = { ...index, appliedSettings, config, worker, clock: options.clock };
  try {
    return await serve(app, options, logger, cors, env, startedAt, front);
  } catch (e) {
    await worker.close();
    throw e;
  }
}

/**
 * The worker process's environment, as the host gives it to a language worker: the host's own (with the app
 * settings), FUNCTIONS_WORKER_RUNTIME, the script root, and Core Tools' Development environment name.
 */
export function workerEnvironment(appDir: string, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...env,
    FUNCTIONS_WORKER_RUNTIME: env.FUNCTIONS_WORKER_RUNTIME ?? "node",
    AzureWebJobsScriptRoot: appDir,
    AZURE_FUNCTIONS_ENVIRONMENT: env.AZURE_FUNCTIONS_ENVIRONMENT ?? "Development",
  };
}

async function serve(
  app: LoadedApp,
  options: DevHostOptions,
  logger: HostLogger,
  cors: CorsPolicy | undefined,
  env: NodeJS.ProcessEnv,
  startedAt: number,
  front: FrontDoor,
): Promise<RunningDevHost> {
  await options.prepare?.(app, logger);
  app.worker.syncEnvironment(); // e.g. connections pointed at the emulator
  logger.info("Worker process started and initialized.");
  for (const { name, message } of app.functionErrors)
    logger.error(`The '${name}' function is in error: ${message}`);

  // The host's switch for one function: app setting AzureWebJobs.<name>.Disabled = true (or 1).
  const disabled = (fn: LoadedFunction) =>
    /^(true|1)$/i.test(env[`AzureWebJobs.${fn.metadata.name}.Disabled`] ?? "");
  for (const fn of app.functions.filter(disabled)) logger.info(`Function '${fn.metadata.name}' is disabled.`);
  const inError = indexBindings(app, options.extensions, logger);
  const active = app.functions.filter((fn) => !disabled(fn) && !inError.has(fn.metadata.name));
  const table = buildRouteTable(active, app.config.routePrefix);
  for (const { name, message } of table.errors)
    logger.error(`The '${name}' function is in error: ${message}`);
  const http = new DevHttpServer({
    app,
    table,
    logger,
    extensions: options.extensions,
    maxRequestBodyBytes: options.maxRequestBodyBytes,
    cors,
    builtinRoutes: options.builtinRoutes,
    ...(options.clock ? { clock: options.clock } : {}),
    ...front,
  });
  const hostname = options.hostname ?? "127.0.0.1";
  const port = await http.listen(options.port ?? app.config.localHttpPort ?? 7071, hostname);
  const baseUrl = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
  options.listening?.(baseUrl);

  const lines = ["Functions:", ""];
  for (const fn of active) {
    const route = table.routes.find((r) => r.fn === fn);
    const name = fn.metadata.name;
    if (route) {
      const methods = route.methods ? [...route.methods].join(",") : "ALL";
      lines.push(`\t${name}: [${methods}] ${routeUrl(baseUrl, table.prefix, route)}`, "");
    } else if (fn.trigger.type.toLowerCase() !== "httptrigger") {
      lines.push(`\t${name}: ${fn.trigger.type}`, "");
    }
  }
  logger.info(lines.join("\n"));

  const runners: TriggerRunner[] = [];
  for (const fn of active) {
    const type = fn.trigger.type;
    if (type.toLowerCase() === "httptrigger") continue;
    const factory = options.triggers?.[type];
    if (!factory) {
      logger.warn(`The '${fn.metadata.name}' function will not run: the dev host has no '${type}' trigger.`);
      continue;
    }
    try {
      runners.push(await factory(fn, makeContext(app, fn, logger, options.extensions)));
    } catch (e) {
      logger.error(triggerErrorLine(fn.metadata.name, e)); // as the host: that function is in error, the rest run
    }
  }
  // Core Tools' words, which tools wait for.
  logger.info(`Host started (${Math.round(performance.now() - startedAt)}ms)`);
  logger.info("Job host started");

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      logger.info("Stopping the host: no new HTTP requests; waiting for in-flight invocations.");
      await http.close();
      await Promise.allSettled(runners.map((r) => r.stop()));
      await app.worker.close(); // appTerminate hooks run in the worker

      logger.info("Host stopped.");
    })();
    return closing;
  };
  return { baseUrl, port, app, logger, close };
}
