import { readWholeNumberSettings, type WholeNumberKnob } from "../settings.js";

/**
 * The dev host's HTTP front door knobs (packages/devhost/src/http/), named once: app setting (read from the environment, so
 * local.settings.json Values work), unit, default and range. docs/devhost.md ("The front door") says what each guards.
 */
export const DEV_HTTP_SETTINGS = {
  maxRequestBodyBytes: {
    setting: "FUNCTIONS_REQUEST_BODY_SIZE_LIMIT",
    unit: "bytes",
    default: 104_857_600,
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    description:
      "Largest request body an HTTP function is given (the host's setting and default, 100 MB), declared or chunked: counted as it arrives; past it the request is answered 413 and not invoked.",
  },
  builtinMaxBodyBytes: {
    setting: "DEV_HTTP_BUILTIN_MAX_BODY_BYTES",
    unit: "bytes",
    default: 1_048_576,
    min: 0,
    max: 104_857_600,
    description:
      "Largest request body of a built-in route (/_dev, /runtime/webhooks/durabletask/…) that names no limit of its own; the durable HTTP API names DURABLE_MAX_PAYLOAD_BYTES plus 64 KiB.",
  },
  maxConcurrentRequests: {
    setting: "AzureFunctionsJobHost__extensions__http__maxConcurrentRequests",
    unit: "requests",
    default: 100,
    min: 1,
    max: 1_000_000,
    description:
      "HTTP function invocations run at once (host.json extensions.http.maxConcurrentRequests; this app setting overrides it as it does in the host; -1 = unbounded). Default: the host's on the Consumption plan.",
  },
  maxOutstandingRequests: {
    setting: "AzureFunctionsJobHost__extensions__http__maxOutstandingRequests",
    unit: "requests",
    default: 1_000,
    min: 1,
    max: 1_000_000,
    description:
      "HTTP function requests running or waiting for a slot; one more is answered 429 (host.json extensions.http.maxOutstandingRequests, overridden by this app setting; -1 = unbounded). The host's Consumption default is 200; the dev host allows more so that a load test of a few hundred connections queues instead of failing.",
  },
  builtinMaxConcurrentRequests: {
    setting: "DEV_HTTP_BUILTIN_MAX_CONCURRENT_REQUESTS",
    unit: "requests",
    default: 64,
    min: 1,
    max: 100_000,
    description:
      "Requests to built-in routes handled at once. Apart from the functions' throttle, so that an app whose functions call the durable HTTP API cannot starve it.",
  },
  builtinMaxOutstandingRequests: {
    setting: "DEV_HTTP_BUILTIN_MAX_OUTSTANDING_REQUESTS",
    unit: "requests",
    default: 1_000,
    min: 1,
    max: 1_000_000,
    description: "Requests to built-in routes handled or waiting; one more is answered 429.",
  },
  maxInFlightPerConnection: {
    setting: "DEV_HTTP_MAX_IN_FLIGHT_PER_CONNECTION",
    unit: "requests",
    default: 1,
    min: 1,
    max: 1_000,
    description:
      "Requests of one keep-alive connection handled at once. HTTP/1.1 answers them in order anyway, and Kestrel (the host's server) handles them one at a time; pipelined requests wait for their turn.",
  },
  pipelineBacklog: {
    setting: "DEV_HTTP_PIPELINE_BACKLOG",
    unit: "requests",
    default: 16,
    min: 1,
    max: 100_000,
    description:
      "Pipelined requests of one connection read and waiting for their turn before the dev host stops reading that connection (it reads again once half of them were served).",
  },
  discardAfterRefusalBytes: {
    setting: "DEV_HTTP_DISCARD_AFTER_REFUSAL_BYTES",
    unit: "bytes",
    default: 262_144,
    min: 0,
    max: 104_857_600,
    description:
      "After a refusal (413, 421, 403, 429), how much more of that request's body is read and dropped (so that the client sees the answer) before the connection is closed, as Go's net/http does with 256 KiB.",
  },
  minRequestBodyDataRate: {
    setting: "DEV_HTTP_MIN_REQUEST_BODY_DATA_RATE",
    unit: "bytes/s",
    default: 240,
    min: 0,
    max: 1_000_000_000,
    description:
      "Slowest request body accepted, on average since its first byte was awaited, once the grace period is over (Kestrel's MinRequestBodyDataRate, 240 bytes/s); slower → 408 and the connection closed. 0 = no minimum.",
  },
  requestBodyGracePeriodMs: {
    setting: "DEV_HTTP_REQUEST_BODY_GRACE_MS",
    unit: "ms",
    default: 5_000,
    min: 0,
    max: 3_600_000,
    description:
      "How long a request body may arrive at any rate before DEV_HTTP_MIN_REQUEST_BODY_DATA_RATE applies (Kestrel's grace period, 5 s).",
  },
  dataRateCheckIntervalMs: {
    setting: "DEV_HTTP_DATA_RATE_CHECK_MS",
    unit: "ms",
    default: 1_000,
    min: 1,
    max: 60_000,
    description:
      "How often a body being read is checked against the minimum data rate (Kestrel checks on its 1 s heartbeat).",
  },
  headersTimeoutMs: {
    setting: "DEV_HTTP_REQUEST_HEADERS_TIMEOUT_MS",
    unit: "ms",
    default: 30_000,
    min: 1_000,
    max: 300_000, // node:http refuses a headersTimeout above its requestTimeout (300 s)
    description:
      "Longest time a client may take to send a request's headers (Kestrel's RequestHeadersTimeout, 30 s; node:http's headersTimeout); past it the connection is answered 408 and closed, so a client that never finishes its headers (slowloris) holds nothing for long.",
  },
  keepAliveTimeoutMs: {
    setting: "DEV_HTTP_KEEP_ALIVE_TIMEOUT_MS",
    unit: "ms",
    default: 130_000,
    min: 1_000,
    max: 3_600_000,
    description:
      "How long an idle keep-alive connection stays open between requests (Kestrel's KeepAliveTimeout, 130 s; node:http's keepAliveTimeout, 5 s by default). With node's 5 s, a client reusing a pooled connection raced the server's close of it (\"socket hang up\") on a busy machine.",
  },
  refusalLingerMs: {
    setting: "DEV_HTTP_REFUSAL_LINGER_MS",
    unit: "ms",
    default: 500,
    min: 0,
    max: 60_000,
    description:
      "After a refusal whose body was not read (413, 408, 421, 403, 429), how long the connection stays half-open (answer sent, write side closed, the rest of the body no longer read) before it is closed, so that a client still sending reads the answer instead of a connection reset (Go's net/http waits 500 ms the same way).",
  },
} as const satisfies Record<string, WholeNumberKnob>;

export type DevHttpSettings = { -readonly [K in keyof typeof DEV_HTTP_SETTINGS]: number };

/** host.json `extensions.http` throttle values (AppConfig.httpThrottle): a whole number ≥ 1, or -1 for unbounded. */
export interface HostJsonHttpThrottle {
  /** Largest number of HTTP invocations run at once. */
  maxConcurrentRequests?: number;
  /** Largest number of HTTP requests held, running or waiting; more are answered 429. */
  maxOutstandingRequests?: number;
}

const UNBOUNDED = "-1";

/**
 * Reads every knob from `env`; host.json's throttle values replace those two defaults, and the app settings override
 * host.json as `AzureFunctionsJobHost__…` settings do in the host. -1 (either place) is unbounded: Infinity here. A bad
 * value is a DevHostError naming each bad setting.
 */
export function readDevHttpSettings(
  env: NodeJS.ProcessEnv = process.env,
  hostJson: HostJsonHttpThrottle = {},
): DevHttpSettings {
  const knobs: Record<keyof DevHttpSettings, WholeNumberKnob> = { ...DEV_HTTP_SETTINGS };
  const view: NodeJS.ProcessEnv = { ...env };
  const unbounded: (keyof HostJsonHttpThrottle)[] = [];
  for (const key of ["maxConcurrentRequests", "maxOutstandingRequests"] as const) {
    const knob = DEV_HTTP_SETTINGS[key];
    const raw = env[knob.setting]?.trim();
    if (raw === UNBOUNDED) {
      unbounded.push(key);
      delete view[knob.setting];
    } else if (raw === undefined || raw === "") {
      // No app setting: host.json's value, if any (an app setting wins, read and checked below).
      if (hostJson[key] === -1) unbounded.push(key);
      else if (hostJson[key] !== undefined) knobs[key] = { ...knob, default: hostJson[key] };
    }
  }
  const out = readWholeNumberSettings("dev host HTTP settings", knobs, view);
  for (const key of unbounded) out[key] = Number.POSITIVE_INFINITY;
  return out;
}
