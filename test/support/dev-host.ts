import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCosmosRuntime } from "../../packages/devhost/src/builtinCosmos.js";
import {
  type LogSink,
  type RunningDevHost,
  type StartedApp,
  startDevHost,
  startFromCommandLine,
} from "../../packages/devhost/src/index.js";

export interface InProcessDevHost {
  started: StartedApp;
  /** The dev host's data directory (the embedded emulator's data), a fresh temporary one. */
  dataDir: string;
  /** Stops the dev host and removes its data directory. */
  stop(): Promise<void>;
}

/**
 * `cosmos-feed start` in this process on an app, over real sockets: any free port, the embedded emulator on any free
 * port with a fresh data directory (`<tmp>/<dataDirPrefix>…`), no build; the environment is this process's plus `env`.
 * Logs go to `logSink` (default: nowhere).
 */
export async function startInProcessDevHost(options: {
  appDir: string;
  dataDirPrefix: string;
  env?: Record<string, string>;
  containers?: string;
  logSink?: LogSink;
}): Promise<InProcessDevHost> {
  const dataDir = mkdtempSync(join(tmpdir(), options.dataDirPrefix));
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true });
  let started: StartedApp;
  try {
    started = await startFromCommandLine({
      appDir: options.appDir,
      port: 0,
      cosmos: "emulator",
      emulatorPort: 0,
      dataDir,
      build: false,
      containers: options.containers,
      env: { ...process.env, ...options.env },
      logSink: options.logSink ?? (() => {}),
    });
  } catch (e) {
    removeDataDir();
    throw e;
  }
  return {
    started,
    dataDir,
    stop: async () => {
      await started.stop();
      removeDataDir();
    },
  };
}

/**
 * A dev host on `appDir` in this process with the Cosmos DB extension (its trigger and bindings) as `start` wires
 * it, creating the containers the app names when missing (the emulator's mode); `close` stops both.
 */
export async function startCosmosDevHost(options: {
  appDir: string;
  env: NodeJS.ProcessEnv;
  logSink: LogSink;
}): Promise<{ host: RunningDevHost; close(): Promise<void> }> {
  const cosmos = createCosmosRuntime({ env: options.env, createMissing: () => true });
  const host = await startDevHost({
    appDir: options.appDir,
    port: 0,
    env: options.env,
    logSink: options.logSink,
    triggers: { cosmosDBTrigger: cosmos.cosmosDBTrigger },
    extensions: cosmos.extensions,
  }).catch((e: unknown) => {
    cosmos.dispose();
    throw e;
  });
  return {
    host,
    async close() {
      await host.close();
      cosmos.dispose();
    },
  };
}
