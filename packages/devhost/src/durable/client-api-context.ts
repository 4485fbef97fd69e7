import { type DurableApiResponse, type DurableErrorContext, problem } from "./http-errors.js";
import type { RuntimeStatus, TaskHubClient } from "./types.js";

/**
 * What every route handler of the durable HTTP API (client-api.ts) is given: the request, the task hub it is for,
 * where links point, and the handler's settings; plus the few answers and checks several routes share.
 */

export interface DurableApiRequest {
  /** The HTTP method (GET, POST, DELETE …). */
  method: string;
  /** The request path as received (percent-encoded), without the query. */
  path: string;
  /** The query string's parameters. */
  query: URLSearchParams;
  /** Lower-case header names. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The request body as received. */
  body: Uint8Array;
  /** Aborts a create-and-wait when the client goes away. */
  signal?: AbortSignal;
}

/** The handler's options as the routes use them (getters read when a route needs the value). */
export interface RouteSettings {
  /** The largest payload a client may send, in bytes. */
  maxPayloadBytes: () => number;
  /** Clock for create-and-wait deadlines. */
  now: () => number;
  /** Whether the app has an orchestrator of that name (when the host knows). */
  isOrchestrator: ((name: string) => boolean) | undefined;
  /** Appended to links as the extension appends its system key. */
  requiredQuery: string;
}

/** One request being answered, once its path names a route family and its task hub is this host's. */
export interface RouteContext {
  req: DurableApiRequest;
  /** The request's method, upper-case. */
  method: string;
  hub: TaskHubClient;
  /** The origin links use: the one the client called (as the extension uses request.RequestUri). */
  origin: string;
  connection: string;
  taskHubParam: string | undefined;
  /** What an error answer and the log name: the route, the instance (filled in as the request is understood). */
  where: DurableErrorContext;
  settings: RouteSettings;
}

/** A route family's handler: the path segments after the family's name (decoded). */
export type RouteHandler = (c: RouteContext, tail: string[]) => Promise<DurableApiResponse>;

/** Statuses in which an instance is done (the extension's IsCompletedStatus; Canceled is never produced). */
export const TERMINAL: ReadonlySet<RuntimeStatus> = new Set(["Completed", "Failed", "Terminated"]);

export function header(req: DurableApiRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export const notFound = (instanceId: string) =>
  problem(404, "InstanceNotFound", `No orchestration instance with the id '${instanceId}' was found.`);
