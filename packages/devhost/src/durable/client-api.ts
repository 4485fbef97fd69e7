import type { BuiltinRequest, BuiltinResponse, BuiltinRoutes } from "../http/server.js";
import {
  type DurableApiRequest,
  header,
  type RouteContext,
  type RouteHandler,
  type RouteSettings,
} from "./client-api-context.js";
import { entityRoute } from "./client-api-entities.js";
import { single } from "./client-api-input.js";
import { instancesRoute, orchestratorsRoute } from "./client-api-instances.js";
import { DEFAULT_CONNECTION_NAME, DURABLE_WEBHOOK_PATH, reachableOrigin } from "./client-binding.js";
import {
  type DurableApiResponse,
  type DurableErrorContext,
  durableErrorResponse,
  problem,
} from "./http-errors.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import type { TaskHubClient } from "./types.js";

export type { DurableApiRequest } from "./client-api-context.js";
export { MAX_LIST_PAGE_SIZE, MAX_WAIT_SECONDS } from "./client-api-input.js";
export type { DurableApiResponse } from "./http-errors.js";

/**
 * The Durable Functions extension's HTTP API (HttpApiHandler.cs; learn.microsoft.com "HTTP API reference"),
 * served by the dev host under `/runtime/webhooks/durabletask/` — the webhook links and, as the binding's
 * `rpcBaseUrl`, every call of the JS DurableClient. Status codes, bodies and headers follow the extension; where
 * it answers a malformed request with a silent default or a 500, this answers 400 with the reason. This module
 * finds a request's route family and checks its task hub; the orchestration routes are client-api-instances.ts
 * (an instance's status and the wait of a start: client-api-status.ts), the entities client-api-entities.ts;
 * rewind is refused with 501 (not supported by this task hub). Requests are checked at the door
 * (client-api-input.ts); every error becomes its answer in one place (http-errors.ts).
 */

/** undefined = not a durable path (the caller routes it elsewhere). */
export type DurableApiHandler = (req: DurableApiRequest) => Promise<DurableApiResponse> | undefined;

/** Options of `createDurableApiHandler`: the task hub, the base URL of links, and the limits and callbacks. */
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

/** The route families: the first path segment after the prefix (case-insensitive) names its handler. */
const ROUTE_FAMILIES: ReadonlyMap<string, RouteHandler> = new Map([
  ["orchestrators", orchestratorsRoute],
  ["instances", instancesRoute],
  ["entities", entitiesRoute],
]);

/**
 * The Durable Functions extension's HTTP API (`/runtime/webhooks/durabletask/…`) over a task hub: start,
 * status, list, raise event, terminate, suspend, resume, purge, entities.
 */
export function createDurableApiHandler(options: DurableApiOptions): DurableApiHandler {
  const hubOf = typeof options.hub === "function" ? options.hub : () => options.hub as TaskHubClient;
  const baseUrl = typeof options.baseUrl === "function" ? options.baseUrl : () => options.baseUrl as string;
  const limit = options.maxPayloadBytes ?? DURABLE_HUB_SETTINGS.maxPayloadBytes.default;
  const settings: RouteSettings = {
    maxPayloadBytes: typeof limit === "function" ? limit : () => limit,
    now: options.now ?? Date.now,
    isOrchestrator: options.isOrchestrator,
    requiredQuery: options.requiredQueryStringParameters ?? "",
  };
  return (req) => {
    if (req.path !== DURABLE_WEBHOOK_PATH && !req.path.startsWith(PREFIX)) return undefined;
    const rest = req.path.slice(PREFIX.length);
    const where: DurableErrorContext = { route: `${req.method.toUpperCase()} ${rest.slice(0, 80)}` };
    // Anything thrown below — a refusal at the door, the hub's TaskHubError, a Cosmos DB error, a bug — is
    // answered by durableErrorResponse alone.
    return route(req, rest, where, { hubOf, baseUrl, settings }).catch((e: unknown) =>
      durableErrorResponse(e, where, options.onError),
    );
  };
}

/**
 * One request under the prefix: its path decoded, its route family found, its task hub checked (one host serves
 * one hub), then the family's handler with the request's context.
 */
async function route(
  req: DurableApiRequest,
  rest: string,
  where: DurableErrorContext,
  host: { hubOf: () => TaskHubClient; baseUrl: () => string; settings: RouteSettings },
): Promise<DurableApiResponse> {
  let parts: string[];
  try {
    parts = rest
      .split("/")
      .filter((p) => p !== "")
      .map((p) => decodeURIComponent(p));
  } catch {
    return problem(400, "InvalidPath", "The request path is not valid percent-encoding.");
  }
  const [head = "", ...tail] = parts;
  const family = ROUTE_FAMILIES.get(head.toLowerCase());
  if (!family) {
    return problem(
      404,
      "NoSuchEndpoint",
      `No durable endpoint at ${DURABLE_WEBHOOK_PATH}/${rest.slice(0, 200)}: the dev host serves orchestrators/{name}[/{instanceId}], instances[/{instanceId}[/{operation}]] and entities[/{name}[/{key}]].`,
    );
  }
  const taskHubParam = single(req.query, "taskHub");
  const hubName = taskHubParam === undefined || taskHubParam.trim() === "" ? undefined : taskHubParam;
  const hub = host.hubOf();
  // One hub: a request naming another (task hub names are case-insensitive) is not served.
  if (hubName !== undefined && hubName.toLowerCase() !== hub.hubName.toLowerCase()) {
    return problem(
      400,
      "UnknownTaskHub",
      `The dev host does not serve the task hub '${hubName.slice(0, 100)}' (query parameter taskHub).`,
    );
  }
  const connectionParam = single(req.query, "connection");
  return family(
    {
      req,
      method: req.method.toUpperCase(),
      hub,
      origin: originOf(req, host.baseUrl),
      connection:
        connectionParam && connectionParam.trim() !== "" ? connectionParam : DEFAULT_CONNECTION_NAME,
      taskHubParam: hubName,
      where,
      settings: host.settings,
    },
    tail,
  );
}

/** The origin links use: the client's Host when it is a plain host[:port], else the host's own address. */
function originOf(req: DurableApiRequest, baseUrl: () => string): string {
  const host = header(req, "host");
  // Only a plain host[:port] is trusted into links; anything odd falls back to the host's own address.
  if (host && /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(host)) {
    return reachableOrigin(`http://${host}`);
  }
  return reachableOrigin(baseUrl());
}

/** entities[/{name}[/{key}]]: served by client-api-entities.ts. */
function entitiesRoute(c: RouteContext, tail: string[]): Promise<DurableApiResponse> {
  c.where.route = `${c.method} entities`;
  return entityRoute(
    c.hub,
    c.method,
    tail,
    c.req.query,
    { continuationToken: header(c.req, "x-ms-continuation-token") },
    c.req.body,
    c.settings.maxPayloadBytes(),
    c.where,
  );
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
