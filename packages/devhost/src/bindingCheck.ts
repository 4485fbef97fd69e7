import type { BindingInfo } from "./coreTypes.js";
import { cosmosBindingKind } from "./cosmos/appBindings.js";
import { cosmosOptionName, translateCosmosOptions } from "./cosmos/optionNames.js";
import { errorMessage } from "./errorMessage.js";
import { cosmosExtensionMajor } from "./extensionBundle.js";
import type { BindingExtensions } from "./extensions.js";
import { describeBinding, unsupportedBindingsWarning } from "./hostLimits.js";
import type { LoadedApp, LoadedFunction } from "./loader.js";
import type { HostLogger } from "./logger.js";

/**
 * What the host finds when it indexes the app's bindings, before anything runs:
 * - a Cosmos DB binding written with the other extension major's names than host.json's bundle brings (required
 *   options missing: the host's "Can't figure out which ctor to call") puts its function in error;
 * - options the bundle's extension would not read are warned about (once, at start);
 * - input and output bindings no extension of the dev host serves (blob, queue, Service Bus, …) are warned about,
 *   once per function naming them; the function is served, and a call that needs one answers 500 naming it.
 */
export interface BindingCheck {
  /** Functions in error, with the reason. */
  inError: Map<string, string>;
  warnings: string[];
}

/** The built-in bindings of the host: the HTTP trigger's response. */
const BUILT_IN_OUTPUTS = new Set(["http"]);

function cosmosProblems(
  fn: LoadedFunction,
  name: string,
  binding: BindingInfo,
  app: LoadedApp,
): { error?: string; warnings: string[] } {
  const kind = cosmosBindingKind(binding);
  if (!kind) return { warnings: [] };
  const label = kind === "trigger" ? "cosmosDBTrigger" : `cosmosDB ${kind} binding '${name}'`;
  const bundle = app.config.extensionBundle;
  const major = cosmosExtensionMajor(bundle);
  const t = translateCosmosOptions(kind, binding, major, `Function '${fn.metadata.name}': ${label} option`);
  for (const required of ["connection", "databaseName", "containerName"]) {
    const v = t.options[required];
    if (v !== undefined && v !== null && v !== "") continue;
    const shown = cosmosOptionName(kind, required, t.major);
    const which = bundle
      ? ` (host.json extension bundle ${bundle.version} brings Cosmos DB extension ${t.major}.x)`
      : "";
    return { error: `${label}: '${shown}' is required${which}.${t.hintFor(required)}`, warnings: [] };
  }
  // The trigger warns about its options itself when it starts (cosmos/trigger.ts).
  return { warnings: kind === "trigger" ? [] : t.ignored };
}

/** Checks every function's bindings against the app's bundle and what `extensions` serve. */
export function checkFunctionBindings(
  app: LoadedApp,
  extensions: BindingExtensions | undefined,
): BindingCheck {
  const inError = new Map<string, string>();
  const warnings: string[] = [];
  for (const fn of app.functions) {
    const unsupported: string[] = [];
    for (const [name, binding] of Object.entries(fn.bindings)) {
      const cosmos = cosmosProblems(fn, name, binding, app);
      if (cosmos.error && !inError.has(fn.metadata.name)) inError.set(fn.metadata.name, cosmos.error);
      warnings.push(...cosmos.warnings);
      if (name === fn.triggerName) continue; // an unserved trigger is reported by the host's trigger start
      const type = binding.type;
      const served =
        (binding.direction !== "in" &&
          (BUILT_IN_OUTPUTS.has(type.toLowerCase()) || extensions?.outputs?.[type])) ||
        (binding.direction !== "out" && extensions?.inputs?.[type]);
      if (!served) unsupported.push(describeBinding(name, binding));
    }
    if (unsupported.length > 0 && !inError.has(fn.metadata.name)) {
      warnings.push(unsupportedBindingsWarning(fn.metadata.name, unsupported));
    }
  }
  return { inError, warnings };
}

/**
 * The host's start step for bindings: tells the extensions the app, logs what checkFunctionBindings found, and
 * returns the names of the functions in error (not served, not started).
 */
export function indexBindings(
  app: LoadedApp,
  extensions: BindingExtensions | undefined,
  logger: HostLogger,
): Set<string> {
  extensions?.appLoaded?.(app, logger);
  const check = checkFunctionBindings(app, extensions);
  for (const [name, message] of check.inError) logger.error(`The '${name}' function is in error: ${message}`);
  for (const line of check.warnings) logger.warn(line);
  return new Set(check.inError.keys());
}

/**
 * The line for a function whose trigger could not start: the host marks it in error and runs the rest. The
 * error's own "Function 'x' (…):" prefix is dropped (the line names the function already).
 */
export function triggerErrorLine(functionName: string, error: unknown): string {
  const text = errorMessage(error);
  const prefix = `Function '${functionName}'`;
  const reason = text.startsWith(prefix) ? text.slice(prefix.length).replace(/^( \([^)]*\))?:\s*/, "") : text;
  return `The '${functionName}' function is in error: ${reason}`;
}
