import { CosmosClient } from "@azure/cosmos";
import { bindingLog } from "./builtinTimer.js";
import { resolveCosmosConnection } from "./connections.js";
import type { TypedData } from "./coreTypes.js";
import {
  type CosmosInputOptions,
  type CosmosOutputOptions,
  readCosmosInput,
  writeCosmosOutput,
} from "./cosmos/bindings.js";
import type { ContainerDefinitionLookup } from "./cosmos/provision.js";
import { CosmosTriggerError, type CosmosTriggerOptions, startCosmosTrigger } from "./cosmos/trigger.js";
import type { BindingExtensions } from "./extensions.js";
import type { TriggerRunnerFactory } from "./host.js";
import { type ListenerRetryOptions, startListenerWithRetry } from "./listenerRetry.js";
import { HostLogger } from "./logger.js";

/**
 * The Cosmos DB side of the dev host: the cosmosDBTrigger runner (cosmos/trigger on the change feed processor),
 * the cosmosDB input and output bindings (cosmos/bindings), and one client per connection setting resolved as the
 * extension resolves it (connections.ts: connection string, or `<NAME>__accountEndpoint` + credential).
 */
export interface CosmosRuntimeOptions {
  env?: NodeJS.ProcessEnv;
  /**
   * Create missing databases and containers that triggers and bindings name, with a log line (the emulator's
   * mode). Asked when a trigger starts or a binding writes: the emulator may be chosen after the app loaded.
   */
  createMissing?: () => boolean;
  /** Partition key, TTL, indexing of a monitored container created by createMissing (default: `/id`). */
  containerDefinition?: ContainerDefinitionLookup;
  /** Background retries of a trigger whose containers are missing at start (listenerRetry.ts; 2 s to 2 min). */
  listenerRetry?: ListenerRetryOptions;
}

export interface CosmosRuntime {
  cosmosDBTrigger: TriggerRunnerFactory;
  extensions: BindingExtensions;
  /** The change feed processor instance name (the lease `Owner`) of a trigger function whose listener runs. */
  ownerOf(functionName: string): string | undefined;
  /** Disposes the clients (after the host stopped). */
  dispose(): void;
}

/** An output binding's typed data → the value the function set (objects arrive as JSON). */
export function fromTypedData(data: TypedData): unknown {
  if (data.json !== undefined) return JSON.parse(data.json);
  if (data.string !== undefined) return data.string;
  if (data.bytes !== undefined) return Buffer.from(data.bytes).toString("utf8");
  return data.int ?? data.double;
}

export function createCosmosRuntime(options: CosmosRuntimeOptions = {}): CosmosRuntime {
  const env = options.env ?? process.env;
  const createMissing = () => options.createMissing?.() ?? false;
  const clients = new Map<string, CosmosClient>();
  const owners = new Map<string, string>();
  // Bindings log through the host's logger once a trigger or the HTTP path has shown it; quiet before that.
  let logger = new HostLogger({ sink: () => {} });
  const clientFor = (setting: string): CosmosClient => {
    let client = clients.get(setting);
    if (!client) {
      const connection = resolveCosmosConnection(setting, env);
      client =
        connection.kind === "key"
          ? new CosmosClient({ endpoint: connection.endpoint, key: connection.key })
          : new CosmosClient({ endpoint: connection.endpoint, aadCredentials: connection.credential });
      clients.set(setting, client);
    }
    return client;
  };

  const cosmosDBTrigger: TriggerRunnerFactory = async (fn, context) => {
    logger = context.logger;
    const binding = fn.bindings[fn.triggerName] as unknown as CosmosTriggerOptions;
    const start = async () => {
      const running = await startCosmosTrigger({
        functionName: fn.metadata.name,
        options: binding,
        retry: fn.metadata.retryOptions,
        clientFor: (setting) => clientFor(setting),
        createMissing: createMissing(),
        containerDefinition: options.containerDefinition,
        log: bindingLog(context.logger, `Function.${fn.metadata.name}`),
        invoke: async (documents, invocation) => {
          const outcome = await context.invoke({
            invocationId: invocation.invocationId,
            reason: `New changes on container ${binding.containerName} at ${new Date().toISOString()}`,
            // The worker's typed data for a batch: the documents as one JSON array.
            inputData: [{ name: fn.triggerName, data: { json: JSON.stringify(documents) } }],
            retryContext: {
              retryCount: invocation.retryContext.retryCount,
              maxRetryCount: invocation.retryContext.maxRetryCount,
            },
          });
          if (outcome.error !== undefined) throw outcome.error;
        },
      });
      owners.set(fn.metadata.name, running.processor.instanceName);
      return running;
    };
    // Missing containers do not stop the host: the listener start is retried, as the Functions host does, so
    // containers created on first use (an app's own ensure step, a script, Bicep) bring the trigger up.
    return startListenerWithRetry({
      ...options.listenerRetry,
      functionName: fn.metadata.name,
      start,
      retryable: (e) => e instanceof CosmosTriggerError && e.code === "ContainerNotFound",
      log: (level, message) => context.logger.log(level, message, { category: "Host.Startup" }),
    });
  };

  const extensions: BindingExtensions = {
    inputs: {
      cosmosDB: async (binding, bindingData) => {
        const input = binding as unknown as CosmosInputOptions;
        const value = await readCosmosInput({
          options: input,
          client: clientFor(input.connection),
          triggerMetadata: bindingData,
        });
        return value === undefined ? undefined : { json: JSON.stringify(value) };
      },
    },
    outputs: {
      cosmosDB: async (binding, data) => {
        const output = binding as unknown as CosmosOutputOptions;
        await writeCosmosOutput({
          options: output,
          client: clientFor(output.connection),
          value: fromTypedData(data),
          createMissing: createMissing(),
          log: bindingLog(logger, "Host.Bindings"),
        });
      },
    },
  };

  return {
    cosmosDBTrigger,
    extensions,
    ownerOf: (functionName) => owners.get(functionName),
    dispose: () => {
      for (const c of clients.values()) c.dispose();
      clients.clear();
    },
  };
}
