import {
  app,
  type HttpRequest,
  type HttpResponseInit,
  type InvocationContext,
  type Timer,
} from "@azure/functions";
import {
  health,
  leaseReport,
  lockReport,
  openAppContext,
  parseSubscriptionId,
  readSummary,
} from "../src/shared/resources/index.js";
import { ApiError } from "../src/shared/resources/model.js";
import { loadSettings } from "../src/shared/settings.js";

const settings = loadSettings();

export async function getLeases(
  _request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  return { jsonBody: { value: await leaseReport(await openAppContext()) } };
}

export async function getLocks(
  _request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  return { jsonBody: { value: await lockReport(await openAppContext()) } };
}

/**
 * 200 `{ status: "healthy" }` when the database and every container answer a read, else 503
 * `{ status: "unhealthy" }`. Deployed, this is the one route App Service Authentication leaves anonymous, so the
 * answer names nothing (no database, container or error); what is wrong goes to the host log instead.
 */
export async function getHealth(
  _request: HttpRequest,
  context: InvocationContext,
): Promise<HttpResponseInit> {
  try {
    const res = await health(await openAppContext());
    if (res.status !== 200) context.error(`Health check: unhealthy ${JSON.stringify(res.body)}`);
    return { status: res.status, jsonBody: { status: res.status === 200 ? "healthy" : "unhealthy" } };
  } catch (e) {
    // No context (a bad connection setting, the containers not creatable): unhealthy, not a 500.
    context.error(`Health check: unhealthy, ${e instanceof Error ? e.message : String(e)}`);
    return { status: 503, jsonBody: { status: "unhealthy" } };
  }
}

export async function getSummary(
  request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  let sub: string;
  try {
    sub = parseSubscriptionId(request.params.subscriptionId);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return { status: 400, jsonBody: { error: { code: e.code, message: e.message } } };
  }
  const summary = await readSummary(await openAppContext(), sub);
  return summary
    ? {
        jsonBody: {
          subscriptionId: sub,
          counts: summary.counts,
          total: summary.total,
          updatedAt: summary.updatedAt,
        },
      }
    : { jsonBody: { subscriptionId: sub, counts: {}, total: 0, updatedAt: null } };
}

/** Logs the lag of both resource triggers; warns when changes are waiting. */
export async function reportLag(_timer: Timer, context: InvocationContext): Promise<void> {
  for (const p of await leaseReport(await openAppContext())) {
    const line = `Lag of ${p.function} (prefix '${p.leaseContainerPrefix}'): ${p.totalLag} change(s) over ${p.leases.length} lease(s)${p.error ? ` — ${p.error}` : ""}.`;
    if (p.totalLag > 0 || p.error) context.warn(line);
    else context.log(line);
  }
}

// Deployed, App Service Authentication (infra/bicep) lets only callers with an Entra token for the API through; the
// API itself needs nothing more. The operational reads (who holds which lease and lock) need a function key on top
// ("function": a key of that function or a host key, never the master key); health is the one route left anonymous
// and answers healthy/unhealthy only. Offline the dev host, like Core Tools, asks for no key. docs/deploy.md.
app.http("getLeases", {
  methods: ["GET"],
  route: "admin/leases",
  authLevel: "function",
  handler: getLeases,
});
app.http("getLocks", { methods: ["GET"], route: "admin/locks", authLevel: "function", handler: getLocks });
app.http("getHealth", { methods: ["GET"], route: "health", authLevel: "anonymous", handler: getHealth });
app.http("getSummary", {
  methods: ["GET"],
  route: "subscriptions/{subscriptionId}/summary",
  authLevel: "anonymous",
  handler: getSummary,
});
app.timer("reportLag", { schedule: settings.lagReportSchedule, handler: reportLag });
