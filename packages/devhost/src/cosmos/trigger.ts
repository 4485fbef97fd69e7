import { randomUUID } from "node:crypto";
import type { Container, CosmosClient } from "@azure/cosmos";
import {
  type ChangeFeedContext,
  type ChangeFeedProcessor,
  type ChangeFeedProcessorOptions,
  createChangeFeedProcessor,
} from "@cosmos-feed/changefeed";
import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { CosmosConnectionError } from "../connections.js";
import { errorMessage } from "../errorMessage.js";
import { connectionFailureReason, describeConnection } from "./connectionFailure.js";
import { type AppCosmosBinding, chooseContainerDefinition } from "./containerChoice.js";
import { type CosmosExtensionMajor, cosmosOptionName } from "./optionNames.js";
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
import {
  CosmosTriggerError,
  type CosmosTriggerOptions,
  invalidTriggerOptions,
  type ResolvedCosmosTriggerOptions,
  resolveCosmosTriggerOptions,
} from "./triggerOptions.js";

// The options and their checks live in triggerOptions.ts; importers of the trigger get them here too.
export {
  CosmosTriggerDefaults,
  CosmosTriggerError,
  type CosmosTriggerOptions,
  type ResolvedCosmosTriggerOptions,
  resolveCosmosTriggerOptions,
} from "./triggerOptions.js";

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
  /** The Cosmos DB extension major whose option names the binding uses (the app's bundle); undefined = as written. */
  extensionMajor?: CosmosExtensionMajor;
  /**
   * Where a connection setting points, for error messages ("https://…:443/, key from setting COSMOS"); a
   * failure to start then names the function, the setting and the endpoint.
   */
  describeConnection?: (connectionSetting: string) => string | undefined;
  /** Definition of a monitored container created by createMissing (default: cosmos/containerChoice.ts). */
  containerDefinition?: ContainerDefinitionLookup;
  /** The app's Cosmos DB bindings: hints for the partition key of a monitored container createMissing creates. */
  appBindings?: AppCosmosBinding[];
  clock?: Clock;
  /** Processor knobs the binding has no option for (tests and the dev host's own settings). */
  tuning?: Pick<
    ChangeFeedProcessorOptions,
    | "leaseWatchInterval"
    | "leaseJoinSettleDelay"
    | "handoffTimeout"
    | "maxCheckpointDelay"
    | "leaseSafetyMargin"
    | "instanceName"
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
  const r = resolveCosmosTriggerOptions(fn, o.options, warnOnce, o.extensionMajor);
  let policy: RetryPolicy | undefined;
  try {
    policy = parseRetryOptions(o.retry);
  } catch (e) {
    throw invalidTriggerOptions(fn, (e as Error).message);
  }
  const clock = o.clock ?? systemClock;
  const named = (setting: string) => describeConnection(setting, o.describeConnection?.(setting));
  /** A step on one connection: a failure names the function, the setting and where it points. */
  const on = async <T>(settings: string[], step: () => T | Promise<T>): Promise<T> => {
    try {
      return await step();
    } catch (e) {
      if (e instanceof CosmosTriggerError || e instanceof CosmosConnectionError) throw e;
      const which = [...new Set(settings)].map(named).join(" / ");
      throw new CosmosTriggerError(
        `Function '${fn}' (cosmosDBTrigger): Cosmos DB ${which} ${connectionFailureReason(e)}`,
        {
          code: e instanceof CosmosFeedError ? e.code : "ListenerStartFailed",
          ...(statusOf(e) !== undefined ? { statusCode: statusOf(e) } : {}),
          cause: e,
        },
      );
    }
  };
  const monitoredClient = await on([r.connection], () =>
    o.clientFor(r.connection, { preferredLocations: r.preferredLocations, role: "monitored" }),
  );
  const leaseClient = await on([r.leaseConnection], () =>
    o.clientFor(r.leaseConnection, { preferredLocations: r.preferredLocations, role: "leases" }),
  );
  const leaseDefinition = { partitionKey: { paths: ["/id"] }, defaultTtl: -1 };
  let monitored = monitoredClient.database(r.databaseName).container(r.containerName);
  let leases = leaseClient.database(r.leaseDatabaseName).container(r.leaseContainerName);
  if (o.createMissing) {
    const choice = chooseContainerDefinition({
      databaseName: r.databaseName,
      containerName: r.containerName,
      lookup: o.containerDefinition,
      bindings: o.appBindings ?? [],
    });
    monitored = await on([r.connection], () =>
      ensureContainer({
        client: monitoredClient,
        databaseName: r.databaseName,
        containerName: r.containerName,
        definition: choice.definition,
        choice,
        onCreated: () => {
          for (const line of choice.warnings) o.log("warning", line);
        },
        log: o.log,
        role: `monitored by function '${fn}'`,
      }),
    );
  }
  if (o.createMissing || r.createLeaseContainerIfNotExists) {
    leases = await on([r.leaseConnection], () =>
      ensureContainer({
        client: leaseClient,
        databaseName: r.leaseDatabaseName,
        containerName: r.leaseContainerName,
        definition: leaseDefinition,
        throughput: r.leasesContainerThroughput,
        log: o.log,
        role: `lease container of function '${fn}'`,
      }),
    );
  }
  const [monitoredExists, leasesExist] = await Promise.all([
    on([r.connection], () => containerExists(monitored)),
    on([r.leaseConnection], () => containerExists(leases)),
  ]);
  if (!monitoredExists || !leasesExist) {
    const where = [...new Set([r.connection, r.leaseConnection])].map(named).join(" / ");
    throw new CosmosTriggerError(
      `Function '${fn}': Either the source container '${r.containerName}' (in database '${r.databaseName}') or the lease container '${r.leaseContainerName}' (in database '${r.leaseDatabaseName}') does not exist (missing: ${[!monitoredExists ? `${r.databaseName}/${r.containerName}` : "", !leasesExist ? `${r.leaseDatabaseName}/${r.leaseContainerName}` : ""].filter(Boolean).join(", ")}, on Cosmos DB ${where}). Both containers must exist before the listener starts. To automatically create the lease container, set '${cosmosOptionName("trigger", "createLeaseContainerIfNotExists", r.extensionMajor)}' to 'true'.`,
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
      `Function '${fn}' failed for a batch of ${documents.length} document(s) on lease ${ctx.leaseToken} after ${outcome.attempts} attempt(s) (last Id=${lastInvocationId}): ${errorMessage(outcome.error)}. The batch is checkpointed and will not be delivered again, as the Azure Functions Cosmos DB extension does; use 'retry' and an idempotent handler.`,
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
    o.log("warning", `Function '${fn}': change feed processor, lease ${token ?? "-"}: ${errorMessage(e)}`),
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
    await on([r.connection, r.leaseConnection], () => {
      throw e;
    });
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
