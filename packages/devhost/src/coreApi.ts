import { createRequire } from "node:module";
import type {
  FunctionCallback,
  FunctionMetadata,
  HookCallback,
  LogCategory,
  LogLevel,
  ProgrammingModel,
} from "./coreTypes.js";
import { type AppRegistry, Disposable } from "./registry.js";

/**
 * Provides the module `@azure/functions-core` the way the Node worker does (its src/setupCoreModule.ts): a Proxy
 * on Module.prototype.require answers that one specifier with the core API object. @azure/functions is CommonJS
 * and requires it lazily, so this must run before the app's first registration; ESM apps reach the library
 * through the same CommonJS loader. The library caches the object for the life of the process, so the object is
 * one per process and forwards to the registry of the app being loaded (one app per process in practice).
 */

/** The version the core API reports (the worker reports its own; the library only checks the object's shape). */
export const CORE_API_VERSION = "3.11.0-cosmos-feed-devhost";
/** The Functions host version the dev host stands in for (the v4 host line). */
export const HOST_VERSION = "4.1040.0";

export type SystemLogSink = (level: LogLevel, category: LogCategory, message: string) => void;

let activeRegistry: AppRegistry | undefined;
let programmingModel: ProgrammingModel | undefined;
let systemLog: SystemLogSink = () => {};
let installed = false;

const coreApi = {
  version: CORE_API_VERSION,
  get hostVersion() {
    return HOST_VERSION;
  },
  registerFunction(metadata: FunctionMetadata, callback: FunctionCallback): Disposable {
    return requireRegistry().registerFunction(metadata, callback);
  },
  registerHook(name: string, callback: HookCallback): Disposable {
    return requireRegistry().registerHook(name, callback);
  },
  setProgrammingModel(model: ProgrammingModel): void {
    if (programmingModel) {
      systemLog(
        "information",
        "system",
        `Setting Node.js programming model to "${model.name}" version "${model.version}"`,
      );
    }
    programmingModel = model;
  },
  getProgrammingModel(): ProgrammingModel | undefined {
    return programmingModel;
  },
  log(level: LogLevel, category: LogCategory, message: string): void {
    systemLog(level, category, message);
  },
  Disposable,
};

function requireRegistry(): AppRegistry {
  if (!activeRegistry)
    throw new Error("@azure/functions-core: no app is being hosted by the cosmos-feed dev host.");
  return activeRegistry;
}

/** Installs the require hook once per process (idempotent). */
export function installCoreApi(): void {
  if (installed) return;
  installed = true;
  const Module = createRequire(import.meta.url)("node:module") as {
    prototype: { require: (this: unknown, id: string) => unknown };
  };
  Module.prototype.require = new Proxy(Module.prototype.require, {
    apply(target, thisArg, args: [string]) {
      return args[0] === "@azure/functions-core" ? coreApi : Reflect.apply(target, thisArg, args);
    },
  });
}

/** Routes registrations and system logs to this app (the loader calls it before importing entry points). */
export function activateRegistry(registry: AppRegistry, log: SystemLogSink): void {
  activeRegistry = registry;
  systemLog = log;
}

export function currentProgrammingModel(): ProgrammingModel | undefined {
  return programmingModel;
}
