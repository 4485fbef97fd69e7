import type { BindingInfo } from "../coreTypes.js";
import { cosmosExtensionMajor } from "../extensionBundle.js";
import type { LoadedApp } from "../loader.js";
import type { AppCosmosBinding } from "./containerChoice.js";
import { type CosmosBindingKind, translateCosmosOptions } from "./optionNames.js";

/** The Cosmos DB kind of a binding (trigger, input, output), or undefined for other bindings. */
export function cosmosBindingKind(binding: BindingInfo): CosmosBindingKind | undefined {
  const type = binding.type.toLowerCase();
  if (type === "cosmosdbtrigger") return "trigger";
  if (type !== "cosmosdb") return undefined;
  return binding.direction === "out" ? "output" : "input";
}

/** Every Cosmos DB binding of the app, its options under the 4.x names as the app's bundle reads them. */
export function appCosmosBindings(app: LoadedApp): AppCosmosBinding[] {
  const major = cosmosExtensionMajor(app.config.extensionBundle);
  const out: AppCosmosBinding[] = [];
  for (const fn of app.functions) {
    for (const binding of Object.values(fn.bindings)) {
      const kind = cosmosBindingKind(binding);
      if (!kind) continue;
      const { options } = translateCosmosOptions(kind, binding, major, "");
      out.push({ functionName: fn.metadata.name, kind, options });
    }
  }
  return out;
}
