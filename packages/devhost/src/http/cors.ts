import type { IncomingMessage, ServerResponse } from "node:http";
import { DevHostError } from "../errors.js";

/**
 * CORS as Core Tools applies it locally: `local.settings.json` `Host.CORS` (comma-separated origins, `*` for any) and
 * `Host.CORSCredentials`, or `--cors` / `--cors-credentials`. Core Tools hands them to ASP.NET Core's CORS middleware
 * with `WithOrigins(origins).AllowAnyHeader().AllowAnyMethod()` (+ `AllowCredentials()`), so that middleware's
 * behaviour is what is reproduced here. In Azure, CORS is the platform's (the site's `cors` config), not the app's.
 */
export interface CorsPolicy {
  /** Normalized origins (`scheme://host[:port]`, lower case), or ["*"]. */
  origins: string[];
  /** Whether credentials are allowed (`Access-Control-Allow-Credentials`). */
  credentials: boolean;
}

const ANY = "*";

/** ASP.NET Core compares origins after lower-casing them and dropping a trailing slash. */
function normalizeOrigin(origin: string): string {
  return origin.trim().replace(/\/+$/, "").toLowerCase();
}

/** Parses `Host.CORS` / `--cors`; undefined when empty (CORS off, no headers added). */
export function parseCorsPolicy(origins: string | undefined, credentials: boolean): CorsPolicy | undefined {
  const list = (origins ?? "")
    .split(",")
    .map(normalizeOrigin)
    .filter((o) => o !== "");
  if (list.length === 0) return undefined;
  const any = list.includes(ANY);
  // ASP.NET Core refuses this combination when the policy is built; Core Tools then fails to start.
  if (any && credentials) {
    throw new DevHostError(
      "CORS: a wildcard origin ('*') cannot be combined with credentials (Host.CORSCredentials / --cors-credentials); list the origins instead.",
      { code: "InvalidOption" },
    );
  }
  for (const origin of list) {
    if (origin !== ANY && !/^[a-z][a-z0-9+.-]*:\/\/[^/\s]+$/.test(origin)) {
      throw new DevHostError(`CORS: '${origin}' is not an origin (scheme://host[:port], or '*').`, {
        code: "InvalidOption",
      });
    }
  }
  return { origins: any ? [ANY] : list, credentials };
}

/** `origin` is listed by name in the policy (a wildcard policy lists none). */
export function corsOriginListed(policy: CorsPolicy, origin: string): boolean {
  return policy.origins[0] !== ANY && policy.origins.includes(normalizeOrigin(origin));
}

function appendVary(res: ServerResponse, value: string): void {
  const current = res.getHeader("vary");
  res.setHeader("vary", current ? `${String(current)}, ${value}` : value);
}

/**
 * Applies the policy to a request. Returns true when the request was a preflight and has been answered (204, as
 * the middleware does whether or not the origin is allowed); otherwise it set the response headers for an allowed
 * origin and the request goes on to routing.
 */
export function applyCors(policy: CorsPolicy, req: IncomingMessage, res: ServerResponse): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  const requestedMethod = req.headers["access-control-request-method"];
  const preflight = req.method === "OPTIONS" && requestedMethod !== undefined;
  const anyOrigin = policy.origins[0] === ANY;
  const allowed = anyOrigin || policy.origins.includes(normalizeOrigin(origin));
  if (allowed) {
    if (anyOrigin && !policy.credentials) res.setHeader("access-control-allow-origin", ANY);
    else {
      res.setHeader("access-control-allow-origin", origin);
      // The middleware varies by origin only when the answer depends on it (more than one origin listed).
      if (policy.origins.length > 1) appendVary(res, "Origin");
    }
    if (policy.credentials) res.setHeader("access-control-allow-credentials", "true");
  }
  if (!preflight) return false;
  if (allowed) {
    // AllowAnyMethod / AllowAnyHeader echo what the preflight asks for.
    res.setHeader("access-control-allow-methods", String(requestedMethod));
    const requestedHeaders = req.headers["access-control-request-headers"];
    if (requestedHeaders) res.setHeader("access-control-allow-headers", String(requestedHeaders));
  }
  res.writeHead(204, { "content-length": "0" });
  res.end();
  return true;
}
