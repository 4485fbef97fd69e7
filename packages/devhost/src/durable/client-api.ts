import type { BuiltinRequest, BuiltinResponse, BuiltinRoutes } from "../http/server.js";
import { entityRoute } from "./client-api-entities.js";
import { boolParam, checkText, filterOf, jsonPayload, secondsParam, single } from "./client-api-input.js";
import {
  DEFAULT_CONNECTION_NAME,
  DURABLE_WEBHOOK_PATH,
  type HttpManagementPayload,
  instanceManagementUrls,
  reachableOrigin,
} from "./client-binding.js";
import { validateInstanceId } from "./errors.js";
import {
  type DurableApiResponse,
  type DurableErrorContext,
  durableErrorResponse,
  json,
  problem,
} from "./http-errors.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import type { InstanceStatus, RuntimeStatus, TaskHubClient } from "./types.js";
import { rewindRefusal } from "./unsupported.js";

export { MAX_LIST_PAGE_SIZE, MAX_WAIT_SECONDS } from "./client-api-input.js";
export type { DurableApiResponse } from "./http-errors.js";

/**
 * The Durable Functions extension's HTTP API (HttpApiHandler.cs; learn.microsoft.com "HTTP API reference"),
 * served by the dev host under `/runtime/webhooks/durabletask/` — the webhook links and, as the binding's
 * `rpcBaseUrl`, every call of the JS DurableClient. Status codes, bodies and headers follow the extension; where
 * it answers a malformed request with a silent default or a 500, this answers 400 with the reason. Entities are
 * served by client-api-entities.ts; rewind is refused with 501 (not supported by this task hub). Requests are checked at the door
 * (client-api-input.ts); every error becomes its answer in one place (http-errors.ts).
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
  /**
   * Told about failures of the task hub (a 500, or a 503 when Cosmos DB stayed busy): the message names the route
   * and the instance id. The dev host logs it.
   */
  onError?: (message: string, error: unknown) => void;
  /**
   * The largest payload a client may send (start input, event data, a reason, a restart's input), in bytes: larger
   * is a 413 at the door. The hub's DURABLE_MAX_PAYLOAD_BYTES; a getter when the settings are read later (the dev
   * host reads them when the task hub starts). Default DURABLE_HUB_SETTINGS.maxPayloadBytes.default.
   */
  maxPayloadBytes?: number | (() => number);
  /** Clock for create-and-wait deadlines (tests inject a fake). */
  now?: () => number;
}

const PREFIX = `${DURABLE_WEBHOOK_PATH}/`;
/** Statuses in which an instance is done (the extension's IsCompletedStatus; Canceled is never produced). */
const TERMINAL: ReadonlySet<RuntimeStatus> = new Set(["Completed", "Failed", "Terminated"]);

function header(req: DurableApiRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
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

interface Ctx {
  req: DurableApiRequest;
  hub: TaskHubClient;
  /** The origin links use: the one the client called (as the extension uses request.RequestUri). */
  origin: string;
  connection: string;
  taskHubParam: string | undefined;
  /** What an error answer and the log name: the route, the instance (filled in as the request is understood). */
  where: DurableErrorContext;
}

const notFound = (instanceId: string) =>
  problem(404, "InstanceNotFound", `No orchestration instance with the id '${instanceId}' was found.`);

/**
 * The Durable Functions extension's HTTP API (`/runtime/webhooks/durabletask/…`) over a task hub: start,
 * status, list, raise event, terminate, suspend, resume, purge, entities.
 */
export function createDurableApiHandler(options: DurableApiOptions): DurableApiHandler {
  const hubOf = typeof options.hub === "function" ? options.hub : () => options.hub as TaskHubClient;
  // One hub: a request naming another (task hub names are case-insensitive) is not served.
  const resolveHub = (name: string | undefined): TaskHubClient | undefined => {
    const hub = hubOf();
    return name === undefined || name.toLowerCase() === hub.hubName.toLowerCase() ? hub : undefined;
  };
  const baseUrl = typeof options.baseUrl === "function" ? options.baseUrl : () => options.baseUrl as string;
  const limit = options.maxPayloadBytes ?? DURABLE_HUB_SETTINGS.maxPayloadBytes.default;
  const maxPayloadBytes = typeof limit === "function" ? limit : () => limit;
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
    if (!s) return notFound(instanceId);
    const body = statusPayload(s, showInput, showHistory);
    if (s.runtimeStatus === "Failed") return json(failAs500 ? 500 : 200, body);
    if (TERMINAL.has(s.runtimeStatus)) return json(200, body);
    const self = `${c.origin}${c.req.path}${c.req.query.size > 0 ? `?${c.req.query}` : ""}`;
    // The extension asks for 5 s here (10 s on a check-status response).
    return json(202, body, { location: self, "retry-after": "5" });
  };

  /**
   * After a start: wait for completion when asked (timeout=), else the check-status response. The wait is the
   * hub's (waitForChange: woken by its commits, its feed, and its own slow poll); this adds no timer or listener
   * of its own — one read per change, and the request's signal ends it when the client goes away.
   */
  const startedResponse = async (c: Ctx, instanceId: string): Promise<DurableApiResponse> => {
    c.where.instanceId = instanceId;
    const timeout = secondsParam(c.req.query, "timeout");
    secondsParam(c.req.query, "pollingInterval"); // validated; unused: the wait is the hub's, not a poll
    if (timeout === undefined) return checkStatusResponse(c, instanceId);
    const deadline = now() + timeout * 1000;
    for (;;) {
      const s = await c.hub.getStatus(instanceId);
      if (s?.runtimeStatus === "Completed") return json(200, s.output ?? null);
      if (s && TERMINAL.has(s.runtimeStatus)) return statusResponse(c, instanceId);
      const left = deadline - now();
      if (left <= 0 || c.req.signal?.aborted) return checkStatusResponse(c, instanceId);
      await c.hub.waitForChange(instanceId, left, c.req.signal, s?.lastUpdatedTime);
    }
  };

  const start = async (c: Ctx, name: string, instanceId: string | undefined): Promise<DurableApiResponse> => {
    const input = jsonPayload(c.req.body, "The orchestration input", maxPayloadBytes());
    if (options.isOrchestrator && !options.isOrchestrator(name)) {
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
  };

  const restart = async (c: Ctx, instanceId: string): Promise<DurableApiResponse> => {
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
    checkText(input, "The restarted instance's input", maxPayloadBytes());
    const started = await c.hub.startNew(s.name, { ...(newId ? {} : { instanceId }), input });
    return startedResponse(c, started.instanceId);
  };

  /** raiseEvent / terminate / suspend / resume: 202, 404 unknown, 410 done. */
  const answer = (instanceId: string, r: "ok" | "notFound" | "notRunning"): DurableApiResponse =>
    r === "ok"
      ? { status: 202, headers: {}, body: "" }
      : r === "notFound"
        ? notFound(instanceId)
        : problem(
            410,
            "InstanceCompleted",
            `The orchestration instance '${instanceId}' has already completed, failed or been terminated.`,
          );

  const raiseEvent = async (c: Ctx, instanceId: string, eventName: string): Promise<DurableApiResponse> => {
    const type = header(c.req, "content-type")?.split(";")[0]?.trim().toLowerCase();
    // The extension takes only application/json content (an empty body, no event data, has none to check here),
    // and answers 404/410 for an unknown or finished instance before it looks at the content type.
    if (!isBlank(c.req.body) && type !== "application/json") {
      const s = await c.hub.getStatus(instanceId);
      if (!s) return answer(instanceId, "notFound");
      if (TERMINAL.has(s.runtimeStatus)) return answer(instanceId, "notRunning");
      return problem(400, "UnsupportedMediaType", "Only application/json request content is supported");
    }
    const body = jsonPayload(c.req.body, `The data of event '${eventName}'`, maxPayloadBytes());
    return answer(instanceId, await c.hub.raiseEvent(instanceId, eventName, body));
  };

  /** terminate / suspend / resume with the `reason` query parameter (stored, so bounded as a payload). */
  const signal = async (
    c: Ctx,
    operation: "terminate" | "suspend" | "resume",
    instanceId: string,
  ): Promise<DurableApiResponse> => {
    const reason = single(c.req.query, "reason") ?? null;
    checkText(reason === null ? null : JSON.stringify(reason), `The ${operation} reason`, maxPayloadBytes());
    return answer(instanceId, await c.hub[operation](instanceId, reason));
  };

  const purgeOne = async (c: Ctx, instanceId: string): Promise<DurableApiResponse> => {
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
    return json(501, rewindRefusal(instanceId));
  };

  const instances = async (c: Ctx, method: string): Promise<DurableApiResponse> => {
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
  };

  const route = async (req: DurableApiRequest, rest: string, where: DurableErrorContext) => {
    let parts: string[];
    try {
      parts = rest
        .split("/")
        .filter((p) => p !== "")
        .map((p) => decodeURIComponent(p));
    } catch {
      return problem(400, "InvalidPath", "The request path is not valid percent-encoding.");
    }
    const method = req.method.toUpperCase();
    const [head = "", ...tail] = parts;
    const controller = head.toLowerCase();

    if (controller !== "orchestrators" && controller !== "instances" && controller !== "entities") {
      return problem(
        404,
        "NoSuchEndpoint",
        `No durable endpoint at ${DURABLE_WEBHOOK_PATH}/${rest.slice(0, 200)}: the dev host serves orchestrators/{name}[/{instanceId}], instances[/{instanceId}[/{operation}]] and entities[/{name}[/{key}]].`,
      );
    }

    const taskHubParam = single(req.query, "taskHub");
    const hubName = taskHubParam === undefined || taskHubParam.trim() === "" ? undefined : taskHubParam;
    const hub = resolveHub(hubName);
    if (!hub) {
      return problem(
        400,
        "UnknownTaskHub",
        `The dev host does not serve the task hub '${hubName?.slice(0, 100)}' (query parameter taskHub).`,
      );
    }
    const connectionParam = single(req.query, "connection");
    const c: Ctx = {
      req,
      hub,
      origin: originOf(req),
      connection:
        connectionParam && connectionParam.trim() !== "" ? connectionParam : DEFAULT_CONNECTION_NAME,
      taskHubParam: hubName,
      where,
    };

    if (controller === "entities") {
      where.route = `${method} entities`;
      return entityRoute(
        hub,
        method,
        tail,
        req.query,
        { continuationToken: header(req, "x-ms-continuation-token") },
        req.body,
        maxPayloadBytes(),
        where,
      );
    }
    if (controller === "orchestrators") {
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

    // instances[/{id}[/{operation}]] and instances/{id}/raiseEvent/{eventName}
    const [rawId, rawOperation, eventName, extra] = tail;
    if (rawId === undefined) {
      where.route = `${method} instances`;
      return instances(c, method);
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
        { allow: "GET, DELETE" },
      );
    }
    const operation = rawOperation.toLowerCase();
    const known = ["raiseevent", "terminate", "suspend", "resume", "rewind", "restart"];
    if (!known.includes(operation) || (operation === "raiseevent") !== (eventName !== undefined) || extra) {
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
  };

  return (req) => {
    if (req.path !== DURABLE_WEBHOOK_PATH && !req.path.startsWith(PREFIX)) return undefined;
    const rest = req.path.slice(PREFIX.length);
    const where: DurableErrorContext = { route: `${req.method.toUpperCase()} ${rest.slice(0, 80)}` };
    // Anything thrown below — a refusal at the door, the hub's TaskHubError, a Cosmos DB error, a bug — is
    // answered by durableErrorResponse alone.
    return route(req, rest, where).catch((e: unknown) => durableErrorResponse(e, where, options.onError));
  };
}

/** An empty or whitespace-only body (no event data). */
function isBlank(body: Uint8Array): boolean {
  for (const b of body) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return false;
  return true;
}

/** The handler as one of the dev host server's built-in routes (packages/devhost/src/http/server.ts). */
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
