import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { HttpCookie, HttpData } from "../coreTypes.js";
import { DevHostError } from "../errors.js";
import type { BindingExtensions } from "../extensions.js";
import { answerInvocationFailure } from "../hostLimits.js";
import { HTTP_REASON, invokeFunction } from "../invocation.js";
import type { LoadedApp } from "../loader.js";
import type { HostLogger } from "../logger.js";
import { applyCors, type CorsPolicy } from "./cors.js";
import { findRoute, type RouteTable } from "./router.js";
import { invokeStreaming } from "./stream.js";

/** The host's request body cap (Functions: 100 MB, 104857600 bytes); larger bodies get 413. */
export const DEFAULT_MAX_REQUEST_BODY_BYTES = 104_857_600;
/** The host's URL length cap (4096 bytes); longer request targets get 414. */
export const DEFAULT_MAX_URL_LENGTH = 4096;

export interface HttpServerOptions {
  app: LoadedApp;
  table: RouteTable;
  logger: HostLogger;
  extensions?: BindingExtensions;
  maxRequestBodyBytes?: number;
  maxUrlLength?: number;
  /** Core Tools' local CORS (Host.CORS / --cors); none = no CORS headers, OPTIONS routed like any method. */
  cors?: CorsPolicy;
  /** The host's own endpoints (e.g. Durable's `/runtime/webhooks/durabletask/`), served before function routes. */
  builtinRoutes?: BuiltinRoutes[];
}

/** A request to a host endpoint: the path without query, the query, lower-case headers, the whole body. */
export interface BuiltinRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: Buffer;
  /** Aborted when the client goes away before the answer (a long wait, e.g. Durable's create-and-wait, ends). */
  signal?: AbortSignal;
}

export interface BuiltinResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/**
 * Endpoints the host itself serves under `prefix`, at a path-segment boundary (underPrefix: `/_dev` and `/_dev/…`,
 * not `/_devx`); `handle` answering undefined means 404.
 */
export interface BuiltinRoutes {
  prefix: string;
  /** false while the host does not serve them (turned off, or not ready yet): their paths go on to functions. */
  enabled?(): boolean;
  handle(req: BuiltinRequest): Promise<BuiltinResponse | undefined>;
}

/** `pathname` is `prefix` or below it, at a segment boundary (a trailing '/' on `prefix` makes no difference). */
export function underPrefix(pathname: string, prefix: string): boolean {
  const bare = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  return pathname === bare || pathname.startsWith(`${bare}/`);
}

function empty(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-length": "0" });
  res.end();
}

/** The body, "too-large" past the limit, or "aborted" when the client went away first (no invocation then). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | "too-large" | "aborted"> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers["content-length"] ?? 0) > limit) return resolve("too-large");
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners("data");
        req.resume(); // drain, then answer 413
        resolve("too-large");
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    // A request destroyed before its end (client aborted) would otherwise keep a graceful stop waiting forever.
    req.on("close", () => resolve("aborted"));
    req.on("error", (e: NodeJS.ErrnoException) => (e.code === "ECONNRESET" ? resolve("aborted") : reject(e)));
  });
}

function cookieHeader(c: HttpCookie): string {
  let s = `${c.name}=${c.value ?? ""}`;
  if (c.domain?.value) s += `; domain=${c.domain.value}`;
  if (c.path?.value) s += `; path=${c.path.value}`;
  if (c.expires?.value?.seconds !== undefined) {
    s += `; expires=${new Date(c.expires.value.seconds * 1000).toUTCString()}`;
  }
  if (c.maxAge?.value !== undefined) s += `; max-age=${c.maxAge.value}`;
  if (c.secure?.value) s += "; secure";
  if (c.httpOnly?.value) s += "; httponly";
  if (c.sameSite && c.sameSite !== "none")
    s += `; samesite=${c.sameSite === "explicitNone" ? "none" : c.sameSite}`;
  return s;
}

function bodyBytes(http: HttpData): Buffer {
  const body = http.body;
  if (!body) return Buffer.alloc(0);
  if (body.bytes) return Buffer.from(body.bytes);
  if (body.string !== undefined) return Buffer.from(body.string);
  if (body.json !== undefined) return Buffer.from(body.json);
  return Buffer.alloc(0);
}

/** The HTTP trigger endpoint: a node:http server that routes to functions and tracks in-flight requests. */
export class DevHttpServer {
  readonly #options: HttpServerOptions;
  readonly #server: Server;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: HttpServerOptions) {
    this.#options = options;
    this.#server = createServer((req, res) => {
      const handled = this.#handle(req, res).catch((e) => {
        options.logger.error(`HTTP request failed in the dev host: ${(e as Error)?.stack ?? String(e)}`);
        if (!res.headersSent) empty(res, 500);
        else res.destroy();
      });
      this.#inFlight.add(handled);
      void handled.finally(() => this.#inFlight.delete(handled));
    });
  }

  /** Listens; a taken port becomes DevHostError "PortInUse". Returns the bound port. */
  listen(port: number, hostname: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException) => {
        reject(
          e.code === "EADDRINUSE"
            ? new DevHostError(
                `Port ${port} is unavailable (in use by another process). Choose another with --port.`,
                {
                  code: "PortInUse",
                },
              )
            : e,
        );
      };
      this.#server.once("error", onError);
      this.#server.listen(port, hostname, () => {
        this.#server.off("error", onError);
        resolve((this.#server.address() as AddressInfo).port);
      });
    });
  }

  /** Stops accepting connections, lets in-flight requests finish, then closes the remaining sockets. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeIdleConnections();
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    this.#server.closeAllConnections();
    await closed;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  async #builtin(
    routes: BuiltinRoutes,
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    limit: number,
  ): Promise<void> {
    const body = await readBody(req, limit);
    if (body === "too-large") return empty(res, 413);
    if (body === "aborted") return;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    const gone = new AbortController();
    res.on("close", () => gone.abort());
    let out: BuiltinResponse | undefined;
    try {
      out = await routes.handle({ method: req.method ?? "GET", url, headers, body, signal: gone.signal });
    } catch (e) {
      this.#options.logger.error(
        `The host endpoint ${url.pathname} failed: ${(e as Error)?.stack ?? String(e)}`,
      );
      return empty(res, 500);
    }
    if (!out) return empty(res, 404);
    const bytes = out.body === undefined ? Buffer.alloc(0) : Buffer.from(out.body);
    for (const [name, value] of Object.entries(out.headers ?? {})) res.setHeader(name, value);
    res.setHeader("content-length", String(bytes.length));
    res.writeHead(out.status);
    res.end(req.method === "HEAD" ? undefined : bytes);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { app, table, logger, cors } = this.#options;
    // Before routing, as the CORS middleware runs before the host's: a preflight never reaches a function.
    if (cors && applyCors(cors, req, res)) return;
    const target = req.url ?? "/";
    if (target.length > (this.#options.maxUrlLength ?? DEFAULT_MAX_URL_LENGTH)) return empty(res, 414);
    const url = new URL(target, `http://${req.headers.host ?? "localhost"}`);
    const limit = this.#options.maxRequestBodyBytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES;
    const builtin = this.#options.builtinRoutes?.find(
      (b) => underPrefix(url.pathname, b.prefix) && (b.enabled?.() ?? true),
    );
    if (builtin) return this.#builtin(builtin, req, res, url, limit);
    const found = findRoute(table, req.method ?? "GET", url.pathname);
    if (!found) return empty(res, 404);
    const httpUri = app.capabilities.HttpUri;
    if (httpUri && Number(req.headers["content-length"] ?? 0) > limit) return empty(res, 413);
    const body = httpUri ? Buffer.alloc(0) : await readBody(req, limit);
    if (body === "too-large") return empty(res, 413);
    if (body === "aborted") return;

    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    const query: Record<string, string> = {};
    for (const key of new Set(url.searchParams.keys())) query[key] = url.searchParams.getAll(key).join(",");
    const http: HttpData = {
      method: req.method,
      url: url.href,
      headers,
      query,
      params: found.params,
      body: body.length > 0 ? { bytes: body } : undefined,
    };
    const fn = found.route.fn;
    if (httpUri) {
      const extensions = this.#options.extensions;
      return invokeStreaming({ app, fn, logger, extensions, httpUri, req, res, http });
    }
    const outcome = await invokeFunction(app, fn, logger, {
      reason: HTTP_REASON,
      inputData: [{ name: fn.triggerName, data: { http } }],
      extensions: this.#options.extensions,
      // As the host: route params and query values by name, plus `Query` and `Headers` objects.
      bindingData: { ...query, ...found.params, Query: query, Headers: headers },
      traceParent: headers.traceparent,
    });
    // The host answers an unhandled failure with an empty 500 (details in the log under the Id); a limit of the
    // dev host (an unsupported binding) is said in the body.
    if (outcome.error !== undefined) return answerInvocationFailure(res, fn, outcome.error);
    const out = outcome.response?.returnValue?.http;
    if (!out) return empty(res, 204);
    const bytes = bodyBytes(out);
    for (const [name, value] of Object.entries(out.headers ?? {})) res.setHeader(name, value);
    const cookies = (out.cookies ?? []).map(cookieHeader);
    if (cookies.length) res.setHeader("set-cookie", cookies);
    res.setHeader("content-length", String(bytes.length));
    res.writeHead(Number(out.statusCode ?? 200));
    res.end(req.method === "HEAD" ? undefined : bytes);
  }
}
