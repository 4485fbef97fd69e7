import { CosmosFeedError } from "@cosmos-feed/core/errors";

/**
 * Every knob of the app, named once: its app setting (an environment variable; both hosts put app settings in
 * process.env before the app loads), unit, default and range. `loadSettings()` reads and validates them all and
 * reports every bad one in one error. The library keeps its own defaults (ChangeFeedDefaults, LockDefaults): these
 * values are the app's choices, passed into the trigger options and the lock client.
 */
interface NumberKnob {
  kind: "integer";
  setting: string;
  unit: "ms" | "s" | "items" | "count" | "bytes" | "status";
  default: number;
  min: number;
  max: number;
  /** Allowed values, when only some are (e.g. 409 | 503). */
  oneOf?: readonly number[];
  description: string;
}
interface StringKnob {
  kind: "string";
  setting: string;
  unit: "ncrontab" | "name";
  default: string;
  pattern: RegExp;
  description: string;
}
interface BooleanKnob {
  kind: "boolean";
  setting: string;
  unit: "flag";
  default: boolean;
  description: string;
}
type Knob = NumberKnob | StringKnob | BooleanKnob;

export const SETTINGS = {
  feedPollDelayMs: {
    kind: "integer",
    setting: "FEED_POLL_DELAY_MS",
    unit: "ms",
    default: 1_000,
    min: 100,
    max: 600_000,
    description:
      "Wait after a change feed read found nothing (the trigger's feedPollDelay; the extension's default is 5000 — lower here so reactions are prompt; raise it on serverless, where every poll is billed).",
  },
  summaryPollDelayMs: {
    kind: "integer",
    setting: "SUMMARY_POLL_DELAY_MS",
    unit: "ms",
    default: 5_000,
    min: 100,
    max: 600_000,
    description:
      "The summaries trigger's feedPollDelay: a summary may be up to this late on a quiet feed, and one recount then covers every change of a subscription in that time, where a prompt poll recounted after each.",
  },
  summaryRecountWindowMs: {
    kind: "integer",
    setting: "SUMMARY_RECOUNT_WINDOW_MS",
    unit: "ms",
    default: 10_000,
    min: 0,
    max: 60_000,
    description:
      "The summaries trigger handles at most one page of changes per lease in this time (its handler recounts, then waits out the rest before the next page is read), unless the page was full: a summary may be up to this late while changes keep coming, and a subscription is recounted once per window, not once per page its changes fall in. 0 = read on at once.",
  },
  summaryMaxItemsPerInvocation: {
    kind: "integer",
    setting: "SUMMARY_MAX_ITEMS_PER_INVOCATION",
    unit: "items",
    default: 1_000,
    min: 1,
    max: 10_000,
    description:
      "Most changes one summaries trigger invocation receives. A full page means the trigger is behind: it reads on without waiting out SUMMARY_RECOUNT_WINDOW_MS, so its lag stays bounded; larger than MAX_ITEMS_PER_INVOCATION so a storm's changes of one window fit in one page (the handler's work is one recount per subscription, not per change).",
  },
  leaseAcquireIntervalMs: {
    kind: "integer",
    setting: "LEASE_ACQUIRE_INTERVAL_MS",
    unit: "ms",
    default: 13_000,
    min: 1_000,
    max: 600_000,
    description: "How often a host balances leases (the trigger's leaseAcquireInterval).",
  },
  leaseExpirationIntervalMs: {
    kind: "integer",
    setting: "LEASE_EXPIRATION_INTERVAL_MS",
    unit: "ms",
    default: 60_000,
    min: 5_000,
    max: 3_600_000,
    description:
      "A lease not renewed for this long is taken by another host (the trigger's leaseExpirationInterval).",
  },
  leaseRenewIntervalMs: {
    kind: "integer",
    setting: "LEASE_RENEW_INTERVAL_MS",
    unit: "ms",
    default: 17_000,
    min: 1_000,
    max: 600_000,
    description:
      "How often a host renews its leases (the trigger's leaseRenewInterval); must be below the expiration interval.",
  },
  maxItemsPerInvocation: {
    kind: "integer",
    setting: "MAX_ITEMS_PER_INVOCATION",
    unit: "items",
    default: 100,
    min: 1,
    max: 10_000,
    description:
      "Most changes one trigger invocation receives (more when one transaction's changes would otherwise be split).",
  },
  triggerMaxRetryCount: {
    kind: "integer",
    setting: "TRIGGER_MAX_RETRY_COUNT",
    unit: "count",
    default: 10,
    min: -1,
    max: 1_000,
    description:
      "Retries of a failed Cosmos DB trigger invocation (the host's exponentialBackoff retry; -1 = forever). After the last, the extension checkpoints past the batch: handlers are idempotent, and the summary recounts.",
  },
  triggerRetryMinIntervalMs: {
    kind: "integer",
    setting: "TRIGGER_RETRY_MIN_INTERVAL_MS",
    unit: "ms",
    default: 1_000,
    min: 100,
    max: 600_000,
    description: "First wait before retrying a failed trigger invocation.",
  },
  triggerRetryMaxIntervalMs: {
    kind: "integer",
    setting: "TRIGGER_RETRY_MAX_INTERVAL_MS",
    unit: "ms",
    default: 30_000,
    min: 100,
    max: 3_600_000,
    description: "Longest wait between retries of a failed trigger invocation.",
  },
  lockTtlSeconds: {
    kind: "integer",
    setting: "LOCK_TTL_SECONDS",
    unit: "s",
    default: 10,
    min: 3,
    max: 3_600,
    description: "Subscription lock TTL: how long a crashed request blocks its subscription's mutations.",
  },
  lockWaitMs: {
    kind: "integer",
    setting: "LOCK_WAIT_MS",
    unit: "ms",
    default: 0,
    min: 0,
    max: 30_000,
    description: "How long a mutation waits for a held subscription lock before answering contention.",
  },
  lockContentionStatus: {
    kind: "integer",
    setting: "LOCK_CONTENTION_STATUS",
    unit: "status",
    default: 409,
    min: 409,
    max: 503,
    oneOf: [409, 503],
    description:
      "Status of a mutation refused because the subscription lock is held: 409 Conflict, or 503 (Azure SDK clients retry only 408/429/5xx).",
  },
  listPageSize: {
    kind: "integer",
    setting: "LIST_PAGE_SIZE",
    unit: "items",
    default: 50,
    min: 1,
    max: 1_000,
    description: "Resources per page of a list when the request names no $top.",
  },
  maxRequestBodyBytes: {
    kind: "integer",
    setting: "MAX_REQUEST_BODY_BYTES",
    unit: "bytes",
    default: 65_536,
    min: 1_024,
    max: 2_000_000,
    description: "Largest PUT/PATCH body accepted (a larger one is a 400 BodyTooLarge).",
  },
  activityMaxAttempts: {
    kind: "integer",
    setting: "ACTIVITY_MAX_ATTEMPTS",
    unit: "count",
    default: 3,
    min: 1,
    max: 100,
    description:
      "Attempts of each provisioning activity (durable RetryOptions.maxNumberOfAttempts); after the last failure the orchestration marks the resource Failed.",
  },
  activityFirstRetryIntervalMs: {
    kind: "integer",
    setting: "ACTIVITY_FIRST_RETRY_INTERVAL_MS",
    unit: "ms",
    default: 1_000,
    min: 10,
    max: 600_000,
    description:
      "Durable timer before a failed activity's second attempt (RetryOptions.firstRetryIntervalInMilliseconds; doubles each attempt).",
  },
  operationTtlSeconds: {
    kind: "integer",
    setting: "OPERATION_TTL_SECONDS",
    unit: "s",
    default: 604_800,
    min: 3_600,
    max: 31_536_000,
    description:
      "How long an operation's status stays readable after its last write (its document's ttl; 7 days by default, as ARM keeps operation statuses).",
  },
  operationStallSeconds: {
    kind: "integer",
    setting: "OPERATION_STALL_SECONDS",
    unit: "s",
    default: 300,
    min: 30,
    max: 86_400,
    description:
      "An unfinished operation whose last write is older than this is reconciled by the reconcileOperations timer: its orchestration started if it never was, the operation ended if its orchestration ended without ending it.",
  },
  operationReconcileSchedule: {
    kind: "string",
    setting: "OPERATION_RECONCILE_SCHEDULE",
    unit: "ncrontab",
    default: "0 * * * * *",
    pattern: /^\S+( \S+){5}$/,
    description:
      "When the reconcileOperations timer looks for stalled operations: six-field NCRONTAB (seconds first).",
  },
  lagReportSchedule: {
    kind: "string",
    setting: "LAG_REPORT_SCHEDULE",
    unit: "ncrontab",
    default: "0 */5 * * * *",
    pattern: /^\S+( \S+){5}$/,
    description: "When the timer logs change feed lag: six-field NCRONTAB (seconds first).",
  },
  ensureContainers: {
    kind: "boolean",
    setting: "COSMOS_ENSURE_CONTAINERS",
    unit: "flag",
    default: false,
    description:
      "Create the database and the containers of src/shared/containers.json that are missing, on first use. Only where the app may create them (the emulator, a dev account); in Azure, Bicep creates them and the app's identity has data-plane rights only.",
  },
  cosmosConnectionSetting: {
    kind: "string",
    setting: "COSMOS_CONNECTION_SETTING",
    unit: "name",
    default: "COSMOS_CONNECTION",
    pattern: /^[A-Za-z_][A-Za-z0-9_]*$/,
    description:
      "Name of the app setting holding the Cosmos DB connection: a connection string, or the prefix of <NAME>__accountEndpoint (+ __credential, __clientId).",
  },
} as const satisfies Record<string, Knob>;

export type SettingName = keyof typeof SETTINGS;
export type Settings = {
  [K in SettingName]: (typeof SETTINGS)[K] extends NumberKnob
    ? number
    : (typeof SETTINGS)[K] extends BooleanKnob
      ? boolean
      : string;
};

/** One or more app settings are invalid; `problems` lists each, with its setting name. */
export class InvalidSettingsError extends CosmosFeedError {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid app settings:\n  ${problems.join("\n  ")}`, { code: "InvalidSettings" });
  }
}

function describeRange(k: NumberKnob): string {
  return k.oneOf ? `one of ${k.oneOf.join(", ")}` : `a whole number of ${k.unit} from ${k.min} to ${k.max}`;
}

/**
 * Reads every knob from `env` (default process.env). An unset or blank setting takes its default. Throws
 * InvalidSettingsError listing every bad value (setting name, what is allowed, the default, what was given).
 */
export function loadSettings(env: Record<string, string | undefined> = process.env): Settings {
  const problems: string[] = [];
  const out: Record<string, number | string | boolean> = {};
  for (const [key, knob] of Object.entries(SETTINGS) as [SettingName, Knob][]) {
    const raw = env[knob.setting]?.trim();
    if (raw === undefined || raw === "") {
      out[key] = knob.default;
      continue;
    }
    if (knob.kind === "boolean") {
      const v = raw.toLowerCase();
      if (v !== "true" && v !== "false") {
        problems.push(`${knob.setting} must be true or false (default ${knob.default}); got '${raw}'.`);
        continue;
      }
      out[key] = v === "true";
    } else if (knob.kind === "integer") {
      const n = /^-?\d+$/.test(raw) ? Number(raw) : Number.NaN;
      const ok =
        Number.isSafeInteger(n) && n >= knob.min && n <= knob.max && (!knob.oneOf || knob.oneOf.includes(n));
      if (!ok) {
        problems.push(
          `${knob.setting} must be ${describeRange(knob)} (default ${knob.default}); got '${raw}'.`,
        );
        continue;
      }
      out[key] = n;
    } else {
      if (!knob.pattern.test(raw)) {
        problems.push(
          `${knob.setting} must be ${knob.unit === "ncrontab" ? "a six-field NCRONTAB expression such as '0 */5 * * * *'" : "an app setting name"} (default '${knob.default}'); got '${raw}'.`,
        );
        continue;
      }
      out[key] = raw;
    }
  }
  const s = out as Settings;
  if (problems.length === 0 && s.leaseRenewIntervalMs >= s.leaseExpirationIntervalMs) {
    problems.push(
      `LEASE_RENEW_INTERVAL_MS (${s.leaseRenewIntervalMs}) must be below LEASE_EXPIRATION_INTERVAL_MS (${s.leaseExpirationIntervalMs}): leases would expire between renewals.`,
    );
  }
  if (problems.length === 0 && s.triggerRetryMinIntervalMs > s.triggerRetryMaxIntervalMs) {
    problems.push(
      `TRIGGER_RETRY_MIN_INTERVAL_MS (${s.triggerRetryMinIntervalMs}) must not exceed TRIGGER_RETRY_MAX_INTERVAL_MS (${s.triggerRetryMaxIntervalMs}).`,
    );
  }
  if (problems.length > 0) throw new InvalidSettingsError(problems);
  return s;
}

/**
 * How long an HTTP request of the app may run before its work is abandoned (its AbortSignal fires). Not a knob:
 * the platform's limit. Azure's front end answers the caller itself after 230 s whatever the function timeout
 * (https://learn.microsoft.com/azure/azure-functions/functions-scale#timeout), so work past it only holds the
 * subscription lock and spends RU for an answer nobody receives. @azure/functions 4.16 gives a handler no signal
 * of the caller going away (HttpRequest exposes none), so this deadline is the one the app can know.
 */
export const HTTP_RESPONSE_DEADLINE_MS = 230_000;
