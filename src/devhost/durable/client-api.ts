import type { BuiltinRequest, BuiltinResponse, BuiltinRoutes } from "../http/server.js";
import {
  DEFAULT_CONNECTION_NAME,
  DURABLE_WEBHOOK_PATH,
  type HttpManagementPayload,
  instanceManagementUrls,
  reachableOrigin,
} from "./client-binding.js";
import { validateInstanceId } from "./hub.js";
import type { InstanceFilter, InstanceStatus, RuntimeStatus, TaskHubClient } from "./types.js";

/**
 * The Durable Functions extension's HTTP API (HttpApiHandler.cs; learn.microsoft.com "HTTP API reference"),
 * served by the dev host under `/runtime/webhooks/durabletask/` — the webhook links and, as the binding's
 * `rpcBaseUrl`, every call of the JS DurableClient. Status codes, bodies and headers follow the extension; where
 * it answers a malformed request with a silent default or a 500, this answers 400 with the reason. Entities and
 * rewind are refused with 501 (not supported by this task hub).
 */

export interface DurableApiRequest {
  method: string;
  /** The request path as received (percent-encoded), without the query. */
  path: string;
  query: URLSearchParams;
  /** Lower-case header names. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: Uint8Array;
  /** Aborts a create-and-wait when the client goes away. */
  signal?: AbortSignal;
}

export interface DurableApiResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** undefined = not a durable path (the caller routes it elsewhere). */
export type DurableApiHandler = (req: DurableApiRequest) => Promise<DurableApiResponse> | undefined;

export interface DurableApiOptions {
  /**
   * The host's task hub, or a getter for it (the dev host starts it after the app loads; a getter may throw an
   * error with a 4xx `statusCode`, e.g. 404 when the app has no durable functions). A request whose `taskHub`
   * names another hub is a 400: one host serves one hub.
   */
  hub: TaskHubClient | (() => TaskHubClient);
  /** The dev host's base URL, for links when a request has no usable Host header. */
  baseUrl: string | (() => string);
  /** Whether the app has an orchestrator of that name (start/restart of another → 400, as StartNewAsync). */
  isOrchestrator?: (name: string) => boolean;
  /** Appended to links as the extension appends its system key ("" locally). */
  requiredQueryStringParameters?: string;
  /** Told about task hub failures that become a 500 (not the client's fault). */
  onError?: (message: string, error: unknown) => void;
  /** Clock for create-and-wait deadlines (tests inject a fake). */
  now?: () => number;
}

const PREFIX = `${DURABLE_WEBHOOK_PATH}/`;
const RUNTIME_STATUSES: readonly RuntimeStatus[] = [
  "Pending",
  "Running",
  "Completed",
  "ContinuedAsNew",
  "Failed",
  "Terminated",
  "Suspended",
];
/** Statuses in which an instance is done (the extension's IsCompletedStatus; Canceled is never produced). */
const TERMINAL: ReadonlySet<RuntimeStatus> = new Set(["Completed", "Failed", "Terminated"]);
/** The longest create-and-wait a request may ask for (s); the extension has none, but a request must end. */
export const MAX_WAIT_SECONDS = 3600;

class BadRequest extends Error {}

function json(status: number, body: unknown, headers: Record<string, string> = {}): DurableApiResponse {
  return {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
    body: JSON.stringify(body),
  };
}
/** An error as ASP.NET's HttpError serializes it (`{"Message": …}`), as the extension's CreateErrorResponse. */
const problem = (status: number, message: string, headers: Record<string, string> = {}) =>
  json(status, { Message: message }, headers);

function header(req: DurableApiRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A query parameter's single value (the extension reads the first). */
function single(query: URLSearchParams, name: string): string | undefined {
  // Case-insensitive names, as the NameValueCollection the extension reads.
  for (const [k, v] of query) if (k.toLowerCase() === name.toLowerCase()) return v;
  return undefined;
}
function all(query: URLSearchParams, name: string): string[] {
  const out: string[] = [];
  for (const [k, v] of query) if (k.toLowerCase() === name.toLowerCase()) out.push(v);
  return out;
}

/** bool.TryParse: true/false, any case, surrounding spaces allowed; anything else → 400. */
function boolParam(query: URLSearchParams, name: string, fallback: boolean): boolean {
  const v = single(query, name);
  if (v === undefined || v === "") return fallback;
  const t = v.trim().toLowerCase();
  if (t === "true") return true;
  if (t === "false") return false;
  throw new BadRequest(`Query parameter '${name}' must be true or false; got ${JSON.stringify(v)}.`);
}

function dateParam(query: URLSearchParams, name: string): string | undefined {
  const v = single(query, name);
  if (v === undefined || v === "") return undefined;
  const ms = Date.parse(v.trim());
  if (Number.isNaN(ms)) {
    throw new BadRequest(
      `Query parameter '${name}' must be an ISO 8601 date-time; got ${JSON.stringify(v)}.`,
    );
  }
  return new Date(ms).toISOString();
}

/** Seconds (TimeSpan.FromSeconds(double)), 0 … MAX_WAIT_SECONDS. */
function secondsParam(query: URLSearchParams, name: string): number | undefined {
  const v = single(query, name);
  if (v === undefined || v === "") return undefined;
  const n = Number(v.trim());
  if (v.trim() === "" || !Number.isFinite(n) || n < 0 || n > MAX_WAIT_SECONDS) {
    throw new BadRequest(
      `Query parameter '${name}' must be a number of seconds from 0 to ${MAX_WAIT_SECONDS}; got ${JSON.stringify(v)}.`,
    );
  }
  return n;
}

/**
 * runtimeStatus=A,B (also repeated): names of OrchestrationRuntimeStatus, any case. "Canceled" is a valid
 * name that no instance has. Returns undefined when absent, [] when only Canceled was asked for.
 */
function statusesParam(query: URLSearchParams): RuntimeStatus[] | undefined {
  const names = all(query, "runtimeStatus")
    .flatMap((v) => v.split(","))
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length === 0) return undefined;
  const out = new Set<RuntimeStatus>();
  for (const name of names) {
    if (name.toLowerCase() === "canceled") continue;
    const found = RUNTIME_STATUSES.find((s) => s.toLowerCase() === name.toLowerCase());
    if (!found) {
      throw new BadRequest(
        `runtimeStatus ${JSON.stringify(name)} is not one of ${[...RUNTIME_STATUSES, "Canceled"].join(", ")}.`,
      );
    }
    out.add(found);
  }
  return [...out];
}

function filterOf(req: DurableApiRequest, forPurge: boolean): { filter: InstanceFilter; none: boolean } {
  const filter: InstanceFilter = {};
  const from = dateParam(req.query, "createdTimeFrom");
  const to = dateParam(req.query, "createdTimeTo");
  if (from !== undefined) filter.createdTimeFrom = from;
  if (to !== undefined) filter.createdTimeTo = to;
  const statuses = statusesParam(req.query);
  if (statuses !== undefined && statuses.length > 0) filter.runtimeStatus = statuses;
  if (forPurge) {
    // The extension refuses a purge without a lower bound and bounds it above by now.
    if (from === undefined) throw new BadRequest("Please provide value for 'createdTimeFrom' parameter.");
    filter.createdTimeTo ??= new Date().toISOString();
  } else {
    const prefix = single(req.query, "instanceIdPrefix");
    if (prefix !== undefined && prefix !== "") filter.instanceIdPrefix = prefix;
    const top = single(req.query, "top");
    if (top !== undefined && top !== "") {
      if (!/^\s*\d{1,9}\s*$/.test(top) || Number(top) < 1) {
        throw new BadRequest(
          `Query parameter 'top' must be a positive whole number; got ${JSON.stringify(top)}.`,
        );
      }
      filter.top = Number(top);
    }
    filter.showInput = boolParam(req.query, "showInput", true);
    const token = header(req, "x-ms-continuation-token");
    if (token !== undefined && token !== "") filter.continuationToken = token;
  }
  return { filter, none: statuses !== undefined && statuses.length === 0 };
}

/** The request body as JSON text; null when empty. */
function jsonBody(req: DurableApiRequest): string | null {
  const text = Buffer.from(req.body).toString("utf8");
  if (text.trim() === "") return null;
  try {
    JSON.parse(text);
  } catch (e) {
    throw new BadRequest(`Invalid JSON content: ${(e as Error).message}`);
  }
  return text;
}

/** DateTime.ToString("s") + "Z": the extension's status times have whole seconds. */
function extensionTime(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** StatusResponsePayload: every field present (the JS SDK requires input and output to be defined). */
function statusPayload(s: InstanceStatus, showInput: boolean, showHistory: boolean): Record<string, unknown> {
  return {
    name: s.name,
    instanceId: s.instanceId,
    runtimeStatus: s.runtimeStatus,
    input: showInput ? (s.input ?? null) : null,
    customStatus: s.customStatus ?? null,
    output: s.output ?? null,
    createdTime: extensionTime(s.createdTime),
    lastUpdatedTime: extensionTime(s.lastUpdatedTime),
    ...(showHistory && s.historyEvents ? { historyEvents: s.historyEvents } : {}),
  };
}

/** A client-caused refusal the task hub signals with a 4xx `statusCode` (bad id, instance exists, bad token …). */
function clientErrorOf(e: unknown): { status: number; message: string } | undefined {
  const status = (e as { statusCode?: unknown })?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return { status, message: e instanceof Error ? e.message : String(e) };
  }
  return undefined;
}

interface Ctx {
  req: DurableApiRequest;
  hub: TaskHubClient;
  /** The origin links use: the one the client called (as the extension uses request.RequestUri). */
  origin: string;
  connection: string;
  taskHubParam: string | undefined;
}

export function createDurableApiHandler(options: DurableApiOptions): DurableApiHandler {
  const hubOf = typeof options.hub === "function" ? options.hub : () => options.hub as TaskHubClient;
  // One hub: a request naming another (task hub names are case-insensitive) is not served.
  const resolveHub = (name: string | undefined): TaskHubClient | undefined => {
    const hub = hubOf();
    return name === undefined || name.toLowerCase() === hub.hubName.toLowerCase() ? hub : undefined;
  };
  const baseUrl = typeof options.baseUrl === "function" ? options.baseUrl : () => options.baseUrl as string;
  const now = options.now ?? Date.now;
  const requiredQuery = options.requiredQueryStringParameters ?? "";

  const originOf = (req: DurableApiRequest): string => {
    const host = header(req, "host");
    // Only a plain host[:port] is trusted into links; anything odd falls back to the host's own address.
    if (host && /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(host)) {
      return reachableOrigin(`http://${host}`);
    }
    return reachableOrigin(baseUrl());
  };

  const links = (c: Ctx, instanceId: string): HttpManagementPayload =>
    instanceManagementUrls({
      origin: c.origin,
      instanceId,
      taskHub: c.taskHubParam ?? c.hub.hubName,
      connectionName: c.connection,
      requiredQueryStringParameters: requiredQuery,
    });

  /** CreateCheckStatusResponseMessage: 202, the links without rewind, Location, Retry-After 10. */
  const checkStatusResponse = (c: Ctx, instanceId: string): DurableApiResponse => {
    const l = links(c, instanceId);
    const body = {
      id: instanceId,
      statusQueryGetUri: l.statusQueryGetUri,
      sendEventPostUri: l.sendEventPostUri,
      terminatePostUri: l.terminatePostUri,
      purgeHistoryDeleteUri: l.purgeHistoryDeleteUri,
      restartPostUri: l.restartPostUri,
      suspendPostUri: l.suspendPostUri,
      resumePostUri: l.resumePostUri,
    };
    return json(202, body, { location: l.statusQueryGetUri, "retry-after": "10" });
  };

  /** GET instances/{id}: 202 while Pending/Running/ContinuedAsNew/Suspended, 200 once done (Failed: 500 on ask). */
  const statusResponse = async (c: Ctx, instanceId: string): Promise<DurableApiResponse> => {
    const showHistory = boolParam(c.req.query, "showHistory", false);
    const showHistoryOutput = boolParam(c.req.query, "showHistoryOutput", false);
    const showInput = boolParam(c.req.query, "showInput", true);
    const failAs500 = boolParam(c.req.query, "returnInternalServerErrorOnFailure", false);
    const s = await c.hub.getStatus(instanceId, { showHistory, showHistoryOutput, showInput });
    if (!s) return problem(404, `No orchestration instance with the id '${instanceId}' was found.`);
    const body = statusPayload(s, showInput, showHistory);
    if (s.runtimeStatus === "Failed") return json(failAs500 ? 500 : 200, body);
    if (TERMINAL.has(s.runtimeStatus)) return json(200, body);
    const self = `${c.origin}${c.req.path}${c.req.query.size > 0 ? `?${c.req.query}` : ""}`;
    // The extension asks for 5 s here (10 s on a check-status response).
    return json(202, body, { location: self, "retry-after": "5" });
  };

  /** After a start: wait for completion when asked (timeout=), else the check-status response. */
  const startedResponse = async (c: Ctx, instanceId: string): Promise<DurableApiResponse> => {
    const timeout = secondsParam(c.req.query, "timeout");
    secondsParam(c.req.query, "pollingInterval"); // validated; unused: waits are poll-free (waitForChange)
    if (timeout === undefined) return checkStatusResponse(c, instanceId);
    const deadline = now() + timeout * 1000;
    for (;;) {
      const s = await c.hub.getStatus(instanceId);
      if (s?.runtimeStatus === "Completed") return json(200, s.output ?? null);
      if (s && TERMINAL.has(s.runtimeStatus)) return statusResponse(c, instanceId);
      const left = deadline - now();
      if (left <= 0 || c.req.signal?.aborted) return checkStatusResponse(c, instanceId);
      await c.hub.waitForChange(instanceId, left, c.req.signal);
    }
  };

  const start = async (c: Ctx, name: string, instanceId: string | undefined): Promise<DurableApiResponse> => {
    const input = jsonBody(c.req);
    if (options.isOrchestrator && !options.isOrchestrator(name)) {
      return problem(
        400,
        `The function '${name}' doesn't exist, is disabled, or is not an orchestrator function.`,
      );
    }
    const started = await c.hub.startNew(name, {
      ...(instanceId !== undefined ? { instanceId } : {}),
      input,
    });
    return startedResponse(c, started.instanceId);
  };

  const restart = async (c: Ctx, instanceId: string): Promise<DurableApiResponse> => {
    const newId = boolParam(c.req.query, "restartWithNewInstanceId", true);
    const s = await c.hub.getStatus(instanceId, { showInput: true });
    if (!s) return problem(400, `InstanceId '${instanceId}' does not match a valid orchestration instance.`);
    const input = s.input === undefined || s.input === null ? null : JSON.stringify(s.input);
    const started = await c.hub.startNew(s.name, { ...(newId ? {} : { instanceId }), input });
    return startedResponse(c, started.instanceId);
  };

  /** raiseEvent / terminate / suspend / resume: 202, 404 unknown, 410 done. */
  const answer = (instanceId: string, r: "ok" | "notFound" | "notRunning"): DurableApiResponse =>
    r === "ok"
      ? { status: 202, headers: {}, body: "" }
      : r === "notFound"
        ? problem(404, `No orchestration instance with the id '${instanceId}' was found.`)
        : problem(
            410,
            `The orchestration instance '${instanceId}' has already completed, failed or been terminated.`,
          );

  const raiseEvent = async (c: Ctx, instanceId: string, eventName: string): Promise<DurableApiResponse> => {
    const type = header(c.req, "content-type")?.split(";")[0]?.trim().toLowerCase();
    // The extension takes only application/json content (an empty body, no event data, has none to check here),
    // and answers 404/410 for an unknown or finished instance before it looks at the content type.
    if (Buffer.from(c.req.body).toString("utf8").trim() !== "" && type !== "application/json") {
      const s = await c.hub.getStatus(instanceId);
      if (!s) return answer(instanceId, "notFound");
      if (TERMINAL.has(s.runtimeStatus)) return answer(instanceId, "notRunning");
      return problem(400, "Only application/json request content is supported");
    }
    const body = jsonBody(c.req);
    return answer(instanceId, await c.hub.raiseEvent(instanceId, eventName, body));
  };

  const purgeOne = async (c: Ctx, instanceId: string): Promise<DurableApiResponse> => {
    const s = await c.hub.getStatus(instanceId);
    if (!s) return problem(404, `No orchestration instance with the id '${instanceId}' was found.`);
    if (!TERMINAL.has(s.runtimeStatus)) {
      // The extension answers this 412 with a JSON string body.
      return json(
        412,
        `Only orchestrations in a terminal state can be purged, but the orchestration with instance ID ${instanceId} has status ${s.runtimeStatus}`,
      );
    }
    const n = await c.hub.purge(instanceId);
    if (n === 0) return problem(404, `No orchestration instance with the id '${instanceId}' was found.`);
    return json(200, { instancesDeleted: n });
  };

  const rewind = async (c: Ctx, instanceId: string): Promise<DurableApiResponse> => {
    // JSON strings: the JS SDK's rewind() makes `new Error(response.data)` of them.
    const s = await c.hub.getStatus(instanceId);
    if (!s) return json(404, `No orchestration with instance ID "${instanceId}" found.`);
    if (s.runtimeStatus !== "Failed") {
      return json(
        412,
        `This orchestration has status ${s.runtimeStatus}, but only orchestrations in the "Failed" state can be rewound.`,
      );
    }
    return json(501, "Rewind is not supported by the dev host's task hub (Cosmos DB).");
  };

  const route = async (req: DurableApiRequest, rest: string): Promise<DurableApiResponse> => {
    let parts: string[];
    try {
      parts = rest
        .split("/")
        .filter((p) => p !== "")
        .map((p) => decodeURIComponent(p));
    } catch {
      return problem(400, "The request path is not valid percent-encoding.");
    }
    const method = req.method.toUpperCase();
    const [head = "", ...tail] = parts;
    const controller = head.toLowerCase();

    if (controller === "entities") {
      return problem(
        501,
        "Durable entities are not supported by the dev host: entity functions, signalEntity and readEntityState need the Azure Functions host.",
      );
    }
    if (controller !== "orchestrators" && controller !== "instances") {
      return problem(
        404,
        `No durable endpoint at ${DURABLE_WEBHOOK_PATH}/${rest}: the dev host serves orchestrators/{name}[/{instanceId}] and instances[/{instanceId}[/{operation}]].`,
      );
    }

    const taskHubParam = single(req.query, "taskHub");
    const hubName = taskHubParam === undefined || taskHubParam.trim() === "" ? undefined : taskHubParam;
    const hub = resolveHub(hubName);
    if (!hub) {
      return problem(400, `The dev host does not serve the task hub '${hubName}' (query parameter taskHub).`);
    }
    const connectionParam = single(req.query, "connection");
    const c: Ctx = {
      req,
      hub,
      origin: originOf(req),
      connection:
        connectionParam && connectionParam.trim() !== "" ? connectionParam : DEFAULT_CONNECTION_NAME,
      taskHubParam: hubName,
    };

    if (controller === "orchestrators") {
      const [name, instanceId, extra] = tail;
      if (name === undefined || extra !== undefined) {
        return problem(404, "Start an orchestration with POST orchestrators/{functionName}[/{instanceId}].");
      }
      if (method !== "POST") return problem(405, "Use POST to start an orchestration.", { allow: "POST" });
      return start(c, name, instanceId === undefined ? undefined : validateInstanceId(instanceId));
    }

    // instances[/{id}[/{operation}]] and instances/{id}/raiseEvent/{eventName}
    const [rawId, rawOperation, eventName, extra] = tail;
    const isRead = method === "GET" || method === "HEAD";
    if (rawId === undefined) {
      if (isRead) {
        const { filter, none } = filterOf(req, false);
        if (none) return json(200, []);
        const page = await hub.list(filter);
        const showInput = filter.showInput !== false;
        return json(
          200,
          page.instances.map((s) => statusPayload(s, showInput, false)),
          page.continuationToken ? { "x-ms-continuation-token": page.continuationToken } : {},
        );
      }
      if (method === "DELETE") {
        const { filter, none } = filterOf(req, true);
        const n = none ? 0 : await hub.purgeMany(filter);
        return n === 0
          ? problem(404, "No instances matched the filter.")
          : json(200, { instancesDeleted: n });
      }
      return problem(405, "Use GET to list instances or DELETE to purge them.", { allow: "GET, DELETE" });
    }
    const instanceId = validateInstanceId(rawId);
    if (rawOperation === undefined) {
      if (isRead) return statusResponse(c, instanceId);
      if (method === "DELETE") return purgeOne(c, instanceId);
      return problem(405, "Use GET for an instance's status or DELETE to purge its history.", {
        allow: "GET, DELETE",
      });
    }
    const operation = rawOperation.toLowerCase();
    const known = ["raiseevent", "terminate", "suspend", "resume", "rewind", "restart"];
    if (!known.includes(operation) || (operation === "raiseevent") !== (eventName !== undefined) || extra) {
      return problem(
        404,
        "Instance operations: POST instances/{id}/raiseEvent/{eventName}, terminate, suspend, resume, restart, rewind.",
      );
    }
    if (method !== "POST") return problem(405, `Use POST for ${rawOperation}.`, { allow: "POST" });
    const reason = single(req.query, "reason") ?? null;
    switch (operation) {
      case "raiseevent":
        return raiseEvent(c, instanceId, eventName as string);
      case "terminate":
        return answer(instanceId, await hub.terminate(instanceId, reason));
      case "suspend":
        return answer(instanceId, await hub.suspend(instanceId, reason));
      case "resume":
        return answer(instanceId, await hub.resume(instanceId, reason));
      case "restart":
        return restart(c, instanceId);
      default:
        return rewind(c, instanceId);
    }
  };

  return (req) => {
    if (req.path !== DURABLE_WEBHOOK_PATH && !req.path.startsWith(PREFIX)) return undefined;
    const rest = req.path.slice(PREFIX.length);
    return route(req, rest).catch((e: unknown) => {
      if (e instanceof BadRequest) return problem(400, e.message);
      const refused = clientErrorOf(e);
      if (refused) return problem(refused.status, refused.message);
      const message = `The durable task hub failed: ${e instanceof Error ? e.message : String(e)}`;
      options.onError?.(message, e);
      return problem(500, message);
    });
  };
}

/** The handler as one of the dev host server's built-in routes (src/devhost/http/server.ts). */
export function durableBuiltinRoutes(handler: DurableApiHandler): BuiltinRoutes {
  return {
    // `/runtime/webhooks/durabletask` and below; `/runtime/webhooks/durabletaskx` goes on to the app's routes.
    prefix: DURABLE_WEBHOOK_PATH,
    handle: async (req: BuiltinRequest): Promise<BuiltinResponse | undefined> => {
      const out = handler({
        method: req.method,
        path: req.url.pathname,
        query: req.url.searchParams,
        headers: req.headers,
        body: req.body,
        ...(req.signal ? { signal: req.signal } : {}),
      });
      return out === undefined ? undefined : await out;
    },
  };
}
