import { readWholeNumberSettings } from "../settings.js";

/**
 * The app worker process's knobs, named once: app setting (read from the dev host's environment, so
 * local.settings.json Values work), unit, default and range. Dev host only: in Azure the Functions host restarts
 * its language workers on its own schedule.
 */
export const WORKER_KNOBS = {
  restartBackoffMs: {
    setting: "DEVHOST_WORKER_RESTART_BACKOFF_MS",
    unit: "ms",
    default: 500,
    min: 0,
    max: 60_000,
    description:
      "After a worker process exits unexpectedly, the next one starts at once; if that one exits too before an invocation completed in it, the wait doubles from this value (up to the maximum) before each further start.",
  },
  restartBackoffMaxMs: {
    setting: "DEVHOST_WORKER_RESTART_BACKOFF_MAX_MS",
    unit: "ms",
    default: 10_000,
    min: 0,
    max: 600_000,
    description: "The longest wait between two starts of a crashing worker process.",
  },
  loadTimeoutMs: {
    setting: "DEVHOST_WORKER_LOAD_TIMEOUT_MS",
    unit: "ms",
    default: 60_000,
    min: 100,
    max: 3_600_000,
    description:
      "How long a worker process has to load the app (its entry files, top-level awaits included) before it is killed and the load counts as failed. Timed apart from functionTimeout: loading is not an invocation, and requests waiting for it do not time it out.",
  },
  responseChunkBytes: {
    setting: "DEVHOST_WORKER_RESPONSE_CHUNK_BYTES",
    unit: "bytes",
    default: 1_048_576,
    min: 1_024,
    max: 104_857_600,
    description:
      "An HTTP response body larger than this crosses from the worker process in pieces of this size, one at a time as the client takes them, so that one large answer never holds the channel every other invocation's messages go through.",
  },
  stopGraceMs: {
    setting: "DEVHOST_WORKER_STOP_GRACE_MS",
    unit: "ms",
    default: 1_000,
    min: 0,
    max: 60_000,
    description:
      "On stop, how long the worker process has to run the app's appTerminate hooks and exit before it is killed.",
  },
  streamProxyWaitMs: {
    setting: "DEVHOST_STREAM_PROXY_WAIT_MS",
    unit: "ms",
    default: 5_000,
    min: 0,
    max: 600_000,
    description:
      "In the worker, how long a request to the HTTP stream proxy waits for the invocation its x-ms-invocation-id names before it is answered 404.",
  },
  inspectorPortWaitMs: {
    setting: "DEVHOST_WORKER_INSPECTOR_PORT_WAIT_MS",
    unit: "ms",
    default: 5_000,
    min: 0,
    max: 600_000,
    description:
      "With a debugger port in the worker's node arguments (--inspect): how long a worker process's start waits for another process to free that port (checked every INSPECTOR_PORT_POLL_MS) before it starts anyway, without its debugger.",
  },
} as const;

/** How often a worker start that waits for its debugger port checks it again (ms); see inspectorPortWaitMs. */
export const INSPECTOR_PORT_POLL_MS = 100;

export type WorkerSettings = { -readonly [K in keyof typeof WORKER_KNOBS]: number };

export function readWorkerSettings(env: NodeJS.ProcessEnv = process.env): WorkerSettings {
  return readWholeNumberSettings("worker process settings", WORKER_KNOBS, env, (s) =>
    s.restartBackoffMaxMs < s.restartBackoffMs
      ? `DEVHOST_WORKER_RESTART_BACKOFF_MAX_MS (${s.restartBackoffMaxMs}) must not be below DEVHOST_WORKER_RESTART_BACKOFF_MS (${s.restartBackoffMs}).`
      : undefined,
  );
}
