import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { LogLevel } from "./coreTypes.js";
import { DevHostError } from "./errors.js";
import { type ExtensionBundle, readExtensionBundle } from "./extensionBundle.js";
import { parseFunctionTimeout } from "./functionTimeout.js";
import type { HostJsonHttpThrottle } from "./http/settings.js";

/** What the dev host reads from an app folder, as the Functions host and Core Tools read it. */
export interface AppConfig {
  /** The app folder (absolute). */
  appDir: string;
  /** package.json `main` (a glob), `type`, `scripts`. */
  packageJson: { main?: string; type?: string; scripts?: Record<string, string> };
  /** host.json `extensions.http.routePrefix`; "api" when absent (may be ""). */
  routePrefix: string;
  /** host.json `extensions.http.maxConcurrentRequests` / `maxOutstandingRequests` (-1 = unbounded), when set. */
  httpThrottle: HostJsonHttpThrottle;
  /** host.json `extensions.durableTask.hubName`, raw (may hold `%SETTING%`); see resolveSettingExpressions. */
  durableHubName?: string;
  /** host.json `extensions.durableTask.storageProvider.type` (Azure's; the dev host logs and ignores it). */
  durableStorageProvider?: string;
  /**
   * host.json `extensions.durableTask.defaultVersion`: the version of orchestrations (and sub-orchestrations) started
   * without one, what `context.df.version` reads.
   */
  durableDefaultVersion?: string;
  /**
   * host.json `extensions.durableTask.maxConcurrentActivityFunctions` / `maxConcurrentOrchestratorFunctions`
   * (positive whole numbers; anything else is ignored, as the dev host's own defaults then apply).
   */
  durableConcurrency: { activities?: number; orchestrations?: number };
  /** host.json `logging.logLevel.default`, lower-cased to the worker's level names. */
  logLevel: LogLevel;
  /** The other `logging.logLevel` entries by category prefix ("Function", "Function.hello.User", "Host.Results" …). */
  categoryLogLevels: Record<string, LogLevel>;
  /** local.settings.json `Values` (empty when the file is absent, as in Azure). */
  settings: Record<string, string>;
  /** local.settings.json `Host.LocalHttpPort` (Core Tools' default port when set). */
  localHttpPort?: number;
  /** host.json `functionTimeout` in ms; null = none ("-1"); 30 minutes when absent (see functionTimeout.ts). */
  functionTimeoutMs: number | null;
  /** local.settings.json `Host.CORS` (comma-separated origins) and `Host.CORSCredentials`, as Core Tools reads them. */
  cors: { origins?: string; credentials: boolean };
  /** local.settings.json `Host.AllowedHosts`: host names the HTTP server answers besides loopback ones (hosts.ts). */
  allowedHosts?: string;
  /** host.json `extensionBundle` (its range decides the Cosmos DB option names: extensionBundle.ts); absent = none. */
  extensionBundle?: ExtensionBundle;
}

function readJson(path: string, what: string): Record<string, unknown> | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const value: unknown = JSON.parse(readFileSync(path, "utf8"));
    if (value === null || typeof value !== "object" || Array.isArray(value))
      throw new Error("not a JSON object");
    return value as Record<string, unknown>;
  } catch (e) {
    throw new DevHostError(`${what} (${path}) is not valid: ${(e as Error).message}`, { code: "AppLoad" });
  }
}

function objectAt(root: Record<string, unknown> | undefined, ...keys: string[]): Record<string, unknown> {
  let node: unknown = root;
  for (const key of keys)
    node = node && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined;
  return node && typeof node === "object" ? (node as Record<string, unknown>) : {};
}

// host.json names levels as .NET does (Information, Warning …); the worker contract uses lower case.
const LEVELS: Record<string, LogLevel> = {
  trace: "trace",
  debug: "debug",
  information: "information",
  warning: "warning",
  error: "error",
  critical: "critical",
  none: "none",
};

/** host.json `extensions.http` throttle values as the host takes them: whole numbers ≥ 1, or -1 for unbounded. */
function readHttpThrottle(http: Record<string, unknown>): HostJsonHttpThrottle {
  const out: HostJsonHttpThrottle = {};
  for (const key of ["maxConcurrentRequests", "maxOutstandingRequests"] as const) {
    const value = http[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || (value < 1 && value !== -1)) {
      throw new DevHostError(
        `host.json extensions.http.${key} must be a whole number of at least 1, or -1 for unbounded; got ${JSON.stringify(value)}.`,
        { code: "AppLoad" },
      );
    }
    out[key] = value;
  }
  return out;
}

/**
 * Reads the app folder's package.json, host.json and local.settings.json (the last two optional) into an
 * AppConfig; throws DevHostError (code "AppLoad") when package.json is missing or local.settings.json is encrypted.
 */
export function readAppConfig(appDir: string): AppConfig {
  const pkg = readJson(join(appDir, "package.json"), "package.json");
  if (!pkg) {
    throw new DevHostError(`No package.json in ${appDir}: is this a Functions app folder?`, {
      code: "AppLoad",
    });
  }
  const host = readJson(join(appDir, "host.json"), "host.json");
  const local = readJson(join(appDir, "local.settings.json"), "local.settings.json");
  if (local?.IsEncrypted === true) {
    throw new DevHostError("local.settings.json is encrypted (IsEncrypted: true); decrypt it first.", {
      code: "AppLoad",
    });
  }
  const http = objectAt(host, "extensions", "http");
  const prefix = typeof http.routePrefix === "string" ? http.routePrefix : "api";
  const durableTask = objectAt(host, "extensions", "durableTask");
  const hub = durableTask.hubName;
  const storageProvider = objectAt(durableTask, "storageProvider").type;
  const positive = (v: unknown) => (typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined);
  const activities = positive(durableTask.maxConcurrentActivityFunctions);
  const orchestrations = positive(durableTask.maxConcurrentOrchestratorFunctions);
  const levels = objectAt(host, "logging", "logLevel");
  const level = levels.default;
  const categoryLogLevels: Record<string, LogLevel> = {};
  for (const [category, value] of Object.entries(levels)) {
    const parsed = typeof value === "string" ? LEVELS[value.toLowerCase()] : undefined;
    if (category !== "default" && parsed) categoryLogLevels[category] = parsed;
  }
  const settings: Record<string, string> = {};
  for (const [name, value] of Object.entries(objectAt(local, "Values"))) {
    // Core Tools passes every value as a string.
    if (value !== null && value !== undefined) settings[name] = String(value);
  }
  const hostSection = objectAt(local, "Host");
  const port = Number(hostSection.LocalHttpPort);
  return {
    appDir,
    packageJson: {
      main: typeof pkg.main === "string" ? pkg.main : undefined,
      type: typeof pkg.type === "string" ? pkg.type : undefined,
      scripts: objectAt(pkg, "scripts") as Record<string, string>,
    },
    routePrefix: prefix.replace(/^\/+|\/+$/g, ""),
    httpThrottle: readHttpThrottle(http),
    durableHubName: typeof hub === "string" ? hub : undefined,
    durableStorageProvider: typeof storageProvider === "string" ? storageProvider : undefined,
    durableDefaultVersion:
      typeof durableTask.defaultVersion === "string" && durableTask.defaultVersion !== ""
        ? durableTask.defaultVersion
        : undefined,
    durableConcurrency: {
      ...(activities ? { activities } : {}),
      ...(orchestrations ? { orchestrations } : {}),
    },
    logLevel: (typeof level === "string" && LEVELS[level.toLowerCase()]) || "information",
    categoryLogLevels,
    settings,
    localHttpPort: Number.isInteger(port) && port > 0 ? port : undefined,
    functionTimeoutMs: parseFunctionTimeout(host?.functionTimeout),
    extensionBundle: readExtensionBundle(host?.extensionBundle),
    cors: {
      origins: typeof hostSection.CORS === "string" ? hostSection.CORS : undefined,
      credentials: hostSection.CORSCredentials === true || hostSection.CORSCredentials === "true",
    },
    ...(typeof hostSection.AllowedHosts === "string" ? { allowedHosts: hostSection.AllowedHosts } : {}),
  };
}

/** Puts `Values` into the environment; a variable the real environment already has wins (as in Core Tools). */
export function applySettings(
  settings: Record<string, string>,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const applied: string[] = [];
  for (const [name, value] of Object.entries(settings)) {
    if (env[name] === undefined) {
      env[name] = value;
      applied.push(name);
    }
  }
  return applied;
}

/**
 * Resolves `%NAME%` app-setting expressions as the host does for binding string options (and host.json's
 * hubName). An unset setting is an error naming it, like the host's indexing error; `%%` is not special.
 */
export function resolveSettingExpressions(
  value: string,
  where: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  return value.replace(/%([^%\s]+)%/g, (_, name: string) => {
    const resolved = env[name];
    if (resolved === undefined) {
      throw new DevHostError(
        `${where}: '%${name}%' does not resolve to a value (app setting ${name} is unset).`,
        {
          code: "UnresolvedSetting",
        },
      );
    }
    return resolved;
  });
}
