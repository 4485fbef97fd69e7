import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Clock } from "@cosmos-feed/core/clock";
import { type AppConfig, applySettings, readAppConfig, resolveSettingExpressions } from "./appConfig.js";
import { activateRegistry, currentProgrammingModel, installCoreApi } from "./coreApi.js";
import type { BindingInfo, FunctionMetadata, ProgrammingModel } from "./coreTypes.js";
import { DevHostError } from "./errors.js";
import { globFiles } from "./glob.js";
import type { HostLogger } from "./logger.js";
import { AppRegistry, type RegisteredFunction } from "./registry.js";
import type { AppWorker } from "./worker/app-worker.js";

/**
 * A function as the host knows it once the worker has indexed the app (the worker's RpcFunctionMetadata): what
 * the library registered, its trigger, and its binding options with `%SETTING%` expressions resolved. The
 * handler itself stays in the worker.
 */
export interface LoadedFunction {
  /** Exactly what the library handed to registerFunction (the contract tests compare it). */
  metadata: FunctionMetadata;
  /** The binding whose type ends in "Trigger" (the library puts exactly one). */
  triggerName: string;
  /** The trigger binding. */
  trigger: BindingInfo;
  /** All its bindings, by name, the trigger included. */
  bindings: Record<string, BindingInfo>;
}

/** What loading the app tells the host (it crosses the worker channel, so plain data only). */
export interface AppIndex {
  /** Functions that indexed cleanly, in registration order. */
  functions: LoadedFunction[];
  /** Functions the host would mark "in error" (e.g. an unresolved %SETTING%), with the reason. */
  functionErrors: { name: string; message: string }[];
  /** Entry point files loaded, relative to the app folder. */
  entryPoints: string[];
  /** Names of local.settings.json Values put into the environment (the others were already set). */
  appliedSettings: string[];
  /** host.json `extensions.durableTask.hubName` with `%SETTING%` resolved (undefined when absent). */
  durableHubName?: string;
  /** What the programming model answered to getCapabilities; `HttpUri` set = HTTP streaming through its proxy. */
  capabilities: Record<string, string>;
}

/** The app as the dev host serves it: its index and configuration, and the worker process that runs it. */
export interface LoadedApp extends AppIndex {
  /** The app folder's configuration. */
  config: AppConfig;
  /** Runs the app's code (docs/devhost.md "What runs where"). */
  worker: AppWorker;
  /** The clock host.json's functionTimeout runs on (the system's unless a test injects one). */
  clock?: Clock;
}

/** A function loaded in this process: its index entry and its handler. */
export interface LocalFunction extends LoadedFunction, RegisteredFunction {}

/** The app loaded in this process (the worker's side, or a test reading registrations). */
export interface LocalApp extends AppIndex {
  /** The app folder's configuration. */
  config: AppConfig;
  /**
   * What the app registered with the programming model (functions, hooks).
   * @internal The worker's own bookkeeping: stripped from the package's .d.ts (`stripInternal`).
   */
  registry: AppRegistry;
  /**
   * The programming model the app loaded (`@azure/functions`), as the worker drives it.
   * @internal The worker contract's types are not part of the package's API.
   */
  programmingModel: ProgrammingModel;
  /**
   * The app's functions, with their handlers (the package's .d.ts declare them as {@link AppIndex.functions}).
   * @internal The handlers are the worker's.
   */
  functions: LocalFunction[];
}

/** Options of `loadApp`. */
export interface LoadAppOptions {
  /** Where the loader's log lines go. */
  logger: HostLogger;
  /** The environment the app loads in (default process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * Imports an ES module entry point. The worker process passes a plain `import()` from a module outside any
   * loader hook, so the app's own files load exactly as node would load them.
   */
  importModule?: (url: string) => Promise<unknown>;
  /** Wraps the programming model's getCapabilities call (the worker guards the HTTP stream proxy made there). */
  aroundCapabilities?: (step: () => Promise<Record<string, string>>) => Promise<Record<string, string>>;
}

const defaultImport = (url: string): Promise<unknown> => import(/* @vite-ignore */ url);
const requireNative = createRequire(import.meta.url);
let loadCount = 0;

/** The worker's rule (src/loadScriptFile.ts): .mjs → ESM, .cjs → CommonJS, else package.json `type`. */
export function isESModule(file: string, packageType: string | undefined): boolean {
  if (file.endsWith(".mjs")) return true;
  if (file.endsWith(".cjs")) return false;
  return packageType === "module";
}

/** Lists the entry files `main` names, or explains exactly what is missing (no `main`, nothing built yet). */
export function resolveEntryPoints(config: AppConfig): string[] {
  const main = config.packageJson.main;
  if (!main) {
    throw new DevHostError(
      `package.json in ${config.appDir} has no "main": a v4 app names its entry files there (e.g. "dist/src/{index.js,functions/*.js}").`,
      { code: "AppLoad" },
    );
  }
  const files = globFiles(main, config.appDir);
  if (files.length === 0) {
    const how = config.packageJson.scripts?.build
      ? `run \`npm run build\` in ${config.appDir}`
      : "build the app so that it exists";
    throw new DevHostError(`No file matches package.json "main" (${main}) in ${config.appDir}: ${how}.`, {
      code: "BuildOutputMissing",
    });
  }
  return files;
}

function resolveBindings(fn: RegisteredFunction, env: NodeJS.ProcessEnv): Record<string, BindingInfo> {
  const out: Record<string, BindingInfo> = {};
  for (const [name, binding] of Object.entries(fn.metadata.bindings)) {
    const copy: BindingInfo = { ...binding };
    for (const [key, value] of Object.entries(binding)) {
      if (typeof value === "string" && key !== "type" && key !== "direction") {
        copy[key] = resolveSettingExpressions(
          value,
          `Function '${fn.metadata.name}', binding '${name}' ${key}`,
          env,
        );
      }
    }
    out[name] = copy;
  }
  return out;
}

/**
 * Loads an app folder as the Node worker does: settings into the environment, the core API in place, every
 * entry file `main` matches imported (ESM or CommonJS), appStart hooks run, then registration is closed.
 */
export async function loadApp(appDir: string, options: LoadAppOptions): Promise<LocalApp> {
  const importModule = options.importModule ?? defaultImport;
  const env = options.env ?? process.env;
  const logger = options.logger;
  const config = readAppConfig(appDir);
  const appliedSettings = applySettings(config.settings, env);
  const entryPoints = resolveEntryPoints(config);

  installCoreApi();
  const registry = new AppRegistry();
  activateRegistry(registry, (level, _category, message) =>
    logger.log(level, message, { category: "Worker" }),
  );

  const generation = ++loadCount;
  for (const file of entryPoints) {
    const path = join(appDir, file);
    logger.log("debug", `Loading entry point file "${file}"`);
    try {
      if (isESModule(file, config.packageJson.type)) {
        // A fresh URL per later load so that loading the app again (tests) re-runs its registrations; the
        // first load keeps the plain URL (clean stack traces).
        await importModule(`${pathToFileURL(path).href}${generation > 1 ? `?devhost=${generation}` : ""}`);
      } else {
        delete requireNative.cache[requireNative.resolve(path)];
        requireNative(path);
      }
    } catch (e) {
      if (e instanceof DevHostError) throw e;
      const err = e as Error;
      throw new DevHostError(`Loading entry point "${file}" failed: ${err?.stack ?? String(e)}`, {
        code: "AppLoad",
        cause: e,
      });
    }
  }

  const programmingModel = currentProgrammingModel();
  if (!programmingModel || registry.functions.size === 0) {
    throw new DevHostError(
      `No functions registered by ${config.packageJson.main} in ${appDir}: the entry files must call app.http(), app.cosmosDB(), … from @azure/functions.`,
      { code: "NoFunctions" },
    );
  }

  await registry.runHooks("appStart", {
    hookData: registry.appLevelOnlyHookData,
    appHookData: registry.appHookData,
    functionAppDirectory: appDir,
  });
  // The worker asks for capabilities once startup is over; the library locks app.setup() then.
  const askCapabilities = async () => (await programmingModel.getCapabilities?.({})) ?? {};
  const capabilities = await (options.aroundCapabilities?.(askCapabilities) ?? askCapabilities());
  registry.finishedStartup = true;

  const functions: LocalFunction[] = [];
  const functionErrors: { name: string; message: string }[] = [];
  for (const fn of registry.functions.values()) {
    try {
      functions.push({ ...fn, bindings: resolveBindings(fn, env) });
    } catch (e) {
      functionErrors.push({ name: fn.metadata.name, message: (e as Error).message });
    }
  }
  const durableHubName =
    config.durableHubName === undefined ? undefined : resolveHubName(config.durableHubName, env, logger);
  return {
    durableHubName,
    config,
    registry,
    programmingModel,
    functions,
    functionErrors,
    entryPoints,
    appliedSettings,
    capabilities,
  };
}

/**
 * host.json's hubName with `%SETTING%` resolved. An unset setting is not an error here, unlike in the Functions host
 * (the Durable extension keeps the unresolved `%NAME%` and refuses it as a name): the hub gets the dev host's default
 * name, with a warning, so that an app whose hubName names a setting (`%TASKHUB_NAME%`, as the Durable quickstart and
 * this app) starts from a fresh clone that has no local.settings.json yet.
 */
function resolveHubName(hubName: string, env: NodeJS.ProcessEnv, logger: HostLogger): string | undefined {
  try {
    return resolveSettingExpressions(hubName, "host.json extensions.durableTask.hubName", env);
  } catch (e) {
    if (!(e instanceof DevHostError) || e.code !== "UnresolvedSetting") throw e;
    logger.warn(
      `${e.message} The dev host uses its default task hub name; the Functions host would not start: set it in local.settings.json.`,
    );
    return undefined;
  }
}
