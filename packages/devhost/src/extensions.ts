import type { BindingInfo, InvocationResponse, ParameterBinding, TypedData } from "./coreTypes.js";
import { unsupportedBindingError } from "./hostLimits.js";
import type { LoadedApp, LoadedFunction } from "./loader.js";
import type { HostLogger } from "./logger.js";

/**
 * Extension point for non-trigger bindings (Cosmos DB input/output …), keyed by binding `type`.
 * `bindingData` holds the trigger's values for binding expressions such as `{id}` (HTTP route params and
 * query for HTTP triggers). Bindings arrive with `%SETTING%` already resolved.
 */
export interface BindingExtensions {
  /** Input bindings by type: each reads the binding's data for one invocation (null or undefined: none). */
  inputs?: Record<
    string,
    (binding: BindingInfo, bindingData: Record<string, unknown>) => Promise<TypedData | null | undefined>
  >;
  /** Output bindings by type: each writes what the function returned or set for that binding. */
  outputs?: Record<string, (binding: BindingInfo, data: TypedData) => Promise<void>>;
  /**
   * Told the app once it has loaded, before HTTP listens and triggers start (bindingCheck.ts), with the host's log
   * (what the bindings log from then on goes there, an app without triggers included).
   */
  appLoaded?(app: LoadedApp, logger: HostLogger): void;
}

/** Builds the typed data of every extra input (direction "in", not the trigger). */
export async function collectExtraInputs(
  fn: LoadedFunction,
  extensions: BindingExtensions,
  bindingData: Record<string, unknown>,
): Promise<ParameterBinding[]> {
  const out: ParameterBinding[] = [];
  for (const [name, binding] of Object.entries(fn.bindings)) {
    if (name === fn.triggerName || binding.direction !== "in") continue;
    const provide = extensions.inputs?.[binding.type];
    if (!provide) throw unsupportedBindingError(fn.metadata.name, name, binding);
    out.push({ name, data: await provide(binding, bindingData) });
  }
  return out;
}

/** Hands every output the invocation produced (other than the HTTP response) to its binding. */
export async function applyOutputs(
  fn: LoadedFunction,
  extensions: BindingExtensions,
  response: InvocationResponse,
): Promise<void> {
  const outputs = [...(response.outputData ?? [])];
  const ret = fn.bindings.$return;
  if (ret && ret.type.toLowerCase() !== "http" && response.returnValue) {
    outputs.push({ name: "$return", data: response.returnValue });
  }
  for (const { name, data } of outputs) {
    const binding = fn.bindings[name];
    if (!binding || !data || binding.type.toLowerCase() === "http") continue;
    const write = extensions.outputs?.[binding.type];
    if (!write) throw unsupportedBindingError(fn.metadata.name, name, binding);
    await write(binding, data);
  }
}
