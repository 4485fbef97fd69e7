import { CosmosFeedError } from "@cosmos-feed/core/errors";
import {
  type CosmosExtensionMajor,
  cosmosOptionName,
  type TranslatedCosmosOptions,
  translateCosmosOptions,
} from "./optionNames.js";

/**
 * The `cosmosDBTrigger` binding's options (the v4 `CosmosDBv4TriggerOptions`, as registered: values verbatim,
 * `%NAME%` already resolved by the caller). Intervals are numbers of milliseconds, as the v4 library passes them
 * through and the extension reads them (`TimeSpan.FromMilliseconds`); 0 or absent means the extension's default.
 */
export interface CosmosTriggerOptions {
  connection: string;
  databaseName: string;
  containerName: string;
  /** Default: `connection`. */
  leaseConnection?: string;
  /** Default: `databaseName`. */
  leaseDatabaseName?: string;
  /** Default: "leases". */
  leaseContainerName?: string;
  /** Lease id prefix (the processor name); default "". */
  leaseContainerPrefix?: string;
  /** Default false. Creates the lease container with partition key /id and TTL on (defaultTtl −1). */
  createLeaseContainerIfNotExists?: boolean;
  /** RU/s of a lease container created by the option above. */
  leasesContainerThroughput?: number;
  /** ms; default 5000. */
  feedPollDelay?: number;
  /** ms; default 13000. */
  leaseAcquireInterval?: number;
  /** ms; default 60000. */
  leaseExpirationInterval?: number;
  /** ms; default 17000. */
  leaseRenewInterval?: number;
  maxItemsPerInvocation?: number;
  startFromBeginning?: boolean;
  /** ISO 8601, e.g. 2021-02-16T14:19:29Z. */
  startFromTime?: string;
  /** "LatestVersion" (default) | "AllVersionsAndDeletes". */
  changeFeedMode?: string;
  /** Comma-separated regions, handed to `clientFor`. */
  preferredLocations?: string;
  [other: string]: unknown;
}

/** The extension's defaults (CosmosDBTriggerConstants / ChangeFeedProcessorBuilder), named once. */
export const CosmosTriggerDefaults = {
  leaseContainerName: "leases",
  feedPollDelay: 5_000,
  leaseAcquireInterval: 13_000,
  leaseExpirationInterval: 60_000,
  leaseRenewInterval: 17_000,
} as const;

/** A trigger that cannot start: bad options, missing containers. `code` says which. */
export class CosmosTriggerError extends CosmosFeedError {}

export interface ResolvedCosmosTriggerOptions {
  connection: string;
  databaseName: string;
  containerName: string;
  leaseConnection: string;
  leaseDatabaseName: string;
  leaseContainerName: string;
  leaseContainerPrefix: string;
  createLeaseContainerIfNotExists: boolean;
  leasesContainerThroughput: number | undefined;
  feedPollDelay: number;
  leaseAcquireInterval: number;
  leaseExpirationInterval: number;
  leaseRenewInterval: number;
  maxItemsPerInvocation: number | undefined;
  startFromBeginning: boolean;
  startFromTime: string | undefined;
  mode: "latestVersion" | "allVersionsAndDeletes";
  preferredLocations: string[];
  /** The extension major the option names were read as (cosmos/optionNames.ts). */
  extensionMajor: CosmosExtensionMajor;
}

const KNOWN = new Set([
  "connection",
  "databaseName",
  "containerName",
  "leaseConnection",
  "leaseDatabaseName",
  "leaseContainerName",
  "leaseContainerPrefix",
  "createLeaseContainerIfNotExists",
  "leasesContainerThroughput",
  "feedPollDelay",
  "leaseAcquireInterval",
  "leaseExpirationInterval",
  "leaseRenewInterval",
  "maxItemsPerInvocation",
  "startFromBeginning",
  "startFromTime",
  "changeFeedMode",
  "preferredLocations",
  // Binding metadata, not options.
  "type",
  "direction",
  "name",
  "properties",
  "dataType",
]);

/** A CosmosTriggerError "InvalidTriggerOptions" (400) naming the function. */
export function invalidTriggerOptions(functionName: string, message: string): CosmosTriggerError {
  return new CosmosTriggerError(`Function '${functionName}' (cosmosDBTrigger): ${message}`, {
    code: "InvalidTriggerOptions",
    statusCode: 400,
  });
}

function stringOption(
  fn: string,
  raw: CosmosTriggerOptions,
  key: string,
  required: boolean,
  names?: Pick<TranslatedCosmosOptions, "major" | "hintFor">,
): string | undefined {
  const v = raw[key];
  if (v === undefined || v === null || v === "") {
    if (!required) return undefined;
    const shown = names ? cosmosOptionName("trigger", key, names.major) : key;
    throw invalidTriggerOptions(fn, `'${shown}' is required.${names?.hintFor(key) ?? ""}`);
  }
  if (typeof v !== "string")
    throw invalidTriggerOptions(fn, `'${key}' must be a string; got ${JSON.stringify(v)}.`);
  return v;
}

/** An interval in ms: absent or 0 → default (as the extension); negative or not a number → error. */
function msOption(fn: string, raw: CosmosTriggerOptions, key: string, fallback: number): number {
  const v = raw[key];
  if (v === undefined || v === null || v === "") return fallback;
  const n = typeof v === "string" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
    throw invalidTriggerOptions(
      fn,
      `'${key}' must be a number of milliseconds greater than 0; got ${JSON.stringify(v)}.`,
    );
  }
  return n === 0 ? fallback : n;
}

function boolOption(fn: string, raw: CosmosTriggerOptions, key: string): boolean {
  const v = raw[key];
  if (v === undefined || v === null) return false;
  if (v === true || v === "true" || v === "True") return true;
  if (v === false || v === "false" || v === "False") return false;
  throw invalidTriggerOptions(fn, `'${key}' must be true or false; got ${JSON.stringify(v)}.`);
}

/**
 * Applies the extension's defaults and checks (CosmosDBTriggerAttributeBindingProvider, CosmosDBTriggerListener).
 * Options are read under the names of extension `major` (the app's bundle: 3 = `connectionStringSetting`,
 * `collectionName`, …; undefined = as the binding is written, cosmos/optionNames.ts) and resolved to the 4.x names.
 * `warn` receives one line per option the dev host ignores (unknown names, the other major's names).
 */
export function resolveCosmosTriggerOptions(
  functionName: string,
  given: CosmosTriggerOptions | Readonly<Record<string, unknown>>,
  warn: (message: string) => void = () => {},
  major?: CosmosExtensionMajor,
): ResolvedCosmosTriggerOptions {
  const fn = functionName;
  const names = translateCosmosOptions("trigger", given, major, `Function '${fn}': cosmosDBTrigger option`);
  const raw = names.options as CosmosTriggerOptions;
  const connection = stringOption(fn, raw, "connection", true, names) as string;
  const databaseName = stringOption(fn, raw, "databaseName", true, names) as string;
  const containerName = stringOption(fn, raw, "containerName", true, names) as string;
  for (const line of names.ignored) warn(line);
  for (const key of Object.keys(raw)) {
    if (KNOWN.has(key)) continue;
    warn(
      `Function '${fn}': cosmosDBTrigger option '${key}' is not a Cosmos DB trigger option and is ignored.`,
    );
  }
  const startFromBeginning = boolOption(fn, raw, "startFromBeginning");
  const startFromTime = stringOption(fn, raw, "startFromTime", false);
  if (startFromTime !== undefined) {
    if (startFromBeginning)
      throw invalidTriggerOptions(fn, "Only one of startFromBeginning or startFromTime can be used.");
    if (Number.isNaN(new Date(startFromTime).getTime())) {
      throw invalidTriggerOptions(
        fn,
        `startFromTime '${startFromTime}' is not in the correct format. Please use the ISO 8601 format with the UTC designator. For example: '2021-02-16T14:19:29Z'.`,
      );
    }
  }
  const modeText = stringOption(fn, raw, "changeFeedMode", false) ?? "LatestVersion";
  let mode: ResolvedCosmosTriggerOptions["mode"];
  if (modeText.toLowerCase() === "latestversion") mode = "latestVersion";
  else if (modeText.toLowerCase() === "allversionsanddeletes") mode = "allVersionsAndDeletes";
  else
    throw invalidTriggerOptions(
      fn,
      `changeFeedMode must be 'LatestVersion' or 'AllVersionsAndDeletes'; got '${modeText}'.`,
    );
  if (mode === "allVersionsAndDeletes" && (startFromBeginning || startFromTime !== undefined)) {
    throw invalidTriggerOptions(
      fn,
      "startFromBeginning and startFromTime are not supported with changeFeedMode AllVersionsAndDeletes.",
    );
  }
  const max = raw.maxItemsPerInvocation;
  let maxItemsPerInvocation: number | undefined;
  if (max !== undefined && max !== null && max !== 0) {
    const n = typeof max === "string" ? Number(max) : max;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
      throw invalidTriggerOptions(
        fn,
        `'maxItemsPerInvocation' must be a positive integer; got ${JSON.stringify(max)}.`,
      );
    }
    maxItemsPerInvocation = n;
  }
  const throughput = raw.leasesContainerThroughput;
  let leasesContainerThroughput: number | undefined;
  if (throughput !== undefined && throughput !== null && throughput !== 0) {
    const n = typeof throughput === "string" ? Number(throughput) : throughput;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
      throw invalidTriggerOptions(
        fn,
        `'leasesContainerThroughput' must be a number of RU/s; got ${JSON.stringify(throughput)}.`,
      );
    }
    leasesContainerThroughput = n;
  }
  const resolved: ResolvedCosmosTriggerOptions = {
    connection,
    databaseName,
    containerName,
    leaseConnection: stringOption(fn, raw, "leaseConnection", false) ?? connection,
    leaseDatabaseName: stringOption(fn, raw, "leaseDatabaseName", false) ?? databaseName,
    leaseContainerName:
      stringOption(fn, raw, "leaseContainerName", false) ?? CosmosTriggerDefaults.leaseContainerName,
    leaseContainerPrefix: stringOption(fn, raw, "leaseContainerPrefix", false) ?? "",
    createLeaseContainerIfNotExists: boolOption(fn, raw, "createLeaseContainerIfNotExists"),
    leasesContainerThroughput,
    feedPollDelay: msOption(fn, raw, "feedPollDelay", CosmosTriggerDefaults.feedPollDelay),
    leaseAcquireInterval: msOption(
      fn,
      raw,
      "leaseAcquireInterval",
      CosmosTriggerDefaults.leaseAcquireInterval,
    ),
    leaseExpirationInterval: msOption(
      fn,
      raw,
      "leaseExpirationInterval",
      CosmosTriggerDefaults.leaseExpirationInterval,
    ),
    leaseRenewInterval: msOption(fn, raw, "leaseRenewInterval", CosmosTriggerDefaults.leaseRenewInterval),
    maxItemsPerInvocation,
    startFromBeginning,
    startFromTime,
    mode,
    preferredLocations: (stringOption(fn, raw, "preferredLocations", false) ?? "")
      .split(",")
      .map((r) => r.trim())
      .filter((r) => r !== ""),
    extensionMajor: names.major,
  };
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  if (
    same(resolved.connection, resolved.leaseConnection) &&
    same(resolved.databaseName, resolved.leaseDatabaseName) &&
    same(resolved.containerName, resolved.leaseContainerName)
  ) {
    throw invalidTriggerOptions(
      fn,
      "The monitored container cannot be the same as the container storing the leases.",
    );
  }
  return resolved;
}
