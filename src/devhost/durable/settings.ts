import { DevHostError } from "../errors.js";

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
} as const;

export type DurableHubSettings = { -readonly [K in keyof typeof DURABLE_HUB_SETTINGS]: number };

/** Reads every knob from `env`; a bad value is a DevHostError naming each bad setting. */
export function readDurableHubSettings(env: NodeJS.ProcessEnv = process.env): DurableHubSettings {
  const problems: string[] = [];
  const out = {} as DurableHubSettings;
  for (const [key, k] of Object.entries(DURABLE_HUB_SETTINGS) as [
    keyof DurableHubSettings,
    (typeof DURABLE_HUB_SETTINGS)[keyof DurableHubSettings],
  ][]) {
    const raw = env[k.setting]?.trim();
    if (raw === undefined || raw === "") {
      out[key] = k.default;
      continue;
    }
    const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < k.min || n > k.max) {
      problems.push(
        `${k.setting} must be a whole number of ${k.unit} from ${k.min} to ${k.max} (default ${k.default}); got '${raw}'.`,
      );
      continue;
    }
    out[key] = n;
  }
  if (problems.length === 0 && out.leaseRenewIntervalMs >= out.leaseExpirationIntervalMs) {
    problems.push(
      `DURABLE_LEASE_RENEW_INTERVAL_MS (${out.leaseRenewIntervalMs}) must be below DURABLE_LEASE_EXPIRATION_INTERVAL_MS (${out.leaseExpirationIntervalMs}).`,
    );
  }
  if (problems.length > 0) {
    throw new DevHostError(`Invalid durable task hub settings:\n  ${problems.join("\n  ")}`, {
      code: "InvalidOption",
    });
  }
  return out;
}
