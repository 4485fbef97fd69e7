// The checks of the postdeploy hook (postdeploy.mjs), apart from how they are run, so that a test runs them against
// a real server: what to call, how to judge each answer, and the one line printed for each. Plain Node (no
// dependencies): azd runs it on Linux, macOS and Windows alike.

/** The hook's knobs, named once: app setting (azd environment variable), unit, default. */
export const POSTDEPLOY_SETTINGS = {
  attempts: {
    setting: "POSTDEPLOY_ATTEMPTS",
    unit: "attempts",
    default: 12,
    min: 1,
    max: 100,
    description:
      "Times a check is tried before it fails: a Flex Consumption app that was just deployed may answer 503 and list no functions until it has started and synced its triggers.",
  },
  retryIntervalMs: {
    setting: "POSTDEPLOY_RETRY_INTERVAL_MS",
    unit: "ms",
    default: 10_000,
    min: 0,
    max: 600_000,
    description: "Wait between two tries of a check.",
  },
};

/** Reads the knobs from `env`; a bad value throws an Error naming the setting and its range. */
export function readPostdeploySettings(env = process.env) {
  const out = {};
  for (const [key, knob] of Object.entries(POSTDEPLOY_SETTINGS)) {
    const raw = env[knob.setting];
    const value = raw === undefined || raw === "" ? knob.default : Number(raw);
    if (!Number.isInteger(value) || value < knob.min || value > knob.max) {
      throw new Error(
        `${knob.setting} must be a whole number of ${knob.unit} from ${knob.min} to ${knob.max}; got '${raw}'.`,
      );
    }
    out[key] = value;
  }
  return out;
}

// A mutation route with a body no function would accept: behind App Service Authentication it never reaches the app
// (401); without it the function refuses it (400) — so the probe never changes anything, whichever way it goes.
export const PROBE_ROUTE = "/api/subscriptions/postdeploy-check/resources/probe";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs the three checks against `baseUrl` and returns one result per check: `{ name, ok, line }`.
 * - a PUT to a mutation route without a token must get 401 (Entra ID in front of the API);
 * - GET /api/health must answer 200 (anonymous, the one excluded path);
 * - `listFunctions()` (the function app's functions, from ARM in Azure) must include every name of `expected`.
 * Each check is tried up to `attempts` times, `retryIntervalMs` apart, while it fails.
 */
export async function runDeployChecks({
  baseUrl,
  expectedFunctions,
  listFunctions,
  attempts = POSTDEPLOY_SETTINGS.attempts.default,
  retryIntervalMs = POSTDEPLOY_SETTINGS.retryIntervalMs.default,
  wait = sleep,
  fetchImpl = fetch,
}) {
  const base = baseUrl.replace(/\/+$/, "");
  const retried = async (check) => {
    let result;
    for (let i = 1; i <= attempts; i++) {
      // A request that got no answer (the app is still starting) is worth another try; an error marked final is not.
      result = await check().catch((e) =>
        e?.cause?.code
          ? { ok: false, detail: `no answer (${e.cause.code})` }
          : { ok: false, final: e?.final === true, detail: `failed: ${e?.message ?? e}` },
      );
      if (result.ok || result.final) return result;
      if (i < attempts) await wait(retryIntervalMs);
    }
    return result;
  };
  const results = [];

  const auth = await retried(async () => {
    const res = await fetchImpl(`${base}${PROBE_ROUTE}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    await res.arrayBuffer();
    // 503 and 5xx while the app starts are worth another try; any other answer is the verdict.
    if (res.status >= 500) return { ok: false, detail: `answered ${res.status} (expected 401)` };
    return {
      ok: res.status === 401,
      final: true,
      detail:
        res.status === 401
          ? "answered 401"
          : `answered ${res.status} (expected 401): the route is not behind Microsoft Entra ID`,
    };
  });
  results.push({
    name: "auth",
    ok: auth.ok,
    line: `${auth.ok ? "ok  " : "FAIL"} PUT ${PROBE_ROUTE} without a token ${auth.detail}`,
  });

  const health = await retried(async () => {
    const res = await fetchImpl(`${base}/api/health`);
    const text = await res.text();
    let status = "";
    try {
      status = JSON.parse(text)?.status ?? "";
    } catch {
      // Not JSON (a platform error page): the status code alone is reported.
    }
    return {
      ok: res.status === 200,
      final: res.status < 500,
      detail: `answered ${res.status}${status ? ` (${status})` : ""}${res.status === 200 ? "" : " (expected 200)"}`,
    };
  });
  results.push({
    name: "health",
    ok: health.ok,
    line: `${health.ok ? "ok  " : "FAIL"} GET /api/health ${health.detail}`,
  });

  const listed = await retried(async () => {
    let names;
    try {
      names = (await listFunctions()).map((n) => String(n).split("/").pop());
    } catch (e) {
      return { ok: false, final: e?.final === true, detail: `could not be listed: ${e?.message ?? e}` };
    }
    const missing = expectedFunctions.filter((n) => !names.includes(n));
    return {
      ok: missing.length === 0,
      detail:
        missing.length === 0
          ? `lists all ${expectedFunctions.length} expected functions`
          : `lists ${names.length} functions; missing ${missing.length} of ${expectedFunctions.length}: ${missing.join(", ")}`,
    };
  });
  results.push({
    name: "functions",
    ok: listed.ok,
    line: `${listed.ok ? "ok  " : "FAIL"} the function app ${listed.detail}`,
  });
  return results;
}
