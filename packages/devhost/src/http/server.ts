import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import { type HostAllowList, HostGuard, parseAllowedHosts, withBindName } from "@cosmos-feed/emulator/hosts";
import { DevHostError } from "../errors.js";
import type { BindingExtensions } from "../extensions.js";
import type { LoadedApp } from "../loader.js";
import type { HostLogger } from "../logger.js";
import { type RefusalBounds, refuse } from "./body.js";
import { type BuiltinRoutes, serveBuiltin, underPrefix } from "./builtin.js";
import { applyCors, type CorsPolicy } from "./cors.js";
import { crossSiteRefusal } from "./crossSite.js";
import type { DataRateRule } from "./dataRate.js";
import { serveFunction } from "./functionCall.js";
import { sendEmpty } from "./problem.js";
import { findRoute, type RouteTable } from "./router.js";
import { DEV_HTTP_SETTINGS, type DevHttpSettings } from "./settings.js";
import { ConnectionTurns, RequestThrottle } from "./throttle.js";

export {
  type BuiltinRequest,
  type BuiltinResponse,
  type BuiltinRoutes,
  underPrefix,
} from "./builtin.js";

/** The host's request body cap (Functions: 100 MB, 104857600 bytes); larger bodies get 413. */
export const DEFAULT_MAX_REQUEST_BODY_BYTES = DEV_HTTP_SETTINGS.maxRequestBodyBytes.default;
/** The host's URL length cap (4096 bytes); longer request targets get 414. */
export const DEFAULT_MAX_URL_LENGTH = 4096;

export interface HttpServerOptions {
  app: LoadedApp;
  table: RouteTable;
  logger: HostLogger;
  extensions?: BindingExtensions;
  /** Overrides settings.maxRequestBodyBytes (FUNCTIONS_REQUEST_BODY_SIZE_LIMIT). */
  maxRequestBodyBytes?: number;
  maxUrlLength?: number;
  /** Core Tools' local CORS (Host.CORS / --cors); none = no CORS headers, OPTIONS routed like any method. */
  cors?: CorsPolicy;
  /** The host's own endpoints (e.g. Durable's `/runtime/webhooks/durabletask/`), served before function routes. */
  builtinRoutes?: BuiltinRoutes[];
  /** Limits and throttles (readDevHttpSettings); each missing one takes its default. */
  settings?: Partial<DevHttpSettings>;
  /** Host names answered besides loopback ones (Host.AllowedHosts / --allowed-hosts, parsed by parseAllowedHosts). */
  allowedHosts?: HostAllowList;
  /**
   * The app is not served (its load failed after a --watch save): every path but the built-in routes' is answered
   * 503 with this `{code, message}`.
   */
  unavailable?: { code: string; message: string };
  /** The clock of the minimum data rate (tests move a FakeClock); the system's by default. */
  clock?: Clock;
}

function defaults(): DevHttpSettings {
  const out = {} as DevHttpSettings;
  for (const [key, knob] of Object.entries(DEV_HTTP_SETTINGS))
    out[key as keyof DevHttpSettings] = knob.default;
  return out;
}

/**
 * The HTTP trigger endpoint: a node:http server that routes to functions and tracks in-flight requests. Its front
 * door, for every request: one turn at a time per connection (throttle.ts), the Host guard (hosts.ts), CORS, the
 * URL length; then for built-in routes the cross-site guard (crossSite.ts) and their own body limit and throttle, for
 * functions the host's HTTP throttle and FUNCTIONS_REQUEST_BODY_SIZE_LIMIT.
 */
export class DevHttpServer {
  readonly #options: HttpServerOptions;
  readonly #settings: DevHttpSettings;
  readonly #server: Server;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #turns: ConnectionTurns;
  readonly #functions: RequestThrottle;
  readonly #builtins: RequestThrottle;
  readonly #rate: DataRateRule;
  readonly #refusal: RefusalBounds;
  #allowed: HostAllowList;
  #hosts: HostGuard;
  /** Host names refused so far, each logged once (bounded: a flood of names is not a flood of lines). */
  readonly #refusedHosts = new Set<string>();

  constructor(options: HttpServerOptions) {
    this.#options = options;
    const s = { ...defaults(), ...options.settings };
    if (options.maxRequestBodyBytes !== undefined) s.maxRequestBodyBytes = options.maxRequestBodyBytes;
    this.#settings = s;
    this.#allowed = options.allowedHosts ?? parseAllowedHosts(undefined);
    this.#hosts = new HostGuard(this.#allowed);
    this.#turns = new ConnectionTurns(s.maxInFlightPerConnection, s.pipelineBacklog);
    this.#functions = new RequestThrottle(s.maxConcurrentRequests, s.maxOutstandingRequests);
    this.#builtins = new RequestThrottle(s.builtinMaxConcurrentRequests, s.builtinMaxOutstandingRequests);
    this.#rate = {
      minBytesPerSecond: s.minRequestBodyDataRate,
      graceMs: s.requestBodyGracePeriodMs,
      checkEveryMs: s.dataRateCheckIntervalMs,
      clock: options.clock ?? systemClock,
    };
    this.#refusal = { discardBytes: s.discardAfterRefusalBytes, lingerMs: s.refusalLingerMs };
    // Headers that never end (slowloris) are cut after headersTimeout (408), checked this often.
    const headers = {
      headersTimeout: s.headersTimeoutMs,
      keepAliveTimeout: s.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(s.dataRateCheckIntervalMs, s.headersTimeoutMs),
    };
    this.#server = createServer(headers, (req, res) => {
      const handled = this.#door(req, res).catch((e) => {
        options.logger.error(`HTTP request failed in the dev host: ${(e as Error)?.stack ?? String(e)}`);
        if (!res.headersSent) sendEmpty(res, 500);
        else res.destroy();
      });
      this.#inFlight.add(handled);
      void handled.finally(() => this.#inFlight.delete(handled));
    });
  }

  /** Listens; a taken port becomes DevHostError "PortInUse". Returns the bound port. */
  listen(port: number, hostname: string): Promise<number> {
    // Bound to a name that is not loopback (0.0.0.0, a LAN address): that name is the base URL's, so it is answered.
    this.#allowed = withBindName(this.#allowed, hostname);
    this.#hosts = new HostGuard(this.#allowed);
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

  /** Requests received and not yet answered (running or waiting for their turn). */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** One request at a time per connection (pipelined ones wait, and past the backlog the connection is not read). */
  async #door(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const release = await this.#turns.enter(req.socket);
    try {
      // Its client went away while it waited: nothing to answer, nothing to invoke.
      if (req.socket.destroyed) return;
      await this.#handle(req, res);
    } finally {
      release();
    }
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { table, logger, cors } = this.#options;
    const refusedHost = this.#hosts.check(req.headers.host);
    if (refusedHost) {
      const name = String(req.headers.host).slice(0, 100);
      if (!this.#refusedHosts.has(name) && this.#refusedHosts.size < 100) {
        this.#refusedHosts.add(name);
        logger.warn(`Refused a request for Host '${name}': ${refusedHost.message}`);
      }
      return this.#refuse(req, res, refusedHost.status, refusedHost.code, refusedHost.message);
    }
    // Before routing, as the CORS middleware runs before the host's: a preflight never reaches a function.
    if (cors && applyCors(cors, req, res)) return;
    const target = req.url ?? "/";
    if (target.length > (this.#options.maxUrlLength ?? DEFAULT_MAX_URL_LENGTH)) return sendEmpty(res, 414);
    const url = new URL(target, `http://${req.headers.host ?? "localhost"}`);
    const method = req.method ?? "GET";
    const s = this.#settings;
    const builtin = this.#options.builtinRoutes?.find(
      (b) => underPrefix(url.pathname, b.prefix) && (b.enabled?.() ?? true),
    );
    if (builtin) {
      const crossSite = crossSiteRefusal(method, req.headers, this.#allowed, cors);
      if (crossSite) {
        return this.#refuse(
          req,
          res,
          403,
          "CrossSiteRequest",
          `${method} ${url.pathname} is refused: ${crossSite}. The dev host's own endpoints take state-changing requests only from pages of this origin (or listed in Host.CORS) and from clients that are not browsers.`,
        );
      }
      const [limit, limitName] = this.#builtinBodyLimit(builtin);
      return this.#throttled(this.#builtins, "the dev host's endpoints", req, res, (enter) =>
        serveBuiltin({
          routes: builtin,
          req,
          res,
          url,
          limit,
          limitName,
          refusal: this.#refusal,
          rate: this.#rate,
          enter,
          logger,
        }),
      );
    }
    const unavailable = this.#options.unavailable;
    if (unavailable) {
      return this.#refuse(req, res, 503, unavailable.code, unavailable.message, { "retry-after": "1" });
    }
    const found = findRoute(table, method, url.pathname);
    if (!found) return sendEmpty(res, 404);
    const { app, extensions } = this.#options;
    return this.#throttled(this.#functions, "HTTP functions", req, res, (enter) =>
      serveFunction({
        app,
        logger,
        extensions,
        route: found.route,
        params: found.params,
        req,
        res,
        url,
        limit: s.maxRequestBodyBytes,
        refusal: this.#refusal,
        rate: this.#rate,
        enter,
      }),
    );
  }

  /** A refusal before the body was read: the answer, then at most DEV_HTTP_DISCARD_AFTER_REFUSAL_BYTES of the body. */
  #refuse(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    code: string,
    message: string,
    headers: Record<string, string> = {},
  ): void {
    refuse(req, res, this.#refusal, status, code, message, headers);
  }

  /** A built-in route's body limit and its name: its own, or DEV_HTTP_BUILTIN_MAX_BODY_BYTES, within the host's. */
  #builtinBodyLimit(builtin: BuiltinRoutes): [number, string] {
    const s = this.#settings;
    const own = builtin.maxBodyBytes?.();
    const limit = own ?? s.builtinMaxBodyBytes;
    if (s.maxRequestBodyBytes < limit) {
      return [s.maxRequestBodyBytes, `the dev host (${DEV_HTTP_SETTINGS.maxRequestBodyBytes.setting})`];
    }
    if (own === undefined)
      return [limit, `${builtin.prefix} (${DEV_HTTP_SETTINGS.builtinMaxBodyBytes.setting})`];
    return [limit, builtin.maxBodyName ?? builtin.prefix];
  }

  /**
   * Runs `work` admitted by `throttle` (429 when as many requests as it holds are running or waiting); `work` reads
   * the body first and then calls `enter` to wait for a slot, so that a body still arriving holds none.
   */
  async #throttled(
    throttle: RequestThrottle,
    what: string,
    req: IncomingMessage,
    res: ServerResponse,
    work: (enter: () => Promise<boolean>) => Promise<void>,
  ): Promise<void> {
    const admission = throttle.tryAdmit();
    if (!admission) {
      return this.#refuse(
        req,
        res,
        429,
        "TooManyRequests",
        `${throttle.maxOutstanding} requests to ${what} are running or waiting (${throttle.maxConcurrent} at a time); retry later.`,
        { "retry-after": "1" },
      );
    }
    let release: (() => void) | undefined;
    const enter = async () => {
      release = await admission.slot();
      return !req.socket.destroyed;
    };
    try {
      await work(enter);
    } finally {
      admission.leave();
      release?.();
    }
  }
}
