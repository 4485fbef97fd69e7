import { readWholeNumberSettings } from "../settings.js";

/**
 * The dev host dashboard's knobs (`/_dev`), named once: app setting (read from the environment, so
 * local.settings.json Values work), unit, default and range. Dev host only — nothing of the dashboard ships with the
 * app. See docs/dashboard.md.
 */
export const DASHBOARD_SETTINGS = {
  enabled: {
    setting: "DEV_DASHBOARD_ENABLED",
    unit: "flag",
    default: 1,
    min: 0,
    max: 1,
    description:
      "1 serves the dashboard at /_dev (and samples the RU meter in the background); 0 turns it off.",
  },
  pollIntervalMs: {
    setting: "DEV_DASHBOARD_POLL_INTERVAL_MS",
    unit: "ms",
    default: 1_500,
    min: 250,
    max: 60_000,
    description: "How often the page asks /_dev/api/state for a new picture.",
  },
  hiddenPollIntervalMs: {
    setting: "DEV_DASHBOARD_HIDDEN_POLL_INTERVAL_MS",
    unit: "ms",
    default: 15_000,
    min: 250,
    max: 600_000,
    description:
      "How often a page that is not visible (another tab, minimised) asks for a new picture; it asks at once when shown again.",
  },
  minRefreshMs: {
    setting: "DEV_DASHBOARD_MIN_REFRESH_MS",
    unit: "ms",
    default: 1_000,
    min: 0,
    max: 60_000,
    description:
      "A state younger than this is served again instead of reading Cosmos DB again, so several open pages cost no more than one.",
  },
  lagIntervalMs: {
    setting: "DEV_DASHBOARD_LAG_INTERVAL_MS",
    unit: "ms",
    default: 5_000,
    min: 0,
    max: 600_000,
    description:
      "Estimated lag is read at most this often (one change feed read per lease on the monitored container); in between the last values are shown. 0 = on every refresh.",
  },
  sampleIntervalMs: {
    setting: "DEV_DASHBOARD_SAMPLE_INTERVAL_MS",
    unit: "ms",
    default: 2_000,
    min: 250,
    max: 60_000,
    description:
      "How often the emulator's RU meter is sampled in the background for the RU/s table and plot (a refresh of the page also takes a sample).",
  },
  historyMs: {
    setting: "DEV_DASHBOARD_HISTORY_MS",
    unit: "ms",
    default: 300_000,
    min: 10_000,
    max: 3_600_000,
    description: "How far back the RU/s plot (and the kept samples) reach.",
  },
  rateWindowMs: {
    setting: "DEV_DASHBOARD_RATE_WINDOW_MS",
    unit: "ms",
    default: 10_000,
    min: 1_000,
    max: 600_000,
    description: "The RU/s table's figures are averages over the samples of this last window.",
  },
  handoffsKept: {
    setting: "DEV_DASHBOARD_HANDOFFS_KEPT",
    unit: "count",
    default: 50,
    min: 1,
    max: 10_000,
    description: "Hand-offs (owner changes seen between refreshes) listed, newest first.",
  },
  latestInstances: {
    setting: "DEV_DASHBOARD_LATEST_INSTANCES",
    unit: "count",
    default: 10,
    min: 0,
    max: 1_000,
    description: "Durable orchestration instances listed (most recently created first).",
  },
  instancesRescanMs: {
    setting: "DEV_DASHBOARD_INSTANCES_RESCAN_MS",
    unit: "ms",
    default: 60_000,
    min: 1_000,
    max: 3_600_000,
    description:
      "The orchestrations panel lists the task hub's instances in full this often (a purged instance leaves the panel then); in between each refresh reads only the changes, from the hub container's change feed.",
  },
  sourceTimeoutMs: {
    setting: "DEV_DASHBOARD_SOURCE_TIMEOUT_MS",
    unit: "ms",
    default: 5_000,
    min: 100,
    max: 120_000,
    description:
      "A panel whose data source has not answered within this long shows an error for this refresh (the others are unaffected).",
  },
} as const;

export type DashboardSettings = { -readonly [K in keyof typeof DASHBOARD_SETTINGS]: number };

/** Reads every knob from `env`; a bad value is a DevHostError naming each bad setting. */
export function readDashboardSettings(env: NodeJS.ProcessEnv = process.env): DashboardSettings {
  return readWholeNumberSettings("dashboard settings", DASHBOARD_SETTINGS, env);
}
