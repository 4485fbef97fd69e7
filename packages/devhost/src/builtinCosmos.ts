import { CosmosClient } from "@azure/cosmos";
import { bindingLog } from "./builtinTimer.js";
import { resolveCosmosConnection } from "./connections.js";
import type { BindingInfo, TypedData } from "./coreTypes.js";
import { appCosmosBindings } from "./cosmos/appBindings.js";
import {
  type CosmosInputOptions,
  type CosmosOutputOptions,
  readCosmosInput,
  writeCosmosOutput,
} from "./cosmos/bindings.js";
import { type AppCosmosBinding, chooseContainerDefinition } from "./cosmos/containerChoice.js";
import { emulatorAgent } from "./cosmos/emulatorAgent.js";
import { translateCosmosOptions } from "./cosmos/optionNames.js";
import { type ContainerDefinitionLookup, ensureContainer } from "./cosmos/provision.js";
import { CosmosTriggerError, type CosmosTriggerOptions, startCosmosTrigger } from "./cosmos/trigger.js";
import { cosmosExtensionMajor } from "./extensionBundle.js";
import type { BindingExtensions } from "./extensions.js";
import type { TriggerRunnerFactory } from "./host.js";
import { LIFECYCLE } from "./lifecycle/settings.js";
import { type ListenerRetryOptions, startListenerWithRetry } from "./listenerRetry.js";
import type { LoadedApp } from "./loader.js";
import { HostLogger } from "./logger.js";

/**
 * The Cosmos DB side of the dev host: the cosmosDBTrigger runner (cosmos/trigger on the change feed processor),
 * the cosmosDB input and output bindings (cosmos/bindings), and one client per connection setting resolved as the
 * extension resolves it (connections.ts: connection string, or `<NAME>__accountEndpoint` + credential).
 */
export interface CosmosRuntimeOptions {
  /** Where connection settings are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * Create missing databases and containers that triggers and bindings name, with a log line (the emulator's
   * mode). Asked when a trigger starts or a binding writes: the emulator may be chosen after the app loaded.
   */
  createMissing?: () => boolean;
  /**
   * Partition key, TTL, indexing of a container created by createMissing (the app's container definitions); for
   * containers it does not define, cosmos/containerChoice.ts chooses (and logs how to choose another).
   */
  containerDefinition?: ContainerDefinitionLookup;
  /** Background retries of a trigger whose containers are missing at start (listenerRetry.ts; 2 s to 2 min). */
  listenerRetry?: ListenerRetryOptions;
}

/** The Cosmos DB trigger runner and bindings to pass to `startDevHost` (`triggers`, `extensions`). */
export interface CosmosRuntime {
  /** Starts a change feed processor per cosmosDBTrigger function. */
  cosmosDBTrigger: TriggerRunnerFactory;
  /** The cosmosDB input and output bindings. */
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

/**
 * Creates the Cosmos DB side of the dev host: the trigger runner, the bindings, and one client per connection
 * setting.
 */
export function createCosmosRuntime(options: CosmosRuntimeOptions = {}): CosmosRuntime {
  const env = options.env ?? process.env;
  const createMissing = () => options.createMissing?.() ?? false;
  const clients = new Map<string, CosmosClient>();
  const owners = new Map<string, string>();
  // Bindings log through the host's logger once the host told it (appLoaded, or a trigger's start); quiet before.
  let logger = new HostLogger({ sink: () => {} });
  // The app's Cosmos DB bindings (told once it loaded): hints for the partition key of containers created here.
  let appBindings: AppCosmosBinding[] = [];
  const clientFor = (setting: string): CosmosClient => {
    let client = clients.get(setting);
    if (!client) {
      const connection = resolveCosmosConnection(setting, env);
      const { endpoint } = connection;
      const agent = emulatorAgent(endpoint); // the embedded emulator over HTTPS: its certificate
      client =
        connection.kind === "key"
          ? new CosmosClient({ endpoint, key: connection.key, agent })
          : new CosmosClient({ endpoint, aadCredentials: connection.credential, agent });
      clients.set(setting, client);
    }
    return client;
  };
  /** "https://…:443/, key from setting COSMOS": where a connection points, for messages (undefined if it does not resolve). */
  const describe = (setting: string): string | undefined => {
    try {
      const c = resolveCosmosConnection(setting, env);
      return `${c.endpoint}, ${c.kind === "key" ? "key" : c.credentialType} from setting ${c.source}`;
    } catch {
      return undefined;
    }
  };
  const appLoaded = (app: LoadedApp, hostLogger?: HostLogger) => {
    appBindings = appCosmosBindings(app);
    if (hostLogger) logger = hostLogger;
  };

  const cosmosDBTrigger: TriggerRunnerFactory = async (fn, context) => {
    logger = context.logger;
    if (appBindings.length === 0) appLoaded(context.app);
    const binding = fn.bindings[fn.triggerName] as unknown as CosmosTriggerOptions;
    const extensionMajor = cosmosExtensionMajor(context.app.config.extensionBundle);
    const containerName = String(
      translateCosmosOptions("trigger", binding, extensionMajor, "").options.containerName,
    );
    const start = async () => {
      const running = await startCosmosTrigger({
        functionName: fn.metadata.name,
        options: binding,
        extensionMajor,
        describeConnection: describe,
        appBindings,
        retry: fn.metadata.retryOptions,
        clientFor: (setting) => clientFor(setting),
        createMissing: createMissing(),
        containerDefinition: options.containerDefinition,
        // A stop (Ctrl-C, --watch) must end within LIFECYCLE.stopDeadlineMs: a short hand-off.
        tuning: { handoffTimeout: LIFECYCLE.triggerHandoffMs },
        log: bindingLog(context.logger, `Function.${fn.metadata.name}`),
        invoke: async (documents, invocation) => {
          const outcome = await context.invoke({
            invocationId: invocation.invocationId,
            reason: `New changes on container ${containerName} at ${new Date().toISOString()}`,
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
    // containers created on first use (an app's own ensure step, a script, Bicep) bring the trigger up. Other
    // failures (options, connection, credentials, endpoint) put this function in error (host.ts); the rest run.
    return startListenerWithRetry({
      ...options.listenerRetry,
      functionName: fn.metadata.name,
      start,
      retryable: (e) => e instanceof CosmosTriggerError && e.code === "ContainerNotFound",
      log: (level, message) => context.logger.log(level, message, { category: "Host.Startup" }),
    });
  };

  /** Creates a container an input or output binding names (emulator mode), choosing its definition as the trigger does. */
  const createFor = async (
    client: CosmosClient,
    o: { databaseName: string; containerName: string },
    role: string,
    own?: { partitionKey: unknown; source: string },
  ) => {
    const choice = chooseContainerDefinition({
      ...o,
      lookup: options.containerDefinition,
      bindings: appBindings,
      own,
    });
    const log = bindingLog(logger, "Host.Bindings");
    await ensureContainer({
      client,
      databaseName: o.databaseName,
      containerName: o.containerName,
      definition: choice.definition,
      choice,
      onCreated: () => {
        for (const line of choice.warnings) log("warning", line);
      },
      log,
      role,
    });
  };

  const extensions: BindingExtensions = {
    appLoaded,
    inputs: {
      cosmosDB: async (binding, bindingData) => {
        const input = asV4<CosmosInputOptions>("input", binding);
        const client = clientFor(input.connection);
        // A missing container fails the invocation, on the emulator too: the extension never creates one for an
        // input binding (CreateIfNotExists "only applies to output bindings", CosmosDBAttribute).
        const value = await readCosmosInput({ options: input, client, triggerMetadata: bindingData });
        return value === undefined ? undefined : { json: JSON.stringify(value) };
      },
    },
    outputs: {
      cosmosDB: async (binding, data) => {
        const output = asV4<CosmosOutputOptions>("output", binding);
        const client = clientFor(output.connection);
        await writeCosmosOutput({
          options: output,
          client,
          value: fromTypedData(data),
          createMissing: createMissing(),
          // On the emulator the container gets the app's definition when it has one (else the binding's key).
          ...(createMissing()
            ? {
                create: () =>
                  createFor(client, output, "written by a cosmosDB output binding", {
                    partitionKey: output.partitionKey,
                    source: "the output binding's partitionKey",
                  }),
              }
            : {}),
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

/**
 * A binding under the 4.x option names. The names are read as written (v3 or v4, cosmos/optionNames.ts): the host's
 * start check (bindingCheck.ts) has already put a function whose names do not match its bundle in error.
 */
function asV4<T>(kind: "input" | "output", binding: BindingInfo): T {
  return translateCosmosOptions(kind, binding, undefined, "").options as T;
}
