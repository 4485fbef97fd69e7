/**
 * The Cosmos DB binding option names of the two extension majors a bundle can bring (extensionBundle.ts): 3.x
 * (bundles 2 and 3; `@azure/functions` types them as CosmosDBv3*Options) and 4.x (bundle 4; CosmosDBv4*Options).
 * The extensions bind function metadata to their attributes by property name and ignore names they do not have,
 * so a binding written for the other major misses its required options (the host's "Can't figure out which ctor
 * to call") and silently loses the optional ones. The dev host runs on the 4.x names internally: a binding is
 * translated from the major the app's bundle brings, and names of the other major are reported.
 */

export type CosmosExtensionMajor = 3 | 4;
export type CosmosBindingKind = "trigger" | "input" | "output";

/** Extension 3.x property → its 4.x name (CosmosDBTriggerAttribute / CosmosDBAttribute of both majors). */
const RENAMED: Record<CosmosBindingKind, Record<string, string>> = {
  trigger: {
    connectionStringSetting: "connection",
    collectionName: "containerName",
    leaseConnectionStringSetting: "leaseConnection",
    leaseCollectionName: "leaseContainerName",
    leaseCollectionPrefix: "leaseContainerPrefix",
    createLeaseCollectionIfNotExists: "createLeaseContainerIfNotExists",
    leasesCollectionThroughput: "leasesContainerThroughput",
  },
  input: { connectionStringSetting: "connection", collectionName: "containerName" },
  output: {
    connectionStringSetting: "connection",
    collectionName: "containerName",
    collectionThroughput: "containerThroughput",
  },
};

/** Options only extension 3.x has; the dev host reads them but does not act on them (why, for the warning). */
const V3_ONLY: Record<CosmosBindingKind, Record<string, string>> = {
  trigger: {
    checkpointInterval: "the dev host checkpoints after every batch, as extension 4.x does",
    checkpointDocumentCount: "the dev host checkpoints after every batch, as extension 4.x does",
    useMultipleWriteLocations: "the dev host writes leases through the account's default region",
  },
  input: {},
  output: { useMultipleWriteLocations: "the dev host writes through the account's default region" },
};

/** Options only extension 4.x has. */
const V4_ONLY: Record<CosmosBindingKind, string[]> = {
  trigger: ["startFromTime", "changeFeedMode"],
  input: [],
  output: [],
};

/** Misspellings an extension does not read, with the name it does read. */
const NOT_READ: Record<CosmosBindingKind, Record<string, string>> = {
  // @azure/functions' CosmosDBv3TriggerOptions types `leaseCollectionThroughput`; the 3.x attribute's property is
  // LeasesCollectionThroughput, so the extension never sees the typed name.
  trigger: { leaseCollectionThroughput: "leasesCollectionThroughput" },
  input: {},
  output: {},
};

/**
 * Extension 3.x's connection when a binding names none: the app setting `AzureWebJobsCosmosDBConnectionStringName`
 * (CosmosDBExtensionConfigProvider.AzureWebJobsCosmosDBConnectionStringName).
 */
export const V3_DEFAULT_CONNECTION_SETTING = "AzureWebJobsCosmosDBConnectionStringName";

/**
 * Extension 4.x's connection when a binding or trigger names none: the setting `CosmosDB` (Constants.
 * DefaultConnectionStringName; `attribute.Connection ?? Constants.DefaultConnectionStringName` in
 * CosmosDBExtensionConfigProvider.CreateContext and the trigger's ResolveAttributeConnection). Only an absent
 * `connection` falls back: an empty one stays an error, as `??` leaves "" alone.
 */
export const V4_DEFAULT_CONNECTION_SETTING = "CosmosDB";

const v4NameOf = (kind: CosmosBindingKind, v3: string) => RENAMED[kind][v3];
const v3NameOf = (kind: CosmosBindingKind, v4: string) =>
  Object.entries(RENAMED[kind]).find(([, name]) => name === v4)?.[0];

/**
 * Which names a binding was written with when the app gives no bundle: 3.x when it uses a 3.x name for the
 * connection or the container and no 4.x one, else 4.x.
 */
export function detectCosmosMajor(raw: Record<string, unknown>): CosmosExtensionMajor {
  const has = (k: string) => raw[k] !== undefined && raw[k] !== null;
  const v3 = has("connectionStringSetting") || has("collectionName");
  const v4 = has("connection") || has("containerName");
  return v3 && !v4 ? 3 : 4;
}

export interface TranslatedCosmosOptions {
  /** The binding's options under their 4.x names (other keys as given). */
  options: Record<string, unknown>;
  /** The major the names were read as (the bundle's, or detected). */
  major: CosmosExtensionMajor;
  /** One line per option the extension of that major would not read, or the dev host does not act on. */
  ignored: string[];
  /** For a required 4.x name that is missing: the hint to give (the binding has it under the other major's name). */
  hintFor(v4Name: string): string;
}

/**
 * Reads a Cosmos DB binding's options as the extension of `major` would (undefined: detectCosmosMajor), under
 * the 4.x names the dev host runs on. `what` names the binding in messages ("cosmosDBTrigger option", …).
 */
export function translateCosmosOptions(
  kind: CosmosBindingKind,
  raw: Record<string, unknown>,
  major: CosmosExtensionMajor | undefined,
  what: string,
): TranslatedCosmosOptions {
  const m = major ?? detectCosmosMajor(raw);
  const options: Record<string, unknown> = {};
  const ignored: string[] = [];
  const renamedV4 = new Set(Object.values(RENAMED[kind]));
  for (const [key, value] of Object.entries(raw)) {
    const v4 = v4NameOf(kind, key);
    if (m === 4) {
      if (v4 !== undefined) {
        ignored.push(
          `${what} '${key}' is a v3 (extension bundle 3) name and is ignored; the v4 name is '${v4}'.`,
        );
      } else if (key in V3_ONLY[kind]) {
        ignored.push(
          `${what} '${key}' is a v3 (extension bundle 3) name and is ignored; extension 4 has no such option.`,
        );
      } else options[key] = value;
      continue;
    }
    // Extension 3.x.
    if (v4 !== undefined) options[v4] = value;
    else if (renamedV4.has(key)) {
      ignored.push(
        `${what} '${key}' is a v4 (extension bundle 4) name and is ignored with extension bundle 3; the v3 name is '${v3NameOf(kind, key)}'.`,
      );
    } else if (V4_ONLY[kind].includes(key)) {
      ignored.push(
        `${what} '${key}' is a v4 (extension bundle 4) option and is ignored: extension 3 has no such option.`,
      );
    } else if (key in NOT_READ[kind]) {
      ignored.push(
        `${what} '${key}' is not read by extension 3 (its name is '${NOT_READ[kind][key]}') and is ignored.`,
      );
    } else if (key in V3_ONLY[kind]) {
      ignored.push(`${what} '${key}' is not honoured by the dev host: ${V3_ONLY[kind][key]}.`);
    } else options[key] = value;
  }
  if (m === 3 && (options.connection === undefined || options.connection === "")) {
    options.connection = V3_DEFAULT_CONNECTION_SETTING;
  }
  if (m === 4 && (options.connection === undefined || options.connection === null)) {
    options.connection = V4_DEFAULT_CONNECTION_SETTING;
  }
  const hintFor = (v4Name: string): string => {
    if (m === 4) {
      const v3 = v3NameOf(kind, v4Name);
      return v3 && raw[v3] !== undefined
        ? ` It has the v3 name '${v3}': use '${v4Name}' (extension bundle 4), or extension bundle 3 ("[3.*, 4.0.0)" in host.json) for the v3 names.`
        : "";
    }
    const v3 = v3NameOf(kind, v4Name);
    if (!v3) return "";
    return raw[v4Name] !== undefined
      ? ` It has the v4 name '${v4Name}': host.json's extension bundle brings extension 3, which reads '${v3}'; use '${v3}', or extension bundle 4 ("[4.*, 5.0.0)") for the v4 names.`
      : ` (Extension 3 name: '${v3}'.)`;
  };
  return { options, major: m, ignored, hintFor };
}

/** The name a 4.x option has under `major` (for messages: "'collectionName' is required"). */
export function cosmosOptionName(
  kind: CosmosBindingKind,
  v4Name: string,
  major: CosmosExtensionMajor,
): string {
  return major === 3 ? (v3NameOf(kind, v4Name) ?? v4Name) : v4Name;
}

/** The connection setting names a binding names (v3 and v4 keys; the extension's default when it names none). */
export function cosmosConnectionSettings(
  kind: CosmosBindingKind,
  raw: Record<string, unknown>,
  major: CosmosExtensionMajor | undefined,
): string[] {
  const { options } = translateCosmosOptions(kind, raw, major, "");
  const names: string[] = [];
  for (const key of ["connection", "leaseConnection"]) {
    const v = options[key];
    if (typeof v === "string" && v !== "") names.push(v);
  }
  return names;
}
