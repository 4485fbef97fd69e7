import { header, notFound, type RouteContext, TERMINAL } from "./client-api-context.js";
import { boolParam, checkText, filterOf, jsonPayload, single } from "./client-api-input.js";
import { startedResponse, statusPayload, statusResponse } from "./client-api-status.js";
import { validateInstanceId } from "./errors.js";
import { type DurableApiResponse, json, problem } from "./http-errors.js";
import { rewindRefusal } from "./unsupported.js";

/**
 * The orchestration routes of the durable HTTP API, as the extension answers them: `orchestrators/{name}[/{id}]`
 * (start), `instances` (list, purge by filter), `instances/{id}` (status, purge) and its operations (raise event,
 * terminate, suspend, resume, restart; rewind refused). The path and the method are checked first (404, 405),
 * then each operation's own input (client-api-input.ts).
 */

/** POST orchestrators/{functionName}[/{instanceId}]: start an orchestration. */
export async function orchestratorsRoute(c: RouteContext, tail: string[]): Promise<DurableApiResponse> {
  const { method, where } = c;
  const [name, instanceId, extra] = tail;
  where.route = `${method} orchestrators/{name}${instanceId === undefined ? "" : "/{instanceId}"}`;
  if (name === undefined || extra !== undefined) {
    return problem(
      404,
      "NoSuchEndpoint",
      "Start an orchestration with POST orchestrators/{functionName}[/{instanceId}].",
    );
  }
  if (method !== "POST") {
    return problem(405, "MethodNotAllowed", "Use POST to start an orchestration.", { allow: "POST" });
  }
  if (instanceId !== undefined) where.instanceId = validateInstanceId(instanceId);
  return start(c, name, where.instanceId);
}

const INSTANCE_OPERATIONS = ["raiseevent", "terminate", "suspend", "resume", "rewind", "restart"];

/** instances[/{id}[/{operation}]] and instances/{id}/raiseEvent/{eventName}. */
export async function instancesRoute(c: RouteContext, tail: string[]): Promise<DurableApiResponse> {
  const { method, where } = c;
  const [rawId, rawOperation, eventName, extra] = tail;
  if (rawId === undefined) {
    where.route = `${method} instances`;
    return instances(c);
  }
  where.route = `${method} instances/{id}${rawOperation === undefined ? "" : `/${rawOperation.slice(0, 40)}`}`;
  const instanceId = validateInstanceId(rawId);
  where.instanceId = instanceId;
  if (rawOperation === undefined) {
    if (method === "GET" || method === "HEAD") return statusResponse(c, instanceId);
    if (method === "DELETE") return purgeOne(c, instanceId);
    return problem(
      405,
      "MethodNotAllowed",
      "Use GET for an instance's status or DELETE to purge its history.",
      {
        allow: "GET, DELETE",
      },
    );
  }
  const operation = rawOperation.toLowerCase();
  if (
    !INSTANCE_OPERATIONS.includes(operation) ||
    (operation === "raiseevent") !== (eventName !== undefined) ||
    extra
  ) {
    return problem(
      404,
      "NoSuchEndpoint",
      "Instance operations: POST instances/{id}/raiseEvent/{eventName}, terminate, suspend, resume, restart, rewind.",
    );
  }
  if (method !== "POST") {
    return problem(405, "MethodNotAllowed", `Use POST for ${operation}.`, { allow: "POST" });
  }
  switch (operation) {
    case "raiseevent":
      return raiseEvent(c, instanceId, eventName as string);
    case "terminate":
    case "suspend":
    case "resume":
      return signal(c, operation, instanceId);
    case "restart":
      return restart(c, instanceId);
    default:
      return rewind(c, instanceId);
  }
}

async function start(
  c: RouteContext,
  name: string,
  instanceId: string | undefined,
): Promise<DurableApiResponse> {
  const input = jsonPayload(c.req.body, "The orchestration input", c.settings.maxPayloadBytes());
  const { isOrchestrator } = c.settings;
  if (isOrchestrator && !isOrchestrator(name)) {
    return problem(
      400,
      "OrchestratorNotFound",
      `The function '${name}' doesn't exist, is disabled, or is not an orchestrator function.`,
    );
  }
  // The client's startNew({ version }) sends it as the query parameter `version`.
  const version = single(c.req.query, "version");
  const started = await c.hub.startNew(name, {
    ...(instanceId !== undefined ? { instanceId } : {}),
    input,
    ...(version ? { version } : {}),
  });
  return startedResponse(c, started.instanceId);
}

async function restart(c: RouteContext, instanceId: string): Promise<DurableApiResponse> {
  const newId = boolParam(c.req.query, "restartWithNewInstanceId", true);
  const s = await c.hub.getStatus(instanceId, { showInput: true });
  if (!s) {
    return problem(
      400,
      "InstanceNotFound",
      `InstanceId '${instanceId}' does not match a valid orchestration instance.`,
    );
  }
  const input = s.input === undefined || s.input === null ? null : JSON.stringify(s.input);
  // The stored input passed the limits when it was started; the limit may have been lowered since.
  checkText(input, "The restarted instance's input", c.settings.maxPayloadBytes());
  const started = await c.hub.startNew(s.name, { ...(newId ? {} : { instanceId }), input });
  return startedResponse(c, started.instanceId);
}

/** raiseEvent / terminate / suspend / resume: 202, 404 unknown, 410 done. */
function answer(instanceId: string, r: "ok" | "notFound" | "notRunning"): DurableApiResponse {
  return r === "ok"
    ? { status: 202, headers: {}, body: "" }
    : r === "notFound"
      ? notFound(instanceId)
      : problem(
          410,
          "InstanceCompleted",
          `The orchestration instance '${instanceId}' has already completed, failed or been terminated.`,
        );
}

async function raiseEvent(
  c: RouteContext,
  instanceId: string,
  eventName: string,
): Promise<DurableApiResponse> {
  const type = header(c.req, "content-type")?.split(";")[0]?.trim().toLowerCase();
  // The extension takes only application/json content (an empty body, no event data, has none to check here),
  // and answers 404/410 for an unknown or finished instance before it looks at the content type.
  if (!isBlank(c.req.body) && type !== "application/json") {
    const s = await c.hub.getStatus(instanceId);
    if (!s) return answer(instanceId, "notFound");
    if (TERMINAL.has(s.runtimeStatus)) return answer(instanceId, "notRunning");
    return problem(400, "UnsupportedMediaType", "Only application/json request content is supported");
  }
  const body = jsonPayload(c.req.body, `The data of event '${eventName}'`, c.settings.maxPayloadBytes());
  return answer(instanceId, await c.hub.raiseEvent(instanceId, eventName, body));
}

/** terminate / suspend / resume with the `reason` query parameter (stored, so bounded as a payload). */
async function signal(
  c: RouteContext,
  operation: "terminate" | "suspend" | "resume",
  instanceId: string,
): Promise<DurableApiResponse> {
  const reason = single(c.req.query, "reason") ?? null;
  checkText(
    reason === null ? null : JSON.stringify(reason),
    `The ${operation} reason`,
    c.settings.maxPayloadBytes(),
  );
  return answer(instanceId, await c.hub[operation](instanceId, reason));
}

async function purgeOne(c: RouteContext, instanceId: string): Promise<DurableApiResponse> {
  const s = await c.hub.getStatus(instanceId);
  if (!s) return notFound(instanceId);
  if (!TERMINAL.has(s.runtimeStatus)) {
    // The extension answers this 412 with a JSON string body.
    return json(
      412,
      `Only orchestrations in a terminal state can be purged, but the orchestration with instance ID ${instanceId} has status ${s.runtimeStatus}`,
    );
  }
  const n = await c.hub.purge(instanceId);
  if (n === 0) return notFound(instanceId);
  return json(200, { instancesDeleted: n });
}

async function rewind(c: RouteContext, instanceId: string): Promise<DurableApiResponse> {
  // JSON strings: the JS SDK's rewind() makes `new Error(response.data)` of them.
  const s = await c.hub.getStatus(instanceId);
  if (!s) return json(404, `No orchestration with instance ID "${instanceId}" found.`);
  if (s.runtimeStatus !== "Failed") {
    return json(
      412,
      `This orchestration has status ${s.runtimeStatus}, but only orchestrations in the "Failed" state can be rewound.`,
    );
  }
  return json(501, rewindRefusal(instanceId));
}

/** GET instances: a page of statuses by filter; DELETE instances: purge by filter. */
async function instances(c: RouteContext): Promise<DurableApiResponse> {
  const { method } = c;
  const isRead = method === "GET" || method === "HEAD";
  if (isRead) {
    const token = header(c.req, "x-ms-continuation-token");
    if (token !== undefined && token !== "") c.where.continuationToken = token;
    const { filter, none } = filterOf(c.req.query, token, false);
    if (none) return json(200, []);
    const page = await c.hub.list(filter);
    const showInput = filter.showInput !== false;
    return json(
      200,
      page.instances.map((s) => statusPayload(s, showInput, false)),
      page.continuationToken ? { "x-ms-continuation-token": page.continuationToken } : {},
    );
  }
  if (method === "DELETE") {
    const { filter, none } = filterOf(c.req.query, undefined, true);
    const n = none ? 0 : await c.hub.purgeMany(filter);
    return n === 0
      ? problem(404, "NoInstancesMatched", "No instances matched the filter.")
      : json(200, { instancesDeleted: n });
  }
  return problem(405, "MethodNotAllowed", "Use GET to list instances or DELETE to purge them.", {
    allow: "GET, DELETE",
  });
}

/** An empty or whitespace-only body (no event data). */
function isBlank(body: Uint8Array): boolean {
  for (const b of body) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return false;
  return true;
}
