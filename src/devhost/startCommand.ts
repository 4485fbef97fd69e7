import { join, resolve } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { type RunningEmulator, startEmulator, WELL_KNOWN_EMULATOR_KEY } from "../emulator/index.js";
import { readConnectionString } from "../shared/cosmos/client.js";
import { readAppConfig } from "./appConfig.js";
import { ensureBuilt } from "./build.js";
import { createCosmosRuntime } from "./builtinCosmos.js";
import { timerTriggerRunner } from "./builtinTimer.js";
import { type CosmosConnection, createCosmosClient, resolveCosmosConnection } from "./connections.js";
import { createDefinedContainers, readContainerDefinitions } from "./containerDefinitions.js";
import {
  bindingConnectionNames,
  type CosmosTarget,
  connectionResolves,
  cosmosSettingNames,
  localEmulatorPort,
  pointConnections,
  portAnswers,
} from "./cosmosTarget.js";
import { createDevDashboard, type DevDashboard } from "./dashboard/index.js";
import { createDurableRuntime } from "./durable/runtime.js";
import { DevHostError } from "./errors.js";
import { type DevHostOptions, type RunningDevHost, startDevHost } from "./host.js";
import { parseCorsPolicy } from "./http/cors.js";
import { consoleSink, type LogSink } from "./logger.js";

/** Where the durable task hub lives when the app's container definitions name no `durable` container. */
export const DURABLE_DEFAULTS = {
  databaseName: "devhost-durable",
  containerName: "durable-tasks",
  leaseContainerName: "leases",
} as const;

/** The emulator's port for `cosmos-feed start` (the Cosmos DB emulator's usual 8081). */
export const DEFAULT_EMULATOR_PORT = 8081;

export interface StartCommandOptions {
  appDir?: string;
  port?: number;
  /** "emulator", a connection string, or undefined (the app's settings; the emulator when none resolves). */
  cosmos?: string;
  emulatorPort?: number;
  /** Emulator data directory; default `<appDir>/.data/cosmos-emulator` (persistent). */
  dataDir?: string;
  /**
   * Container definitions (this project's containers.json format) for containers created on the emulator;
   * default `<appDir>/src/shared/containers.json` when it exists.
   */
  containers?: string;
  /** Core Tools' `--cors`: comma-separated origins (`*` for any); overrides local.settings.json `Host.CORS`. */
  cors?: string;
  /** Core Tools' `--cors-credentials`; overrides `Host.CORSCredentials`. */
  corsCredentials?: boolean;
  /** `--allowed-hosts`: host names answered besides loopback ones; overrides local.settings.json `Host.AllowedHosts`. */
  allowedHosts?: string;
  /** Run `npm run build` when `main` matches no file (default true). */
  build?: boolean;
  logSink?: LogSink;
  env?: NodeJS.ProcessEnv;
  /** Extra dev host options (trigger runners, binding extensions). */
  host?: Pick<DevHostOptions, "triggers" | "extensions" | "hostname">;
}

export interface StartedApp {
  host: RunningDevHost;
  emulator?: RunningEmulator;
  /** The live dashboard at /_dev (docs/dashboard.md). */
  dashboard: DevDashboard;
  /** Graceful stop: the dev host first (HTTP drains, triggers stop), then the emulator. */
  stop(): Promise<void>;
}

interface AppAccount {
  connection: CosmosConnection;
  /** For the log: "<endpoint> (<setting>)", "<endpoint> (--cosmos)", "the emulator at <endpoint>". */
  describe: string;
}

export function parseCosmosTarget(raw: string | undefined): CosmosTarget {
  if (raw === undefined) return { kind: "auto" };
  if (raw === "emulator") return { kind: "emulator" };
  if (/(^|;)\s*AccountEndpoint\s*=/i.test(raw)) return { kind: "connectionString", value: raw };
  throw new DevHostError(
    "--cosmos is 'emulator' or a Cosmos DB connection string (AccountEndpoint=https://…;AccountKey=…;).",
    { code: "InvalidOption" },
  );
}

/** `cosmos-feed start`: build if needed, choose the Cosmos DB target, start the emulator when it is the target, serve. */
export async function startFromCommandLine(options: StartCommandOptions): Promise<StartedApp> {
  const env = options.env ?? process.env;
  const sink = options.logSink ?? consoleSink;
  const say = (message: string) =>
    sink({ time: new Date(), level: "information", category: "Host", message });
  const appDir = resolve(options.appDir ?? ".");
  const target = parseCosmosTarget(options.cosmos);
  const config = readAppConfig(appDir);
  // Flags win over local.settings.json, as with `func start --cors`.
  const cors =
    options.cors !== undefined || options.corsCredentials !== undefined
      ? parseCorsPolicy(
          options.cors ?? config.cors.origins,
          options.corsCredentials ?? config.cors.credentials,
        )
      : undefined;
  await ensureBuilt(config, { build: options.build ?? true, log: say });

  let emulator: RunningEmulator | undefined;
  const dataRoot = join(appDir, ".data");
  // On the emulator, databases and containers the app names are created when missing (with a log line).
  const definitions = readContainerDefinitions(
    resolve(options.containers ?? join(appDir, "src", "shared", "containers.json")),
  );
  if (options.containers && !definitions) {
    throw new DevHostError(`--containers: ${resolve(options.containers)} does not exist.`, {
      code: "InvalidOption",
    });
  }
  const cosmos = createCosmosRuntime({
    env,
    createMissing: () => emulator !== undefined,
    containerDefinition: definitions?.lookup,
  });
  // Durable Functions: the task hub lives in the durable container of the definitions (else its own names), on
  // the emulator or on the account the app's Cosmos DB connection names.
  const durableDatabase = definitions?.database ?? DURABLE_DEFAULTS.databaseName;
  const durableContainer = definitions?.roles.get("durable") ?? DURABLE_DEFAULTS.containerName;
  const durableLeases = definitions?.roles.get("leases") ?? DURABLE_DEFAULTS.leaseContainerName;
  let settingNamesForDurable: string[] = [];
  /**
   * The account of the app's own containers (the durable task hub, the dashboard's locks and instances): the
   * emulator when it runs, else --cosmos "<connection string>", else the first of the app's Cosmos DB connection
   * settings that resolves; undefined when none does (the task hub then starts the emulator).
   */
  const appAccount = (): AppAccount | undefined => {
    if (emulator) {
      const { endpoint, key } = emulator;
      return {
        connection: { kind: "key", source: "emulator", endpoint, key },
        describe: `the emulator at ${endpoint}`,
      };
    }
    if (target.kind === "connectionString") {
      const parts = readConnectionString(target.value);
      if (!parts)
        throw new DevHostError("--cosmos: the connection string needs AccountEndpoint and AccountKey.", {
          code: "InvalidOption",
        });
      return {
        connection: { kind: "key", source: "--cosmos", ...parts },
        describe: `${parts.endpoint} (--cosmos)`,
      };
    }
    const name = settingNamesForDurable.find((n) => connectionResolves(n, env));
    if (!name) return undefined;
    const connection = resolveCosmosConnection(name, env);
    return { connection, describe: `${connection.endpoint} (${name})` };
  };
  const durable = createDurableRuntime({
    env,
    extensions: () => extensions,
    location: async () => {
      const base = {
        databaseName: durableDatabase,
        containerName: durableContainer,
        leaseContainerName: durableLeases,
      };
      let account = appAccount();
      if (!account) {
        await useEmulator([], "the durable task hub needs Cosmos DB and no connection resolves");
        account = appAccount() as AppAccount;
      }
      const client = createCosmosClient(account.connection);
      durableClients.push(client);
      return { ...base, client, create: account.connection.kind === "key", describe: account.describe };
    },
  });
  const durableClients: CosmosClient[] = [];
  const extensions = {
    ...cosmos.extensions,
    inputs: { ...cosmos.extensions.inputs, ...durable.inputs },
  };
  const triggers = {
    timerTrigger: timerTriggerRunner({ dataDir: dataRoot }),
    cosmosDBTrigger: cosmos.cosmosDBTrigger,
    ...durable.triggers,
  };
  // The live dashboard at /_dev: the app's triggers' leases, its locks and durable instances, the RU meter.
  const dashboard = createDevDashboard({
    env,
    emulator: () => emulator,
    account: () => {
      try {
        return appAccount()?.connection;
      } catch {
        return undefined; // --cosmos without an AccountKey: none resolves (the task hub says why)
      }
    },
    locks:
      definitions?.database && definitions.roles.get("locks")
        ? { databaseName: definitions.database, containerName: definitions.roles.get("locks") as string }
        : undefined,
    durable: () => {
      const hub = durable.hub();
      return hub
        ? { hubName: hub.hubName, databaseName: durableDatabase, containerName: durableContainer }
        : undefined;
    },
    thisHostOwner: (name) => cosmos.ownerOf(name),
  });
  const useEmulator = async (
    names: string[],
    why: string,
    port = options.emulatorPort ?? DEFAULT_EMULATOR_PORT,
  ) => {
    if (!emulator) {
      const dataDir = resolve(options.dataDir ?? join(dataRoot, "cosmos-emulator"));
      emulator = await startEmulator({ port, dataDir });
      say(`Cosmos DB emulator listening on ${emulator.endpoint} (data in ${dataDir}); ${why}.`);
      if (definitions) {
        const client = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key });
        try {
          await createDefinedContainers(definitions, client, say);
        } finally {
          client.dispose();
        }
      }
    }
    const changed = pointConnections(names, emulator.connectionString, env);
    if (changed.length) say(`Cosmos DB connection settings pointed at the emulator: ${changed.join(", ")}.`);
  };
  try {
    // Settings that hold Cosmos connections are pointed before the app loads (apps may read them at load) …
    const settingNames = cosmosSettingNames(config.settings, env);
    if (target.kind === "emulator") await useEmulator(settingNames, "--cosmos emulator");
    if (target.kind === "connectionString") pointConnections(settingNames, target.value, env);
    const host = await startDevHost({
      triggers,
      extensions,
      builtinRoutes: [durable.routes, dashboard.routes],
      listening: (baseUrl) => {
        durable.listening(baseUrl);
        dashboard.listening(baseUrl);
      },
      ...options.host,
      appDir,
      port: options.port,
      ...(cors ? { cors } : {}),
      ...(options.allowedHosts !== undefined ? { allowedHosts: options.allowedHosts } : {}),
      env,
      logSink: sink,
      // … and the bindings' own connection settings once registration has named them.
      prepare: async (app, logger) => {
        const names = [...new Set([...settingNames, ...bindingConnectionNames(app)])];
        settingNamesForDurable = names;
        if (target.kind === "emulator") await useEmulator(names, "--cosmos emulator");
        else if (target.kind === "connectionString") pointConnections(names, target.value, env);
        else if (names.length > 0 && !names.some((n) => connectionResolves(n, env))) {
          await useEmulator(names, `no Cosmos DB connection resolves (${names.join(", ")})`);
        } else {
          // A setting naming the local emulator (loopback + the well-known key) with nothing listening there:
          // the embedded emulator takes that port, so sample settings work as written.
          for (const name of names) {
            const port = localEmulatorPort(env[name], WELL_KNOWN_EMULATOR_KEY);
            if (port === undefined || emulator || (await portAnswers(port))) continue;
            const local = names.filter((n) => localEmulatorPort(env[n], WELL_KNOWN_EMULATOR_KEY) === port);
            await useEmulator(
              local,
              `${name} names the local emulator on port ${port} and nothing listens there`,
              port,
            );
          }
        }
        await durable.prepare(app, logger);
        dashboard.prepare(app);
      },
    });
    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        await host.close();
        await dashboard.stop();
        await durable.stop();
        for (const c of durableClients) c.dispose();
        cosmos.dispose();
        await emulator?.close();
      })();
      return stopping;
    };
    return { host, emulator, dashboard, stop };
  } catch (e) {
    await dashboard.stop().catch(() => undefined);
    await durable.stop().catch(() => undefined);
    for (const c of durableClients) c.dispose();
    cosmos.dispose();
    await emulator?.close();
    throw e;
  }
}
