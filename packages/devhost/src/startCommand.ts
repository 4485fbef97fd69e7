import { existsSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { EmulatorStartError, type RunningEmulator, startEmulator } from "@cosmos-feed/emulator";
import { type DataFolderLock, lockDataFolder } from "@cosmos-feed/emulator/lifecycle";
import { readAppConfig } from "./appConfig.js";
import { type AppRun, type AppRunSession, startAppRun } from "./appRun.js";
import { ensureBuilt, runBuild } from "./build.js";
import { createDefinedContainers, readContainerDefinitions } from "./containerDefinitions.js";
import { emulatorAgent } from "./cosmos/emulatorAgent.js";
import { type CosmosTarget, pointConnections } from "./cosmosTarget.js";
import type { DevDashboard } from "./dashboard/index.js";
import { type EmulatorTlsChoice, prepareEmulatorTls } from "./emulatorTls.js";
import { DevHostError } from "./errors.js";
import type { DevHostOptions, RunningDevHost } from "./host.js";
import { parseCorsPolicy } from "./http/cors.js";
import { startAppCompiler } from "./lifecycle/app-compiler.js";
import { LIFECYCLE } from "./lifecycle/settings.js";
import { entryFiles, readBuildSources, watchRoots } from "./lifecycle/sources.js";
import { type FileChange, type SourceWatcher, watchSources } from "./lifecycle/watch.js";
import { consoleSink, type LogSink } from "./logger.js";
import { describeThroughputMode, resolveThroughputMode } from "./throughputMode.js";
import { parseInspectFlag } from "./worker/node-arguments.js";

export { DURABLE_DEFAULTS } from "./appRun.js";

/** The emulator's port for `cosmos-feed start` (the Cosmos DB emulator's usual 8081). */
export const DEFAULT_EMULATOR_PORT = 8081;

/** Options of `startFromCommandLine` (what `cosmos-feed start` takes). */
export interface StartCommandOptions {
  /** The app folder. Default: the working directory. */
  appDir?: string;
  /** The HTTP port. Default: local.settings.json Host.LocalHttpPort, else 7071. */
  port?: number;
  /** "emulator", a connection string, or undefined (the app's settings; the emulator when none resolves). */
  cosmos?: string;
  /** The embedded emulator's port. Default DEFAULT_EMULATOR_PORT (8081). */
  emulatorPort?: number;
  /**
   * The embedded emulator's HTTPS (emulatorTls.ts): `auto` (the CLI's default) a certificate made once into
   * `<dataDir>/tls`, or one given, HTTP answered on the same port too; `off` (the default here) HTTP only.
   */
  emulatorTls?: EmulatorTlsChoice;
  /**
   * The data folder: the embedded emulator's data (locked for this process while the emulator runs) and the timer
   * statuses (`<dataDir>/timers`); default `<appDir>/.data/cosmos-emulator` (persistent).
   */
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
  /** Run `npm run build` when `main` matches no file or the sources are newer than the build (default true). */
  build?: boolean;
  /** Rebuild and restart the app when a source file changes (see lifecycle/watch.ts). */
  watch?: boolean;
  /**
   * `--inspect[=[host:]port]`: node's inspector in the worker process (127.0.0.1:9229 by default), on the same port
   * after every restart (a crash, --watch); over the inspector flags of languageWorkers__node__arguments.
   */
  inspect?: string | true;
  /** Where log lines go (console by default). */
  logSink?: LogSink;
  /** The environment the app's settings resolve in (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Extra dev host options (trigger runners, binding extensions). */
  host?: Pick<DevHostOptions, "triggers" | "extensions" | "hostname">;
}

/** Options of `StartedApp.stop`. */
export interface StopOptions {
  /** Told what the stop waits for next (the CLI names it if the stop overruns). */
  phase?: (what: string) => void;
}

/** A started app: its dev host, the embedded emulator, the dashboard and the data folder. */
export interface StartedApp {
  /** The running dev host (after a --watch restart, the new one). */
  readonly host: RunningDevHost;
  /** The embedded emulator; undefined when the app uses another Cosmos DB. */
  readonly emulator: RunningEmulator | undefined;
  /** The live dashboard at /_dev (docs/dashboard.md). */
  readonly dashboard: DevDashboard;
  /** The data folder (the emulator's data, the timer statuses). */
  readonly dataDir: string;
  /**
   * Stops the app gracefully (leases released) and starts it again on the same port and emulator, as --watch does
   * after a change. An app that fails to load is logged and its port keeps answering: the dev host's own routes as
   * before, the app's with 503 and the load error (`host` stays the last one that ran); the next restart tries again.
   */
  restart(): Promise<void>;
  /**
   * Graceful stop, bounded (lifecycle/settings.ts): the app (HTTP drains, triggers stop and release their leases),
   * then the emulator, and its data folder is unlocked.
   */
  stop(options?: StopOptions): Promise<void>;
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

/**
 * Core Tools' check before `func start`: the folder must have host.json or local.settings.json. Without host.json
 * (but with local.settings.json) the host runs on defaults (it writes a default host.json; the dev host does not).
 */
function checkProjectRoot(appDir: string, warn: (line: string) => void): void {
  const hostJson = existsSync(join(appDir, "host.json"));
  if (!hostJson && !existsSync(join(appDir, "local.settings.json"))) {
    throw new DevHostError(
      `Unable to find project root. Expecting to find one of host.json, local.settings.json in project root (${appDir}).`,
      { code: "ProjectRootMissing" },
    );
  }
  if (!hostJson) warn(`No host configuration file found (${join(appDir, "host.json")}); using the defaults.`);
}

/** The emulator's start errors with the advice that fits `start` (its flags, its data folder). */
function emulatorAdvice(e: unknown, port: number, dataDir: string, portFrom: string | undefined): unknown {
  if (!(e instanceof EmulatorStartError)) return e;
  if (e.code === "PORT_IN_USE") {
    const fix = portFrom
      ? `${portFrom} names the local emulator there: point it at another port, or free that one`
      : "choose another with --emulator-port <n> (or --emulator-port 0 for any free port)";
    return new DevHostError(
      `Port ${port} on 127.0.0.1 (the embedded Cosmos DB emulator's) is already in use: ${fix}.`,
      { code: "EmulatorPortInUse", cause: e },
    );
  }
  if (e.code === "DATA_DIR_UNUSABLE") {
    const cause = e.cause as NodeJS.ErrnoException | undefined;
    if (cause?.code === "ERR_DLOPEN_FAILED") return e; // better-sqlite3 built for another Node.js: its own advice
    const reason = [cause?.code, cause?.message].filter(Boolean).join(": ") || e.message;
    return new DevHostError(
      `The emulator's data in '${dataDir}' cannot be opened (${reason}): move or delete that folder (the emulator then starts empty), or use another with --data-dir <dir>.`,
      { code: "EmulatorDataUnusable", cause: e },
    );
  }
  return e;
}

/**
 * `cosmos-feed start`: build if needed, choose the Cosmos DB target, start the emulator (locking its data folder)
 * when it is the target, serve; with `watch`, rebuild and restart on source changes.
 */
export async function startFromCommandLine(options: StartCommandOptions): Promise<StartedApp> {
  const env = options.env ?? process.env;
  const sink = options.logSink ?? consoleSink;
  const say: AppRunSession["say"] = (message, level = "information") =>
    sink({ time: new Date(), level, category: "Host", message });
  const warn = (message: string) => say(message, "warning");
  const inspect = options.inspect === undefined ? undefined : parseInspectFlag(options.inspect);
  const appDir = resolve(options.appDir ?? ".");
  checkProjectRoot(appDir, warn);
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
  const dataDir = resolve(options.dataDir ?? join(appDir, ".data", "cosmos-emulator"));
  let lock: DataFolderLock | undefined;
  // A hard exit (a forced second Ctrl-C) still unlocks the folder; a kill -9 leaves a stale lock, taken over later.
  const unlockOnExit = () => lock?.release();
  const unlock = () => {
    lock?.release();
    process.off("exit", unlockOnExit);
  };

  let emulator: RunningEmulator | undefined;
  let untrust: (() => void) | undefined;
  let run: AppRun | undefined;
  let watcher: SourceWatcher | undefined;
  try {
    const build = options.build ?? true;
    await ensureBuilt(config, { build, log: say, warn });
    // Before the worker starts (it reads NODE_EXTRA_CA_CERTS once): not needed when --cosmos names an account.
    const tls =
      target.kind === "connectionString"
        ? undefined
        : prepareEmulatorTls(options.emulatorTls ?? "off", dataDir, env);
    // The deployment's throughput mode (COSMOS_THROUGHPUT_MODE, as azd passes it to Bicep): the embedded emulator
    // runs serverless or provisioned as that account would be, and its containers get what Bicep gives them.
    const throughput = resolveThroughputMode(appDir, env);
    // On the emulator, databases and containers the app names are created when missing (with a log line).
    const definitions = readContainerDefinitions(
      resolve(options.containers ?? join(appDir, "src", "shared", "containers.json")),
      throughput,
    );
    if (options.containers && !definitions) {
      throw new DevHostError(`--containers: ${resolve(options.containers)} does not exist.`, {
        code: "InvalidOption",
      });
    }
    const session: AppRunSession = {
      appDir,
      ...(options.allowedHosts !== undefined ? { allowedHosts: options.allowedHosts } : {}),
      ...(inspect !== undefined ? { inspect } : {}),
      env,
      sink,
      say,
      target,
      settings: config.settings,
      definitions,
      dataDir,
      cors,
      host: options.host,
      emulator: () => emulator,
      useEmulator: async (names, why, settingPort) => {
        if (!emulator) {
          // One emulator per data folder: a second one on the same SQLite database fails every write.
          if (!lock) {
            lock = await lockDataFolder(dataDir, { holder: `cosmos-feed start ${appDir}`, log: say });
            process.on("exit", unlockOnExit);
          }
          const port = settingPort ?? options.emulatorPort ?? DEFAULT_EMULATOR_PORT;
          const portFrom = settingPort === undefined ? undefined : names.join(", ");
          // The dev host's allow-list is the emulator's too (its DNS-rebinding guard, packages/emulator/src/hostGuard.ts).
          const allowedHosts = options.allowedHosts ?? config.allowedHosts;
          const capacityMode = throughput.mode === "serverless" ? "serverless" : "provisioned";
          emulator = await startEmulator({
            port,
            dataDir,
            tls: tls?.options,
            allowedHosts,
            capacityMode,
          }).catch((e: unknown) => {
            throw emulatorAdvice(e, port, dataDir, portFrom);
          });
          untrust = tls?.trustInProcess(emulator);
          say(`Cosmos DB emulator listening on ${emulator.endpoint} (data in ${dataDir}); ${why}.`);
          say(describeThroughputMode(throughput));
          if (tls) say(tls.hint);
          if (definitions) {
            const { endpoint, key } = emulator;
            const client = new CosmosClient({ endpoint, key, agent: emulatorAgent(endpoint) });
            try {
              await createDefinedContainers(definitions, client, say);
            } finally {
              client.dispose();
            }
          }
        }
        const changed = pointConnections(names, emulator.connectionString, env);
        if (changed.length)
          say(`Cosmos DB connection settings pointed at the emulator: ${changed.join(", ")}.`);
      },
    };
    let stopping: Promise<void> | undefined;
    let host: RunningDevHost | undefined;
    let dashboard: DevDashboard | undefined;
    const began = (r: AppRun) => {
      run = r;
      host = r.host ?? host; // an app that failed to load: the last one that ran (its port still answers)
      dashboard = r.dashboard;
    };
    const first = startAppRun(session, options.port).then(began);
    // The first start, restarts and the stop take turns: each waits for the one before.
    let turn: Promise<void> = first.catch(() => undefined);
    const restart = (): Promise<void> => {
      turn = turn.then(async () => {
        if (stopping) return;
        say("Restarting host.");
        await run?.stop({ drainMs: LIFECYCLE.stopDrainMs });
        run = undefined;
        try {
          const previous = host ? { app: host.app, port: host.port } : undefined;
          const next = await startAppRun(session, host?.port ?? options.port, previous);
          began(next);
          if (next.host) say("Host restarted.");
        } catch (e) {
          say(
            `The host did not start again: ${(e as Error)?.message ?? String(e)} — fix it and save again.`,
            "error",
          );
        }
      });
      return turn;
    };
    // Watching starts before the first run is up, so that a save during start-up is not missed.
    if (options.watch) watcher = startWatching({ appDir, config, dataDir, build, say, warn, restart });
    await first;

    const stop = (o: StopOptions = {}) => {
      stopping ??= (async () => {
        watcher?.close();
        o.phase?.("a restart in progress");
        await turn;
        await run?.stop({ drainMs: LIFECYCLE.stopDrainMs, phase: o.phase });
        o.phase?.("the emulator");
        await emulator?.close();
        untrust?.();
        unlock();
      })();
      return stopping;
    };
    return {
      get host() {
        return host as RunningDevHost;
      },
      get emulator() {
        return emulator;
      },
      get dashboard() {
        return dashboard as DevDashboard;
      },
      dataDir,
      restart,
      stop,
    };
  } catch (e) {
    watcher?.close();
    await run?.stop({ drainMs: LIFECYCLE.stopDrainMs }).catch(() => undefined);
    await emulator?.close();
    untrust?.();
    unlock();
    throw e;
  }
}

/** --watch: source changes → `npm run build` (when the app builds) → restart; a failed build keeps the old run. */
function startWatching(o: {
  appDir: string;
  config: ReturnType<typeof readAppConfig>;
  dataDir: string;
  build: boolean;
  say: AppRunSession["say"];
  warn: (line: string) => void;
  restart: () => Promise<void>;
}): SourceWatcher {
  const builds = o.build && Boolean(o.config.packageJson.scripts?.build);
  const sources = readBuildSources(o.config);
  const files = sources?.files ?? entryFiles(o.config);
  const roots = watchRoots(o.appDir, files, sources?.folders);
  // A build that is tsc alone runs in a compiler kept alive between saves (lifecycle/app-compiler.ts).
  const compiler = builds ? startAppCompiler(o.config, sources, o.warn) : undefined;
  const then = compiler ? " (then the build's tsc, kept running)" : builds ? " (then `npm run build`)" : "";
  if (roots.length === 0) o.warn("--watch: no source files found to watch.");
  else
    o.say(
      `Watching ${roots.map((r) => `${relative(o.appDir, r.dir) || "."}${r.recursive ? "/**" : ""}`).join(", ")} for changes${then}.`,
    );
  const onChange = async (changes: FileChange[]) => {
    const shown = changes.slice(0, 10);
    for (const c of shown) o.say(`File change of type '${c.type}' detected for '${c.path}'`);
    if (changes.length > shown.length) o.say(`… and ${changes.length - shown.length} more changed files.`);
    if (builds) {
      o.say("File change detected. Starting compilation...");
      const code = (await compiler?.build(changes)) ?? (await runBuild(o.appDir).catch(() => 1));
      if (code !== 0) {
        o.say(
          `\`npm run build\` failed (exit code ${code}); the host keeps running the previous build. Watching for file changes.`,
          "error",
        );
        return;
      }
      o.say("Found 0 errors. Watching for file changes.");
    }
    await o.restart();
  };
  const watcher = watchSources({
    roots,
    ignoreUnder: [...(sources?.outDir ? [sources.outDir] : []), o.dataDir, join(o.appDir, "node_modules")],
    known: files,
    debounceMs: LIFECYCLE.watchDebounceMs,
    onChange,
    onError: o.warn,
  });
  return {
    close() {
      watcher.close();
      compiler?.close();
    },
  };
}
