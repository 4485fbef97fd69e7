import type { BindingInfo } from "../coreTypes.js";
import type { BindingExtensions } from "../extensions.js";
import type { TriggerRunnerFactory } from "../host.js";
import type { BuiltinRoutes } from "../http/server.js";
import { invokeFunction } from "../invocation.js";
import type { LoadedApp, LoadedFunction } from "../loader.js";
import type { HostLogger } from "../logger.js";
import { createDurableApiHandler, durableBuiltinRoutes } from "./client-api.js";
import {
  type DurableClientBindingOptions,
  durableClientInputData,
  ensureWebsiteHostname,
} from "./client-binding.js";
import { openContainers, type TaskHubLocation } from "./cosmos-backend/containers.js";
import type { EntityInvoker } from "./entity-engine.js";

export {
  TASK_HUB_CONTAINER,
  type TaskHubLocation,
  taskHubContainerRequest,
} from "./cosmos-backend/containers.js";

import { CosmosTaskHub, type CosmosTaskHubOptions } from "./cosmos-backend/task-hub.js";
import { checkTaskHubName } from "./hub-name.js";
import { readDurableHubSettings } from "./settings.js";
import type { ActivityInvoker, OrchestratorInvoker, TaskHubClient } from "./types.js";

/**
 * Durable Functions in the dev host: starts the Cosmos DB task hub when the app has durable functions, invokes
 * orchestrators and activities through the worker contract (hooks, typed data, Executing/Executed lines), provides
 * the `durableClient` input and serves the extension's HTTP API on the host's port. Entities are refused (logged).
 */

/** The task hub's default name (Core Tools' local default when host.json names none). */
export const DEFAULT_HUB_NAME = "TestHubName";

/**
 * What the durable HTTP API's request body may hold beyond one payload (DURABLE_MAX_PAYLOAD_BYTES) before the front
 * door refuses it unread: a body within it that is still too large gets the API's own 413, which names the payload.
 */
export const DURABLE_API_BODY_SLACK_BYTES = 65_536;

export interface DurableRuntimeOptions {
  /** Decided once the app has loaded (its connections point at the emulator or an account by then). */
  location: (app: LoadedApp) => Promise<TaskHubLocation>;
  /** The host's binding extensions (activities may use Cosmos DB bindings), read at each invocation. */
  extensions: () => BindingExtensions;
  env?: NodeJS.ProcessEnv;
}

export interface DurableRuntime {
  triggers: Record<"orchestrationTrigger" | "activityTrigger" | "entityTrigger", TriggerRunnerFactory>;
  inputs: NonNullable<BindingExtensions["inputs"]>;
  routes: BuiltinRoutes;
  /** After the app loaded: starts the task hub when the app has durable functions or a durable client. */
  prepare(app: LoadedApp, logger: HostLogger): Promise<void>;
  /** Once HTTP listens: the base URL for the client's links. */
  listening(baseUrl: string): void;
  hub(): CosmosTaskHub | undefined;
  stop(): Promise<void>;
}

const isType = (fn: LoadedFunction, type: string) => fn.trigger.type.toLowerCase() === type.toLowerCase();
const usesDurableClient = (fn: LoadedFunction) =>
  Object.values(fn.bindings).some(
    (b: BindingInfo) => b.type === "durableClient" || b.type === "orchestrationClient",
  );

export function createDurableRuntime(options: DurableRuntimeOptions): DurableRuntime {
  const env = options.env ?? process.env;
  let hub: CosmosTaskHub | undefined;
  let app: LoadedApp | undefined;
  let logger: HostLogger | undefined;
  let baseUrl = "http://localhost:7071";
  let stopping: Promise<void> | undefined;

  const disabled = (fn: LoadedFunction) =>
    /^(true|1)$/i.test(env[`AzureWebJobs.${fn.metadata.name}.Disabled`] ?? "");
  const find = (name: string, type: string) =>
    app?.functions.find((f) => f.metadata.name === name && isType(f, type) && !disabled(f));

  const invokeOrchestrator: OrchestratorInvoker = async (name, input) => {
    const fn = find(name, "orchestrationTrigger");
    if (!app || !logger || !fn) {
      return {
        thrown: new Error(
          `The function '${name}' doesn't exist, is disabled, or is not an orchestrator function.`,
        ),
      };
    }
    const outcome = await invokeFunction(app, fn, logger, {
      reason: "(null)",
      inputData: [{ name: fn.triggerName, data: { json: JSON.stringify(input) } }],
      extensions: options.extensions(),
    });
    if (outcome.error !== undefined) return { thrown: outcome.error };
    // Through JSON, as the worker's reply travels to the extension.
    return { returned: JSON.parse(JSON.stringify(outcome.result ?? null)) };
  };

  const invokeActivity: ActivityInvoker = async (item) => {
    const fn = find(item.name, "activityTrigger");
    if (!app || !logger || !fn) {
      const message = `The function '${item.name}' doesn't exist, is disabled, or is not an activity function.`;
      return { failure: { ErrorType: "FunctionFailedException", ErrorMessage: message } };
    }
    const outcome = await invokeFunction(app, fn, logger, {
      reason: "(null)",
      inputData: [{ name: fn.triggerName, data: { json: item.input ?? "null" } }],
      extensions: options.extensions(),
      bindingData: { instanceId: item.instanceId },
    });
    if (outcome.error !== undefined) {
      const e = outcome.error as Error;
      return {
        failure: {
          ErrorType: e?.name ?? "Error",
          ErrorMessage: e?.message ?? String(outcome.error),
          ...(e?.stack ? { StackTrace: e.stack } : {}),
          IsNonRetriable: false,
        },
      };
    }
    return { result: JSON.stringify(outcome.result ?? null) };
  };

  // Entity names are case-insensitive (the scheduler id `@name@key` has the name in lower case, as the extension's).
  const invokeEntity: EntityInvoker = async (name, input) => {
    const fn = app?.functions.find(
      (f) =>
        f.metadata.name.toLowerCase() === name.toLowerCase() && isType(f, "entityTrigger") && !disabled(f),
    );
    if (!app || !logger || !fn) {
      return {
        thrown: new Error(`The function '${name}' doesn't exist, is disabled, or is not an entity function.`),
      };
    }
    const outcome = await invokeFunction(app, fn, logger, {
      reason: "(null)",
      inputData: [{ name: fn.triggerName, data: { json: JSON.stringify(input) } }],
      extensions: options.extensions(),
    });
    if (outcome.error !== undefined) return { thrown: outcome.error };
    return { returned: JSON.parse(JSON.stringify(outcome.result ?? null)) };
  };

  const hubName = () => app?.durableHubName ?? DEFAULT_HUB_NAME;
  const requireHub = (): TaskHubClient => {
    if (!hub) {
      throw Object.assign(new Error("The app has no durable functions: the task hub is not running."), {
        statusCode: 404,
      });
    }
    return hub;
  };

  const noopRunner = { stop: () => runtime.stop() };
  const runtime: DurableRuntime = {
    triggers: {
      orchestrationTrigger: async () => noopRunner,
      activityTrigger: async () => noopRunner,
      entityTrigger: async () => noopRunner,
    },
    inputs: {
      durableClient: async (binding) => {
        // The binding's own taskHub / connectionName override the host's, as the extension's attribute.
        const { taskHub, connectionName } = binding as BindingInfo & DurableClientBindingOptions;
        const data = durableClientInputData({
          baseUrl,
          hubName: hubName(),
          binding: { taskHub, connectionName },
        });
        return { string: JSON.stringify(data) };
      },
    },
    routes: {
      ...durableBuiltinRoutes(
        createDurableApiHandler({
          hub: requireHub,
          baseUrl: () => baseUrl,
          isOrchestrator: (name) => find(name, "orchestrationTrigger") !== undefined,
          maxPayloadBytes: () => readDurableHubSettings(env).maxPayloadBytes,
          onError: (message, error) =>
            logger?.error(`${message}${error instanceof Error && error.stack ? `\n${error.stack}` : ""}`),
        }),
      ),
      // A body the API could accept is at most one payload; past that (plus room for a JSON envelope) the front door
      // stops reading and answers 413, instead of buffering up to the functions' 100 MB first.
      maxBodyBytes: () => readDurableHubSettings(env).maxPayloadBytes + DURABLE_API_BODY_SLACK_BYTES,
      maxBodyName: "the durable HTTP API (DURABLE_MAX_PAYLOAD_BYTES + 64 KiB)",
    },
    async prepare(loaded, log) {
      app = loaded;
      logger = log;
      const durable = loaded.functions.some(
        (f) =>
          isType(f, "orchestrationTrigger") ||
          isType(f, "activityTrigger") ||
          isType(f, "entityTrigger") ||
          usesDurableClient(f),
      );
      if (!durable) return;
      const storage = loaded.config.durableStorageProvider;
      checkTaskHubName(hubName(), storage);
      if (storage) {
        log.info(
          `host.json durableTask.storageProvider (${storage}) is for Azure: the dev host keeps the task hub in Cosmos DB.`,
        );
      }
      const knobs = readDurableHubSettings(env);
      // host.json's concurrency limits, as the extension honours them; an explicit DURABLE_* setting wins.
      const { activities, orchestrations } = loaded.config.durableConcurrency ?? {};
      if (activities && env.DURABLE_MAX_CONCURRENT_ACTIVITIES === undefined)
        knobs.maxConcurrentActivities = activities;
      if (orchestrations && env.DURABLE_MAX_CONCURRENT_ORCHESTRATIONS === undefined)
        knobs.maxConcurrentOrchestrations = orchestrations;
      const where = await options.location(loaded);
      const { container, leases } = await openContainers(where);
      const hubOptions: CosmosTaskHubOptions = {
        container,
        leaseContainer: leases,
        hubName: hubName(),
        ...(loaded.config.durableDefaultVersion !== undefined
          ? { defaultVersion: loaded.config.durableDefaultVersion }
          : {}),
        invokeOrchestrator,
        invokeActivity,
        invokeEntity,
        ...knobs,
        log: (level, message) => log.log(level, message, { category: "DurableTask.Core" }),
      };
      hub = new CosmosTaskHub(hubOptions);
      await hub.start();
      log.info(
        `Durable task hub '${hubName()}' in ${where.describe} (${where.databaseName}/${where.containerName}).`,
      );
    },
    listening(url) {
      baseUrl = url;
      // durable-functions' getClient rewrites links to localhost:7071 unless WEBSITE_HOSTNAME names the host.
      ensureWebsiteHostname(env, url);
    },
    hub: () => hub,
    stop() {
      stopping ??= (async () => {
        await hub?.stop();
      })();
      return stopping;
    },
  };
  return runtime;
}
