import type { IncomingMessage, ServerResponse } from "node:http";
import type { HostLogger } from "../logger.js";
import { type RefusalBounds, readBody, refuseLargeBody, refuseSlowBody } from "./body.js";
import type { DataRateRule } from "./dataRate.js";
import { sendEmpty } from "./problem.js";

/** A request to a host endpoint: the path without query, the query, lower-case headers, the whole body. */
export interface BuiltinRequest {
  /** The request's method. */
  method: string;
  /** The request's URL. */
  url: URL;
  /** Headers, lower-case names. */
  headers: Record<string, string>;
  /** The whole body. */
  body: Buffer;
  /** Aborted when the client goes away before the answer (a long wait, e.g. Durable's create-and-wait, ends). */
  signal?: AbortSignal;
}

/** A host endpoint's answer. */
export interface BuiltinResponse {
  /** The HTTP status. */
  status: number;
  /** Response headers. */
  headers?: Record<string, string>;
  /** The body. */
  body?: string | Buffer;
}

/**
 * Endpoints the host itself serves under `prefix`, at a path-segment boundary (underPrefix: `/_dev` and `/_dev/…`,
 * not `/_devx`); `handle` answering undefined means 404. They answer only loopback (or listed) Host names, refuse
 * cross-site state-changing requests (crossSite.ts) and take bodies up to `maxBodyBytes` (default
 * DEV_HTTP_BUILTIN_MAX_BODY_BYTES), counted while reading.
 */
export interface BuiltinRoutes {
  /** The path the routes are served under (e.g. "/runtime/webhooks/durabletask"). */
  prefix: string;
  /** false while the host does not serve them (turned off, or not ready yet): their paths go on to functions. */
  enabled?(): boolean;
  /** The largest request body these routes take, in bytes; read when a request comes (settings may change). */
  maxBodyBytes?(): number;
  /** What that limit is, for the 413 (e.g. "the durable HTTP API (DURABLE_MAX_PAYLOAD_BYTES + 64 KiB)"). */
  maxBodyName?: string;
  /** Answers a request under `prefix`; undefined answers 404. */
  handle(req: BuiltinRequest): Promise<BuiltinResponse | undefined>;
}

/** `pathname` is `prefix` or below it, at a segment boundary (a trailing '/' on `prefix` makes no difference). */
export function underPrefix(pathname: string, prefix: string): boolean {
  const bare = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  return pathname === bare || pathname.startsWith(`${bare}/`);
}

/** Node's lower-case headers, repeated ones joined with ", " (as the host joins them). */
export function joinedHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

export interface BuiltinCall {
  routes: BuiltinRoutes;
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** The body limit and, for the 413, what it is. */
  limit: number;
  limitName: string;
  refusal: RefusalBounds;
  rate: DataRateRule;
  /** Takes the request's slot of the built-in routes' throttle, once the body is read; false when the client left. */
  enter(): Promise<boolean>;
  logger: HostLogger;
}

/** Reads the body (bounded, before taking a slot), calls the routes' handler and writes its answer; a throw is an empty 500, logged. */
export async function serveBuiltin(c: BuiltinCall): Promise<void> {
  const { req, res, url } = c;
  const body = await readBody(req, c.limit, c.rate);
  if (body === "too-large") return refuseLargeBody(req, res, c.limit, c.limitName, c.refusal);
  if (body === "too-slow") return refuseSlowBody(req, res, c.rate, c.refusal);
  if (body === "aborted") return;
  if (!(await c.enter())) return;
  const gone = new AbortController();
  res.on("close", () => gone.abort());
  let out: BuiltinResponse | undefined;
  try {
    out = await c.routes.handle({
      method: req.method ?? "GET",
      url,
      headers: joinedHeaders(req),
      body,
      signal: gone.signal,
    });
  } catch (e) {
    c.logger.error(`The host endpoint ${url.pathname} failed: ${(e as Error)?.stack ?? String(e)}`);
    return sendEmpty(res, 500);
  }
  if (!out) return sendEmpty(res, 404);
  const bytes = out.body === undefined ? Buffer.alloc(0) : Buffer.from(out.body);
  for (const [name, value] of Object.entries(out.headers ?? {})) res.setHeader(name, value);
  res.setHeader("content-length", String(bytes.length));
  res.writeHead(out.status);
  res.end(req.method === "HEAD" ? undefined : bytes);
}
