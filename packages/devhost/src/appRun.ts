import { createHash } from "node:crypto";
import { hostname } from "node:os";
import type { CosmosClient } from "@azure/cosmos";
import { readConnectionString } from "@cosmos-feed/core/cosmos/client";
import type { RunningEmulator } from "@cosmos-feed/emulator";
import { WELL_KNOWN_EMULATOR_KEY } from "@cosmos-feed/emulator";
import { createCosmosRuntime } from "./builtinCosmos.js";
import { timerStatusDir, timerTriggerRunner } from "./builtinTimer.js";
import { type CosmosConnection, createCosmosClient, resolveCosmosConnection } from "./connections.js";
import type { ContainerDefinitions } from "./containerDefinitions.js";
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
import {
  type DevHostOptions,
  type RunningDevHost,
  startDevHost,
  type TriggerRunner,
  type TriggerRunnerFactory,
} from "./host.js";
import type { CorsPolicy } from "./http/cors.js";
import type { LoadedApp } from "./loader.js";
import { serveLoadFailure } from "./loadFailure.js";
import type { LogSink } from "./logger.js";

/** Where the durable task hub lives when the app's container definitions name no `durable` container. */
export const DURABLE_DEFAULTS = {
  databaseName: "devhost-durable",
  containerName: "durable-tasks",
  leaseContainerName: "leases",
} as const;

/** What stays the same across runs of one `cosmos-feed start` (a --watch restart starts a new run). */
export interface AppRunSession {
  appDir: string;
  env: NodeJS.ProcessEnv;
  sink: LogSink;
  say(message: string, level?: "information" | "warning" | "error"): void;
  target: CosmosTarget;
  /** App settings read from local.settings.json (names of Cosmos DB connections among them). */
  settings: Record<string, string>;
  definitions?: ContainerDefinitions;
  /** The data folder: the emulator's data and the timer statuses (`<dataDir>/timers`). */
  dataDir: string;
  cors?: CorsPolicy;
  /** `--allowed-hosts` (overrides local.settings.json `Host.AllowedHosts`). */
  allowedHosts?: string;
  /** `--inspect[=[host:]port]`: the worker process's debugger (every run's, on one port). */
  inspect?: string | true;
  host?: Pick<DevHostOptions, "triggers" | "extensions" | "hostname">;
  /** The embedded emulator, once one runs (it outlives runs). */
  emulator(): RunningEmulator | undefined;
  /** Starts the embedded emulator if none runs yet (`port`: the one a setting names) and points `names` at it. */
  useEmulator(names: string[], why: string, port?: number): Promise<void>;
}

/** One run of the app: the dev host with its triggers, durable task hub and dashboard. */
export interface AppRun {
  /** Undefined when the app failed to load and only the dev host's own routes are served (see loadFailure.ts). */
  host: RunningDevHost | undefined;
  dashboard: DevDashboard;
  /**
   * Graceful stop: no new HTTP, in-flight requests and invocations get `drainMs`, then the triggers stop (leases
   * released) even if some are still running (those are cut), then the durable task hub and the dashboard.
   * `phase` is told what the stop waits for next.
   */
  stop(options: { drainMs: number; phase?: (what: string) => void }): Promise<void>;
}

/** The host instance id of this machine, as Core Tools shows it: a hash of the machine name, 32 hex digits. */
export function hostInstanceId(): string {
  const hash = createHash("sha256").update(hostname()).digest("hex").slice(0, 8).toUpperCase();
  return hash.padStart(32, "0");
}

interface AppAccount {
  connection: CosmosConnection;
  /** For the log: "<endpoint> (<setting>)", "<endpoint> (--cosmos)", "the emulator at <endpoint>". */
  describe: string;
}

/** Resolves once `work` settled (true) or after `ms` (false), whichever is first. */
function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Starts one run of the app (see AppRun) on `port`. With `previous` (a --watch restart), an app that fails to load
 * does not throw: the port keeps answering (loadFailure.ts) until the next restart.
 */
export async function startAppRun(
  session: AppRunSession,
  port: number | undefined,
  previous?: { app: LoadedApp; port: number },
): Promise<AppRun> {
  const { env, definitions, target, say } = session;
  const cosmos = createCosmosRuntime({
    env,
    createMissing: () => session.emulator() !== undefined,
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
    const emulator = session.emulator();
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
  const durableClients: CosmosClient[] = [];
  const durable = createDurableRuntime({
    env,
    extensions: () => extensions,
    location: async () => {
      const base = {
        databaseName: durableDatabase,
        containerName: durableContainer,
        leaseContainerName: durableLeases,
        // The app's definition of its durable container (by role), else the dev host's own (TASK_HUB_CONTAINER).
        containerRequest: definitions?.roles.has("durable")
          ? definitions.requests.get(durableContainer)
          : undefined,
      };
      let account = appAccount();
      if (!account) {
        await session.useEmulator([], "the durable task hub needs Cosmos DB and no connection resolves");
        account = appAccount() as AppAccount;
      }
      const client = createCosmosClient(account.connection);
      durableClients.push(client);
      return { ...base, client, create: account.connection.kind === "key", describe: account.describe };
    },
  });
  const extensions = {
    ...cosmos.extensions,
    inputs: { ...cosmos.extensions.inputs, ...durable.inputs },
  };
  // Every runner started is kept, so that a stop whose drain ran out can stop them (and release their leases).
  const runners: TriggerRunner[] = [];
  const tracked = (factory: TriggerRunnerFactory): TriggerRunnerFactory => {
    return async (fn, context) => {
      const runner = await factory(fn, context);
      runners.push(runner);
      return runner;
    };
  };
  const triggers: Record<string, TriggerRunnerFactory> = session.host?.triggers ?? {
    timerTrigger: timerTriggerRunner({ statusDir: timerStatusDir(session.dataDir) }),
    cosmosDBTrigger: cosmos.cosmosDBTrigger,
    ...durable.triggers,
  };
  // The live dashboard at /_dev: the app's triggers' leases, its locks and durable instances, the RU meter.
  const dashboard = createDevDashboard({
    env,
    emulator: () => session.emulator(),
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
      if (!hub) return undefined;
      const leases = hub.dispatchLeases;
      return {
        hubName: hub.hubName,
        databaseName: durableDatabase,
        containerName: durableContainer,
        ...(leases
          ? {
              dispatch: {
                leaseDatabaseName: durableDatabase,
                leaseContainerName: durableLeases,
                ...leases,
              },
            }
          : {}),
      };
    },
    thisHostOwner: (name) => cosmos.ownerOf(name),
  });
  const release = async () => {
    await dashboard.stop().catch(() => undefined);
    await durable.stop().catch(() => undefined);
    for (const c of durableClients) c.dispose();
    cosmos.dispose();
  };
  let host: RunningDevHost;
  try {
    // Settings that hold Cosmos connections are pointed before the app loads (apps may read them at load) …
    const settingNames = cosmosSettingNames(session.settings, env);
    if (target.kind === "emulator") await session.useEmulator(settingNames, "--cosmos emulator");
    if (target.kind === "connectionString") pointConnections(settingNames, target.value, env);
    host = await startDevHost({
      extensions,
      builtinRoutes: [durable.routes, dashboard.routes],
      listening: (baseUrl) => {
        durable.listening(baseUrl);
        dashboard.listening(baseUrl);
      },
      ...session.host,
      triggers: Object.fromEntries(Object.entries(triggers).map(([type, f]) => [type, tracked(f)])),
      appDir: session.appDir,
      port,
      ...(session.cors ? { cors: session.cors } : {}),
      ...(session.allowedHosts !== undefined ? { allowedHosts: session.allowedHosts } : {}),
      ...(session.inspect !== undefined ? { inspect: session.inspect } : {}),
      env,
      logSink: session.sink,
      // … and the bindings' own connection settings once registration has named them.
      prepare: async (app, logger) => {
        const names = [...new Set([...settingNames, ...bindingConnectionNames(app)])];
        settingNamesForDurable = names;
        if (target.kind === "emulator") await session.useEmulator(names, "--cosmos emulator");
        else if (target.kind === "connectionString") pointConnections(names, target.value, env);
        else if (names.length > 0 && !names.some((n) => connectionResolves(n, env))) {
          await session.useEmulator(names, `no Cosmos DB connection resolves (${names.join(", ")})`);
        } else {
          // A setting naming the local emulator (loopback + the well-known key) with nothing listening there:
          // the embedded emulator takes that port, so sample settings work as written.
          for (const name of names) {
            const local = localEmulatorPort(env[name], WELL_KNOWN_EMULATOR_KEY);
            if (local === undefined || session.emulator() || (await portAnswers(local))) continue;
            const same = names.filter((n) => localEmulatorPort(env[n], WELL_KNOWN_EMULATOR_KEY) === local);
            await session.useEmulator(
              same,
              `${name} names the local emulator on port ${local} and nothing listens there`,
              local,
            );
          }
        }
        await durable.prepare(app, logger);
        dashboard.prepare(app);
      },
    });
  } catch (e) {
    if (!previous) {
      await release();
      throw e;
    }
    const failed = await serveLoadFailure({
      error: e,
      port: previous.port,
      hostname: session.host?.hostname ?? "127.0.0.1",
      previous: previous.app,
      builtinRoutes: [durable.routes, dashboard.routes],
      dashboard,
      session,
      release,
    });
    return { host: undefined, dashboard, stop: failed.close };
  }
  if (dashboard.routes.enabled?.()) say(`Dashboard: ${host.baseUrl}/_dev`);
  // Core Tools' last start-up line, the one tools (Microsoft's e2e harness among them) wait for: here the host
  // holds its data folder (see @cosmos-feed/emulator/lifecycle: packages/emulator/src/lifecycle/dataFolderLock.ts), and HTTP and the triggers run.
  session.sink({
    time: new Date(),
    level: "information",
    category: "Host.General",
    message: `Host lock lease acquired by instance ID '${hostInstanceId()}'.`,
  });

  let stopping: Promise<void> | undefined;
  const stop: AppRun["stop"] = ({ drainMs, phase }) => {
    stopping ??= (async () => {
      phase?.("in-flight requests and invocations");
      const closed = host.close();
      if (!(await settlesWithin(closed, drainMs))) {
        say(
          `In-flight requests or invocations still run after ${drainMs} ms; stopping the triggers now (their leases released) and cutting those.`,
          "warning",
        );
        phase?.("the triggers (releasing their leases)");
        await Promise.allSettled(runners.map((r) => r.stop()));
      }
      phase?.("the durable task hub and the dashboard");
      await release();
    })();
    return stopping;
  };
  return { host, dashboard, stop };
}
