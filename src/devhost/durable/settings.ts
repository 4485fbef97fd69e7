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
      "Wait after a read of the task hub's change feed found nothing. A host's own writes wake it at once, so this only bounds how soon another host's work is seen.",
  },
  timerScanIntervalMs: {
    setting: "DURABLE_TIMER_SCAN_INTERVAL_MS",
    unit: "ms",
    default: 30_000,
    min: 100,
    max: 600_000,
    description:
      "How often durable timers not armed on this host (a crashed host's, whose feed page was checkpointed) are looked for; also at start. The change feed arms the others at once. Each scan is one cross-partition query.",
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
} as const;

export type DurableHubSettings = { -readonly [K in keyof typeof DURABLE_HUB_SETTINGS]: number };

/** Reads every knob from `env`; a bad value is a DevHostError naming each bad setting. */
export function readDurableHubSettings(env: NodeJS.ProcessEnv = process.env): DurableHubSettings {
  return readWholeNumberSettings("durable task hub settings", DURABLE_HUB_SETTINGS, env, (s) =>
    s.leaseRenewIntervalMs >= s.leaseExpirationIntervalMs
      ? `DURABLE_LEASE_RENEW_INTERVAL_MS (${s.leaseRenewIntervalMs}) must be below DURABLE_LEASE_EXPIRATION_INTERVAL_MS (${s.leaseExpirationIntervalMs}).`
      : undefined,
  );
}
