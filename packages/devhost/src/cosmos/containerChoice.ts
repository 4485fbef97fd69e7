import type { ContainerRequest } from "@azure/cosmos";
import type { CosmosBindingKind } from "./optionNames.js";
import type { ContainerDefinitionLookup } from "./provision.js";

/** One Cosmos DB binding of the app, options under their 4.x names (cosmos/optionNames.ts). */
export interface AppCosmosBinding {
  functionName: string;
  kind: CosmosBindingKind;
  options: Record<string, unknown>;
}

export interface ContainerChoice {
  definition: Omit<ContainerRequest, "id">;
  /** The partition key path chosen. */
  partitionKey: string;
  /** Where it came from, for the log line. */
  source: string;
  /** How to choose another (absent when the app's own definitions chose it). */
  advice?: string;
  /** Input bindings whose lookups cannot work with the chosen key, one line each. */
  warnings: string[];
}

/** The partition key the dev host gives a container nobody defined (the extension's lease key, the SDK docs' usual). */
export const DEFAULT_PARTITION_KEY = "/id";

const isPath = (v: unknown): v is string => typeof v === "string" && /^\/[^{}%\s]*$/.test(v) && v !== "/";
const same = (a: unknown, b: unknown) => String(a).toLowerCase() === String(b).toLowerCase();

/**
 * The definition of a container the dev host creates because the app names it and it does not exist (emulator
 * mode): the app's container definitions (containers.json / --containers) when they have it; else the partition key
 * path of the output binding writing it, or of another output binding on it (`partitionKey`: the path the
 * extension's createIfNotExists creates with); else `/id`.
 *
 * An input binding's `partitionKey` is a value (`{Query.pk}`, `testPartKey`), not a path: which property holds it
 * cannot be told from it, so it does not choose the key. Instead, an input binding that looks up by a partition key
 * other than its id, on a container created with `/id`, is named in a warning: those lookups find nothing (only a
 * document whose id equals that value could match).
 */
export function chooseContainerDefinition(o: {
  databaseName: string;
  containerName: string;
  lookup?: ContainerDefinitionLookup;
  bindings: AppCosmosBinding[];
  /** A partition key path the creating binding itself gives (an output binding's `partitionKey`). */
  own?: { partitionKey: unknown; source: string };
}): ContainerChoice {
  const on = o.bindings.filter(
    (b) => same(b.options.databaseName, o.databaseName) && same(b.options.containerName, o.containerName),
  );
  const defined = o.lookup?.(o.databaseName, o.containerName);
  let choice: Omit<ContainerChoice, "warnings">;
  if (defined) {
    const pk = defined.partitionKey;
    const paths = typeof pk === "string" ? [pk] : Array.isArray(pk) ? pk : (pk?.paths ?? []);
    choice = {
      definition: defined,
      partitionKey: paths.join(", ") || DEFAULT_PARTITION_KEY,
      source: "the app's container definitions",
    };
  } else {
    const output = on.find((b) => b.kind === "output" && isPath(b.options.partitionKey));
    const path = isPath(o.own?.partitionKey)
      ? { path: o.own.partitionKey, source: o.own.source }
      : output
        ? {
            path: output.options.partitionKey as string,
            source: `the partitionKey of function '${output.functionName}''s cosmosDB output binding`,
          }
        : undefined;
    const advice =
      "to choose another, define the container in a container definitions file (--containers <file>; default src/shared/containers.json) or create it before starting";
    choice = path
      ? {
          definition: { partitionKey: { paths: [path.path] } },
          partitionKey: path.path,
          source: path.source,
          advice,
        }
      : {
          definition: { partitionKey: { paths: [DEFAULT_PARTITION_KEY] } },
          partitionKey: DEFAULT_PARTITION_KEY,
          source: "the dev host's default: the app defines no partition key for it",
          advice,
        };
  }
  const warnings: string[] = [];
  if (choice.partitionKey === DEFAULT_PARTITION_KEY) {
    for (const b of on) {
      const pk = b.options.partitionKey;
      if (b.kind !== "input" || typeof pk !== "string" || pk === "" || same(pk, b.options.id)) continue;
      warnings.push(
        `Function '${b.functionName}' reads '${o.databaseName}/${o.containerName}' with partitionKey '${pk}': with partition key ${DEFAULT_PARTITION_KEY} that value must be the document's id, so other documents are not found. Define the container with the partition key its documents use (--containers) or create it before starting.`,
      );
    }
  }
  return { ...choice, warnings };
}
