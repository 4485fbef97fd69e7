import { readWholeNumberSettings } from "../settings.js";

/**
 * The dev host's Durable task hub knobs, named once: app setting (read from the environment, so local.settings.json
 * Values work), unit, default and range. Dev host only — in Azure the Durable extension has its own (host.json
 * durableTask) settings. Shorter than the change feed defaults: a restarted dev host should not wait a minute for
 * the leases of the one it replaced.
 */
export const DURABLE_HUB_SETTINGS = {
  feedPollDelayMs: {
    setting: "DURABLE_FEED_POLL_DELAY_MS",
    unit: "ms",
    default: 500,
    min: 10,
    max: 60_000,
    description:
      "Wait after a read of the task hub's change feed found nothing, and the shortest time between two reads of it. A host runs the work it writes at once, so this only bounds how soon another host's writes are seen.",
  },
  timerScanIntervalMs: {
    setting: "DURABLE_TIMER_SCAN_INTERVAL_MS",
    unit: "ms",
    default: 30_000,
    min: 100,
    max: 600_000,
    description:
      "How often work a crashed host left behind a checkpointed feed page is looked for (timers coming due, activities whose claim expired, messages for other instances, interrupted staged commits); also at start. Timers due within two of these intervals are held in memory. Each scan is one cross-partition query.",
  },
  leaseAcquireIntervalMs: {
    setting: "DURABLE_LEASE_ACQUIRE_INTERVAL_MS",
    unit: "ms",
    default: 2_000,
    min: 100,
    max: 600_000,
    description: "How often a dev host balances the task hub's dispatch leases.",
  },
  leaseExpirationIntervalMs: {
    setting: "DURABLE_LEASE_EXPIRATION_INTERVAL_MS",
    unit: "ms",
    default: 10_000,
    min: 500,
    max: 3_600_000,
    description: "A dispatch lease not renewed for this long (a crashed dev host's) is taken over.",
  },
  leaseRenewIntervalMs: {
    setting: "DURABLE_LEASE_RENEW_INTERVAL_MS",
    unit: "ms",
    default: 3_000,
    min: 100,
    max: 600_000,
    description: "How often a dev host renews its dispatch leases; below the expiration interval.",
  },
  maxConcurrentActivities: {
    setting: "DURABLE_MAX_CONCURRENT_ACTIVITIES",
    unit: "activities",
    default: 32,
    min: 1,
    max: 1_000,
    description:
      "Activities one dev host runs at a time (the others wait for a slot). Activities mostly wait on I/O (Cosmos DB calls), so more than the cores.",
  },
  maxConcurrentOrchestrations: {
    setting: "DURABLE_MAX_CONCURRENT_ORCHESTRATIONS",
    unit: "work items",
    default: 100,
    min: 1,
    max: 10_000,
    description:
      "Orchestration work items (one instance's pending messages, one replay) one dev host runs at a time; host.json extensions.durableTask.maxConcurrentOrchestratorFunctions overrides it.",
  },
  maxPayloadBytes: {
    setting: "DURABLE_MAX_PAYLOAD_BYTES",
    unit: "bytes",
    default: 262_144,
    min: 1_024,
    max: 600_000,
    description:
      "Largest orchestration input, output, activity input or result, or event data (UTF-8 JSON). A client's larger payload is refused with 413; an orchestration's or activity's fails that orchestration or task with the reason. Bounded so that every commit fits one 2 MB document and batch.",
  },
  maxWorkItemAttempts: {
    setting: "DURABLE_MAX_WORK_ITEM_ATTEMPTS",
    unit: "attempts",
    default: 5,
    min: 1,
    max: 100,
    description:
      "Times one work item (an orchestration episode, an activity's recording, a message delivery) is tried before it is poison: the instance fails with the reason and the hub moves on.",
  },
  activityLockMs: {
    setting: "DURABLE_ACTIVITY_LOCK_MS",
    unit: "ms",
    default: 15_000,
    min: 1_000,
    max: 3_600_000,
    description:
      "How long an activity work item stays claimed by the dev host running it (renewed at half this while it runs); an activity whose host died is run again once it passes.",
  },
  stopGraceMs: {
    setting: "DURABLE_STOP_GRACE_MS",
    unit: "ms",
    default: 200,
    min: 0,
    max: 600_000,
    description:
      "On stop, how long running activities may take to finish and record their results, and then how long the dispatch leases' hand-off may take. An activity still running after it is left to run again elsewhere once its claim expires. Short by default, so that a dev host's stop (Ctrl-C, --watch) ends within its 2 s bound.",
  },
  stopWorkItemsMs: {
    setting: "DURABLE_STOP_WORK_ITEMS_MS",
    unit: "ms",
    default: 100,
    min: 0,
    max: 600_000,
    description:
      "On stop, how long orchestration work items in flight (an orchestrator invocation and its commit) may take to end. One still running after it is abandoned, as the Durable extension's task hub worker stops waiting for its work items: the results it held are recorded as messages, its other inputs stay in the task hub and are redone after the restart, and it commits nothing if it ever returns.",
  },
  startEpisodeWaitMs: {
    setting: "DURABLE_START_EPISODE_WAIT_MS",
    unit: "ms",
    default: 1_000,
    min: 0,
    max: 60_000,
    description:
      "A start made through this dev host's client (startNew, the HTTP API): how long it waits for the orchestration's first episode — a slot among the orchestrations running at once, then the invocation — run before anything is stored, so that the instance is created together with that episode in one write. Past it (a busy hub, a slow orchestrator, a breakpoint) the start is written alone and its episode follows as for a start made elsewhere; an episode whose create is already on its way is waited for. 0 always writes the start alone.",
  },
  waitPollMs: {
    setting: "DURABLE_WAIT_POLL_MS",
    unit: "ms",
    default: 2_000,
    min: 50,
    max: 60_000,
    description:
      "Create-and-wait and waitForCompletion: how often a waiting request reads the instance to see another host's progress (this host's own commits and change feed wake it at once).",
  },
  httpTimeoutMs: {
    setting: "DURABLE_HTTP_TIMEOUT_MS",
    unit: "ms",
    default: 240_000,
    min: 100,
    max: 3_600_000,
    description:
      "context.df.callHttp: how long one HTTP exchange (connect, headers, whole body) may take before its task fails with a TimeoutException; the Durable extension's HttpClient timeout (240 s). Each poll of the 202 pattern is one exchange.",
  },
} as const;

/** The durable hub's settings as numbers, by name (DURABLE_HUB_SETTINGS' units). */
export type DurableHubSettings = { -readonly [K in keyof typeof DURABLE_HUB_SETTINGS]: number };

/** Reads every knob from `env`; a bad value is a DevHostError naming each bad setting. */
export function readDurableHubSettings(env: NodeJS.ProcessEnv = process.env): DurableHubSettings {
  return readWholeNumberSettings("durable task hub settings", DURABLE_HUB_SETTINGS, env, (s) =>
    s.leaseRenewIntervalMs >= s.leaseExpirationIntervalMs
      ? `DURABLE_LEASE_RENEW_INTERVAL_MS (${s.leaseRenewIntervalMs}) must be below DURABLE_LEASE_EXPIRATION_INTERVAL_MS (${s.leaseExpirationIntervalMs}).`
      : undefined,
  );
}
