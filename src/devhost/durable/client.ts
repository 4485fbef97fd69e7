import type { BuiltinRequest, BuiltinResponse, BuiltinRoutes } from "../http/server.js";
import { TaskHubError, validateInstanceId } from "./hub.js";
import type { InstanceFilter, RuntimeStatus, TaskHubClient } from "./types.js";

/**
 * The durable client as the Durable Functions extension exposes it, served by the dev host on its own port:
 * the `durableClient` binding's data (what `df.getClient(context)` reads), and the HTTP API it and
 * `createCheckStatusResponse` links call — `/runtime/webhooks/durabletask/…` (the webhook API; also the
 * `rpcBaseUrl`, whose paths have the same shapes). Status codes and bodies follow the extension's HTTP API
 * reference. Locally no system key is required (as Core Tools), so `requiredQueryStringParameters` holds no `code`.
 */

export const WEBHOOK_PREFIX = "/runtime/webhooks/durabletask/";
const RUNTIME_STATUSES: RuntimeStatus[] = [
  "Pending",
  "Running",
  "Completed",
  "ContinuedAsNew",
  "Failed",
  "Terminated",
  "Suspended",
];

/** The extension's OrchestrationClientInputData for a dev host at `baseUrl` (e.g. http://127.0.0.1:7071). */
export function durableClientBindingData(baseUrl: string, hubName: string, connectionName = "Storage") {
  const root = `${baseUrl.replace(/\/$/, "")}${WEBHOOK_PREFIX.replace(/\/$/, "")}`;
  const required = `taskHub=${encodeURIComponent(hubName)}&connection=${encodeURIComponent(connectionName)}`;
  const instance = `${root}/instances/INSTANCEID`;
  return {
    taskHubName: hubName,
    creationUrls: {
      createNewInstancePostUri: `${root}/orchestrators/{functionName}[/{instanceId}]?${required}`,
      createAndWaitOnNewInstancePostUri: `${root}/orchestrators/{functionName}[/{instanceId}]?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}&${required}`,
    },
    managementUrls: {
      id: "INSTANCEID",
      statusQueryGetUri: `${instance}?${required}`,
      sendEventPostUri: `${instance}/raiseEvent/{eventName}?${required}`,
      terminatePostUri: `${instance}/terminate?reason={text}&${required}`,
      rewindPostUri: `${instance}/rewind?reason={text}&${required}`,
      purgeHistoryDeleteUri: `${instance}?${required}`,
      restartPostUri: `${instance}/restart?${required}`,
      suspendPostUri: `${instance}/suspend?reason={text}&${required}`,
      resumePostUri: `${instance}/resume?reason={text}&${required}`,
    },
    baseUrl: root,
    requiredQueryStringParameters: required,
    rpcBaseUrl: `${root}/`,
  };
}

export interface DurableHttpApiOptions {
  hub: () => TaskHubClient;
  /** The dev host's base URL, for the management links in responses. */
  baseUrl: () => string;
  /** Whether the app has an orchestrator function of that name (startNew of another is a 400, as the extension). */
  isOrchestrator: (name: string) => boolean;
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): BuiltinResponse => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8", ...headers },
  body: JSON.stringify(body),
});
const problem = (status: number, message: string) => json(status, { Message: message });

function parseJsonBody(body: Buffer): { ok: true; text: string | null } | { ok: false; error: string } {
  const text = body.toString("utf8");
  if (text.trim() === "") return { ok: true, text: null };
  try {
    JSON.parse(text);
    return { ok: true, text };
  } catch (e) {
    return { ok: false, error: `The request body is not valid JSON: ${(e as Error).message}` };
  }
}

function statusCodeOf(runtimeStatus: RuntimeStatus): number {
  if (runtimeStatus === "Completed") return 200;
  if (runtimeStatus === "Failed" || runtimeStatus === "Terminated") return 400;
  return 202;
}

function boolQuery(url: URL, name: string): boolean | "bad" {
  const v = url.searchParams.get(name);
  if (v === null) return false;
  if (/^true$/i.test(v)) return true;
  if (/^false$/i.test(v)) return false;
  return "bad";
}

/** The filters of a list or purge-many request; a string error for a malformed one. */
function parseFilter(url: URL, headers: Record<string, string>): InstanceFilter | string {
  const filter: InstanceFilter = {};
  for (const key of ["createdTimeFrom", "createdTimeTo"] as const) {
    const v = url.searchParams.get(key);
    if (v === null || v === "") continue;
    if (Number.isNaN(Date.parse(v))) return `${key} must be an ISO 8601 date-time; got '${v}'.`;
    filter[key] = new Date(v).toISOString();
  }
  const statuses = url.searchParams.get("runtimeStatus");
  if (statuses) {
    const list = statuses.split(",").map((s) => s.trim());
    const bad = list.find((s) => !RUNTIME_STATUSES.includes(s as RuntimeStatus));
    if (bad !== undefined) return `runtimeStatus '${bad}' is not one of ${RUNTIME_STATUSES.join(", ")}.`;
    filter.runtimeStatus = list as RuntimeStatus[];
  }
  const prefix = url.searchParams.get("instanceIdPrefix");
  if (prefix) filter.instanceIdPrefix = prefix;
  const top = url.searchParams.get("top");
  if (top !== null) {
    if (!/^\d+$/.test(top) || Number(top) < 1 || Number(top) > 1000)
      return `top must be 1–1000; got '${top}'.`;
    filter.top = Number(top);
  }
  const showInput = url.searchParams.get("showInput") === null ? true : boolQuery(url, "showInput");
  if (showInput === "bad") return "showInput must be true or false.";
  filter.showInput = showInput;
  const token = headers["x-ms-continuation-token"];
  if (token) filter.continuationToken = token;
  return filter;
}

/** The management links the extension returns for an instance (createCheckStatusResponse's payload). */
function managementPayload(baseUrl: string, hubName: string, instanceId: string) {
  const links = durableClientBindingData(baseUrl, hubName).managementUrls;
  const id = encodeURIComponent(instanceId);
  return Object.fromEntries(
    Object.entries(links).map(([k, v]) => [k, k === "id" ? instanceId : v.replace("INSTANCEID", id)]),
  );
}

/** The HTTP API as a built-in route of the dev host's server. */
export function durableHttpApi(options: DurableHttpApiOptions): BuiltinRoutes {
  return {
    prefix: WEBHOOK_PREFIX,
    handle: async (req) => {
      try {
        return await route(options, req);
      } catch (e) {
        if (e instanceof TaskHubError) return problem(e.statusCode, e.message);
        throw e;
      }
    },
  };
}

async function route(o: DurableHttpApiOptions, req: BuiltinRequest): Promise<BuiltinResponse | undefined> {
  const hub = o.hub();
  const url = req.url;
  const taskHub = url.searchParams.get("taskHub");
  if (taskHub !== null && taskHub !== hub.hubName) {
    return problem(400, `This dev host serves the task hub '${hub.hubName}', not '${taskHub}'.`);
  }
  let parts: string[];
  try {
    parts = url.pathname
      .slice(WEBHOOK_PREFIX.length)
      .split("/")
      .filter((p) => p !== "")
      .map((p) => decodeURIComponent(p));
  } catch {
    return problem(400, "The request path is not valid percent-encoding.");
  }
  const method = req.method.toUpperCase();
  const [head, id, action, arg] = parts;

  if (head === "entities") {
    return problem(501, "Durable entities are not supported by the dev host (see docs/durable.md).");
  }

  if (head === "orchestrators" && id !== undefined && parts.length <= 3) {
    if (method !== "POST") return problem(405, "Use POST to start an orchestration.");
    if (!o.isOrchestrator(id)) {
      return problem(
        400,
        `The function '${id}' doesn't exist, is disabled, or is not an orchestrator function.`,
      );
    }
    const body = parseJsonBody(req.body);
    if (!body.ok) return problem(400, body.error);
    const instanceId = action === undefined ? undefined : validateInstanceId(action);
    const started = await hub.startNew(id, { ...(instanceId ? { instanceId } : {}), input: body.text });
    const payload = managementPayload(o.baseUrl(), hub.hubName, started.instanceId);
    const timeout = url.searchParams.get("timeout");
    if (timeout !== null) {
      // createAndWaitOnNewInstancePostUri: wait up to `timeout` s for completion.
      if (!/^\d+$/.test(timeout)) return problem(400, `timeout must be whole seconds; got '${timeout}'.`);
      const deadline = Date.now() + Number(timeout) * 1000;
      while (Date.now() < deadline) {
        const s = await hub.getStatus(started.instanceId);
        if (s && ["Completed", "Failed", "Terminated"].includes(s.runtimeStatus)) {
          return s.runtimeStatus === "Completed" ? json(200, s.output) : json(200, s);
        }
        await hub.waitForChange(started.instanceId, Math.max(0, deadline - Date.now()));
      }
    }
    return json(202, payload, { Location: String(payload.statusQueryGetUri), "Retry-After": "10" });
  }

  if (head !== "instances") return undefined;

  if (id === undefined) {
    const filter = parseFilter(url, req.headers);
    if (typeof filter === "string") return problem(400, filter);
    if (method === "GET") {
      const page = await hub.list(filter);
      return json(
        200,
        page.instances,
        page.continuationToken ? { "x-ms-continuation-token": page.continuationToken } : {},
      );
    }
    if (method === "DELETE") {
      const n = await hub.purgeMany(filter);
      return n === 0 ? problem(404, "No instances matched the filter.") : json(200, { instancesDeleted: n });
    }
    return problem(405, "Use GET to list instances or DELETE to purge them.");
  }
  const instanceId = validateInstanceId(id);

  if (action === undefined) {
    if (method === "GET") {
      const flags = {
        showHistory: boolQuery(url, "showHistory"),
        showHistoryOutput: boolQuery(url, "showHistoryOutput"),
        showInput: url.searchParams.get("showInput") === null ? true : boolQuery(url, "showInput"),
      };
      if (Object.values(flags).includes("bad")) {
        return problem(400, "showHistory, showHistoryOutput and showInput are true or false.");
      }
      const s = await hub.getStatus(instanceId, flags as Record<string, boolean>);
      if (!s) return problem(404, `No instance with the id '${instanceId}' was found.`);
      const payload = managementPayload(o.baseUrl(), hub.hubName, instanceId);
      const code = statusCodeOf(s.runtimeStatus);
      return json(
        code,
        s,
        code === 202 ? { Location: String(payload.statusQueryGetUri), "Retry-After": "10" } : {},
      );
    }
    if (method === "DELETE") {
      const n = await hub.purge(instanceId);
      return n === 0
        ? problem(404, `No completed, failed or terminated instance with the id '${instanceId}' was found.`)
        : json(200, { instancesDeleted: n });
    }
    return problem(405, "Use GET for an instance's status or DELETE to purge it.");
  }

  if (method !== "POST") return problem(405, `Use POST for ${action}.`);
  const reason = url.searchParams.get("reason");
  const answer = (r: "ok" | "notFound" | "notRunning") =>
    r === "ok"
      ? { status: 202 }
      : r === "notFound"
        ? problem(404, `No instance with the id '${instanceId}' was found.`)
        : problem(
            410,
            `The instance '${instanceId}' is not in a state that accepts this (it has completed, failed or was terminated).`,
          );
  switch (action) {
    case "raiseEvent": {
      if (!arg) return problem(400, "The event name is missing: instances/{id}/raiseEvent/{eventName}.");
      const body = parseJsonBody(req.body);
      if (!body.ok) return problem(400, body.error);
      return answer(await hub.raiseEvent(instanceId, arg, body.text));
    }
    case "terminate":
      return answer(await hub.terminate(instanceId, reason));
    case "suspend":
      return answer(await hub.suspend(instanceId, reason));
    case "resume":
      return answer(await hub.resume(instanceId, reason));
    case "rewind":
    case "restart":
      return problem(501, `${action} is not supported by the dev host.`);
    default:
      return undefined;
  }
}
