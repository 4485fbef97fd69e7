import { randomUUID } from "node:crypto";
import type { Container, CosmosClient } from "@azure/cosmos";
import { type Clock, systemClock } from "../../shared/changefeed/clock.js";
import {
  type ChangeFeedContext,
  type ChangeFeedProcessor,
  type ChangeFeedProcessorOptions,
  createChangeFeedProcessor,
} from "../../shared/changefeed/index.js";
import { CosmosFeedError } from "../../shared/errors.js";
import {
  type BindingLog,
  type ContainerDefinitionLookup,
  containerExists,
  ensureContainer,
} from "./provision.js";
import {
  formatTimeSpan,
  parseRetryOptions,
  type RetryContext,
  type RetryPolicy,
  runWithRetry,
} from "./retry.js";

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

/** What one execution of the function is told. */
export interface CosmosTriggerInvocation {
  /** A new id per execution (each retry is a new execution, as in the host). */
  invocationId: string;
  retryContext: RetryContext;
  leaseToken: string;
  /** Fires when the lease is lost or the trigger stops: the handler should stop writing. */
  signal: AbortSignal;
}

export interface StartCosmosTriggerOptions {
  functionName: string;
  /** The binding's options (extra metadata keys such as type, direction, name are ignored). */
  options: CosmosTriggerOptions;
  /** The function's retry (v4 `retry` or the worker metadata's `retryOptions`); none → a failure is not retried. */
  retry?: unknown;
  /** A client for a connection setting name (the caller resolves it, e.g. with resolveCosmosConnection). */
  clientFor(
    connectionSetting: string,
    options: { preferredLocations: string[]; role: "monitored" | "leases" },
  ): CosmosClient | Promise<CosmosClient>;
  /** One execution of the function with a batch: resolves when the handler succeeded, rejects when it failed. */
  invoke(documents: unknown[], invocation: CosmosTriggerInvocation): Promise<void>;
  log: BindingLog;
  /** Stops the trigger (as stop()). */
  abortSignal?: AbortSignal;
  /** Create missing databases and containers (the monitored one too), with a log line: the emulator's mode. */
  createMissing?: boolean;
  /** Definition of a monitored container created by createMissing (default: partition key /id). */
  containerDefinition?: ContainerDefinitionLookup;
  clock?: Clock;
  /** Processor knobs the binding has no option for (tests and the dev host's own settings). */
  tuning?: Pick<
    ChangeFeedProcessorOptions,
    "leaseWatchInterval" | "handoffTimeout" | "maxCheckpointDelay" | "leaseSafetyMargin" | "instanceName"
  >;
  /** Invocation id factory (default randomUUID). */
  newInvocationId?: () => string;
  /** Jitter source of exponential backoff (default Math.random). */
  random?: () => number;
}

export interface RunningCosmosTrigger {
  readonly processor: ChangeFeedProcessor<unknown>;
  readonly monitoredContainer: Container;
  readonly leaseContainer: Container;
  /** The options after defaults (what the trigger runs with). */
  readonly resolved: ResolvedCosmosTriggerOptions;
  /** Stops: in-flight executions finish (no new retries), leases are released or handed off. Idempotent. */
  stop(): Promise<void>;
}

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
}

/** v3 option names (bundle 3) → their v4 names; with bundle 4 the real host refuses them. */
const V3_NAMES: Record<string, string | undefined> = {
  connectionStringSetting: "connection",
  collectionName: "containerName",
  leaseConnectionStringSetting: "leaseConnection",
  leaseCollectionName: "leaseContainerName",
  leaseCollectionPrefix: "leaseContainerPrefix",
  createLeaseCollectionIfNotExists: "createLeaseContainerIfNotExists",
  leasesCollectionThroughput: "leasesContainerThroughput",
  checkpointInterval: undefined,
  checkpointDocumentCount: undefined,
  useMultipleWriteLocations: undefined,
};

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

function invalid(functionName: string, message: string): CosmosTriggerError {
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
): string | undefined {
  const v = raw[key];
  if (v === undefined || v === null || v === "") {
    if (!required) return undefined;
    const v3 = Object.entries(V3_NAMES).find(([, v4]) => v4 === key)?.[0];
    const hint =
      v3 && raw[v3] !== undefined ? ` It has the v3 name '${v3}': use '${key}' (extension bundle 4).` : "";
    throw invalid(fn, `'${key}' is required.${hint}`);
  }
  if (typeof v !== "string") throw invalid(fn, `'${key}' must be a string; got ${JSON.stringify(v)}.`);
  return v;
}

/** An interval in ms: absent or 0 → default (as the extension); negative or not a number → error. */
function msOption(fn: string, raw: CosmosTriggerOptions, key: string, fallback: number): number {
  const v = raw[key];
  if (v === undefined || v === null || v === "") return fallback;
  const n = typeof v === "string" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
    throw invalid(fn, `'${key}' must be a number of milliseconds greater than 0; got ${JSON.stringify(v)}.`);
  }
  return n === 0 ? fallback : n;
}

function boolOption(fn: string, raw: CosmosTriggerOptions, key: string): boolean {
  const v = raw[key];
  if (v === undefined || v === null) return false;
  if (v === true || v === "true" || v === "True") return true;
  if (v === false || v === "false" || v === "False") return false;
  throw invalid(fn, `'${key}' must be true or false; got ${JSON.stringify(v)}.`);
}

/**
 * Applies the extension's defaults and checks (CosmosDBTriggerAttributeBindingProvider, CosmosDBTriggerListener).
 * `warn` receives one line per option the dev host ignores (unknown names, v3 names).
 */
export function resolveCosmosTriggerOptions(
  functionName: string,
  raw: CosmosTriggerOptions,
  warn: (message: string) => void = () => {},
): ResolvedCosmosTriggerOptions {
  const fn = functionName;
  const connection = stringOption(fn, raw, "connection", true) as string;
  const databaseName = stringOption(fn, raw, "databaseName", true) as string;
  const containerName = stringOption(fn, raw, "containerName", true) as string;
  for (const key of Object.keys(raw)) {
    if (KNOWN.has(key)) continue;
    if (key in V3_NAMES) {
      const v4 = V3_NAMES[key];
      warn(
        `Function '${fn}': cosmosDBTrigger option '${key}' is a v3 (extension bundle 3) name and is ignored${v4 ? `; the v4 name is '${v4}'` : "; extension 4 has no such option"}.`,
      );
    } else
      warn(
        `Function '${fn}': cosmosDBTrigger option '${key}' is not a Cosmos DB trigger option and is ignored.`,
      );
  }
  const startFromBeginning = boolOption(fn, raw, "startFromBeginning");
  const startFromTime = stringOption(fn, raw, "startFromTime", false);
  if (startFromTime !== undefined) {
    if (startFromBeginning) throw invalid(fn, "Only one of startFromBeginning or startFromTime can be used.");
    if (Number.isNaN(new Date(startFromTime).getTime())) {
      throw invalid(
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
    throw invalid(
      fn,
      `changeFeedMode must be 'LatestVersion' or 'AllVersionsAndDeletes'; got '${modeText}'.`,
    );
  if (mode === "allVersionsAndDeletes" && (startFromBeginning || startFromTime !== undefined)) {
    throw invalid(
      fn,
      "startFromBeginning and startFromTime are not supported with changeFeedMode AllVersionsAndDeletes.",
    );
  }
  const max = raw.maxItemsPerInvocation;
  let maxItemsPerInvocation: number | undefined;
  if (max !== undefined && max !== null && max !== 0) {
    const n = typeof max === "string" ? Number(max) : max;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
      throw invalid(fn, `'maxItemsPerInvocation' must be a positive integer; got ${JSON.stringify(max)}.`);
    }
    maxItemsPerInvocation = n;
  }
  const throughput = raw.leasesContainerThroughput;
  let leasesContainerThroughput: number | undefined;
  if (throughput !== undefined && throughput !== null && throughput !== 0) {
    const n = typeof throughput === "string" ? Number(throughput) : throughput;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
      throw invalid(
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
  };
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  if (
    same(resolved.connection, resolved.leaseConnection) &&
    same(resolved.databaseName, resolved.leaseDatabaseName) &&
    same(resolved.containerName, resolved.leaseContainerName)
  ) {
    throw invalid(fn, "The monitored container cannot be the same as the container storing the leases.");
  }
  return resolved;
}

/**
 * Runs one `cosmosDBTrigger` binding on the project's change feed processor, as the Functions Cosmos DB extension
 * runs it on the .NET one: leases interchangeable with the extension's (same ids, prefix = leaseContainerPrefix).
 *
 * Per batch: `invoke` is called; a failure is retried under the function's `retry`; the batch is checkpointed
 * after a success — and, as the extension does (CosmosDBTriggerListener.ProcessChangesAsync checkpoints whatever
 * TryExecuteAsync returned), also after the retries ran out: that is logged as an error with the invocation id
 * and the batch is not delivered again. A batch whose lease is lost, or that is still failing when the trigger
 * stops, is not checkpointed (the next owner gets it again).
 */
export async function startCosmosTrigger(o: StartCosmosTriggerOptions): Promise<RunningCosmosTrigger> {
  const fn = o.functionName;
  const warned = new Set<string>();
  const warnOnce = (m: string) => {
    if (warned.has(m)) return;
    warned.add(m);
    o.log("warning", m);
  };
  const r = resolveCosmosTriggerOptions(fn, o.options, warnOnce);
  let policy: RetryPolicy | undefined;
  try {
    policy = parseRetryOptions(o.retry);
  } catch (e) {
    throw invalid(fn, (e as Error).message);
  }
  const clock = o.clock ?? systemClock;
  const monitoredClient = await o.clientFor(r.connection, {
    preferredLocations: r.preferredLocations,
    role: "monitored",
  });
  const leaseClient = await o.clientFor(r.leaseConnection, {
    preferredLocations: r.preferredLocations,
    role: "leases",
  });
  const leaseDefinition = { partitionKey: { paths: ["/id"] }, defaultTtl: -1 };
  let monitored = monitoredClient.database(r.databaseName).container(r.containerName);
  let leases = leaseClient.database(r.leaseDatabaseName).container(r.leaseContainerName);
  if (o.createMissing) {
    monitored = await ensureContainer({
      client: monitoredClient,
      databaseName: r.databaseName,
      containerName: r.containerName,
      definition: o.containerDefinition?.(r.databaseName, r.containerName) ?? {
        partitionKey: { paths: ["/id"] },
      },
      log: o.log,
      role: `monitored by function '${fn}'`,
    });
  }
  if (o.createMissing || r.createLeaseContainerIfNotExists) {
    leases = await ensureContainer({
      client: leaseClient,
      databaseName: r.leaseDatabaseName,
      containerName: r.leaseContainerName,
      definition: leaseDefinition,
      throughput: r.leasesContainerThroughput,
      log: o.log,
      role: `lease container of function '${fn}'`,
    });
  }
  const [monitoredExists, leasesExist] = await Promise.all([
    containerExists(monitored),
    containerExists(leases),
  ]);
  if (!monitoredExists || !leasesExist) {
    throw new CosmosTriggerError(
      `Function '${fn}': Either the source container '${r.containerName}' (in database '${r.databaseName}') or the lease container '${r.leaseContainerName}' (in database '${r.leaseDatabaseName}') does not exist (missing: ${[!monitoredExists ? `${r.databaseName}/${r.containerName}` : "", !leasesExist ? `${r.leaseDatabaseName}/${r.leaseContainerName}` : ""].filter(Boolean).join(", ")}). Both containers must exist before the listener starts. To automatically create the lease container, set 'createLeaseContainerIfNotExists' to 'true'.`,
      { code: "ContainerNotFound", statusCode: 404 },
    );
  }

  // Stopping: executions in flight finish, but a failure is no longer retried (and not checkpointed).
  const stopping = new AbortController();
  const newId = o.newInvocationId ?? randomUUID;
  const handler = async (documents: unknown[], ctx: ChangeFeedContext): Promise<void> => {
    const signal = AbortSignal.any([ctx.signal, stopping.signal]);
    let lastInvocationId = "";
    const outcome = await runWithRetry({
      policy,
      clock,
      signal,
      random: o.random,
      attempt: (retryContext) => {
        lastInvocationId = newId();
        return o.invoke(documents, {
          invocationId: lastInvocationId,
          retryContext,
          leaseToken: ctx.leaseToken,
          signal: ctx.signal,
        });
      },
      onRetry: ({ delayMs, nextAttempt, maxRetryCount }) =>
        o.log(
          "information",
          `Waiting for ${formatTimeSpan(delayMs)} before retrying function execution. Next attempt: '${nextAttempt}'. Max number of retry attempts: '${maxRetryCount}'.`,
          { invocationId: lastInvocationId },
        ),
    });
    if (outcome.ok) return;
    if (signal.aborted) {
      // Lease lost or trigger stopping: do not checkpoint; whoever owns the lease next gets the batch again.
      o.log(
        "warning",
        `Function '${fn}': a failed batch of ${documents.length} document(s) on lease ${ctx.leaseToken} is not checkpointed because the trigger is stopping or lost the lease (Id=${lastInvocationId}).`,
        { invocationId: lastInvocationId },
      );
      throw outcome.error;
    }
    o.log(
      "error",
      `Function '${fn}' failed for a batch of ${documents.length} document(s) on lease ${ctx.leaseToken} after ${outcome.attempts} attempt(s) (last Id=${lastInvocationId}): ${errorText(outcome.error)}. The batch is checkpointed and will not be delivered again, as the Azure Functions Cosmos DB extension does; use 'retry' and an idempotent handler.`,
      { invocationId: lastInvocationId },
    );
  };

  const processor = createChangeFeedProcessor<unknown>(
    {
      monitoredContainer: monitored,
      leaseContainer: leases,
      leaseContainerPrefix: r.leaseContainerPrefix,
      feedPollDelay: r.feedPollDelay,
      leaseAcquireInterval: r.leaseAcquireInterval,
      leaseExpirationInterval: r.leaseExpirationInterval,
      leaseRenewInterval: r.leaseRenewInterval,
      maxItemsPerInvocation: r.maxItemsPerInvocation,
      startFromBeginning: r.startFromBeginning,
      ...(r.startFromTime !== undefined ? { startFromTime: r.startFromTime } : {}),
      mode: r.mode,
      clock,
      ...o.tuning,
    },
    handler,
  );
  processor.on("error", (e, token) =>
    o.log("warning", `Function '${fn}': change feed processor, lease ${token ?? "-"}: ${errorText(e)}`),
  );
  try {
    await processor.start();
  } catch (e) {
    if (e instanceof CosmosFeedError) {
      throw new CosmosTriggerError(`Function '${fn}': ${e.message}`, {
        code: e.code,
        ...(e.statusCode !== undefined ? { statusCode: e.statusCode } : {}),
        cause: e,
      });
    }
    throw e;
  }
  o.log(
    "debug",
    `Started the listener for prefix='${r.leaseContainerPrefix}', monitoredContainer='${r.containerName}', monitoredDatabase='${r.databaseName}', leaseContainer='${r.leaseContainerName}', leaseDatabase='${r.leaseDatabaseName}', functionId='${fn}'.`,
  );

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      stopping.abort();
      await processor.stop();
    })();
    return stopped;
  };
  if (o.abortSignal) {
    if (o.abortSignal.aborted) await stop();
    else o.abortSignal.addEventListener("abort", () => void stop(), { once: true });
  }
  return { processor, monitoredContainer: monitored, leaseContainer: leases, resolved: r, stop };
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
