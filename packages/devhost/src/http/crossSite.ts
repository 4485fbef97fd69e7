import type { IncomingHttpHeaders } from "node:http";
import {
  type HostAllowList,
  listedHostname,
  normalizeAuthority,
  normalizeHostname,
} from "@cosmos-feed/emulator/hosts";
import { type CorsPolicy, corsOriginListed } from "./cors.js";

/**
 * The CSRF guard of the built-in routes (dashboard, durable HTTP API): a web page on another site can make the
 * browser send a request it cannot read the answer of — a form POST, a `no-cors` fetch — and that is enough to start
 * or terminate an orchestration. Such a request is refused when it changes state (any method but GET, HEAD,
 * OPTIONS) and the browser says it comes from elsewhere:
 * - `Origin` is present and is not this server's own origin (the request's Host), nor a host the user listed;
 * - `Sec-Fetch-Site` is `cross-site` or `same-site` (a page on another port of localhost is same-site);
 * - there is no `Origin` and the body is one an HTML form can send without a CORS preflight (`text/plain`,
 *   `application/x-www-form-urlencoded`, `multipart/form-data`): a browser that leaves Origin out.
 * An origin listed by name in the CORS policy (Host.CORS / --cors, not `*`) is trusted: the user said that page may
 * call the dev host. The durable-functions client (JSON, no Origin), curl with `-H 'content-type: application/json'`
 * and the dashboard page (GET only) pass. The app's own HTTP functions are not guarded: they are the app's API, as
 * in Azure.
 */

const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);
/** Content types a form (or a fetch without preflight) may send: the CORS "simple" ones. */
const FORM_CONTENT_TYPES: ReadonlySet<string> = new Set([
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data",
]);

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}

/** Whether `origin` (scheme://host[:port]) is the origin of a request with this Host header, or a listed host. */
function trustedOrigin(origin: string, host: string | undefined, list: HostAllowList): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (a sandboxed frame, a file: page, a redirect across sites) and anything malformed
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.pathname !== "/") return false;
  const authority = normalizeAuthority(url.host);
  if (authority !== undefined && host !== undefined && authority === normalizeAuthority(host)) return true;
  // A name the user listed (e.g. a tunnel's https name in front of the dev host): trusted on any port and scheme.
  const hostname = normalizeHostname(url.host);
  return hostname !== undefined && listedHostname(list, hostname);
}

/** Why a request to a built-in route is refused as cross-site, or undefined when it may go on. */
export function crossSiteRefusal(
  method: string,
  headers: IncomingHttpHeaders,
  list: HostAllowList,
  cors?: CorsPolicy,
): string | undefined {
  if (SAFE_METHODS.has(method.toUpperCase())) return undefined;
  const origin = single(headers.origin)?.trim();
  if (origin !== undefined && cors && corsOriginListed(cors, origin)) return undefined;
  const site = single(headers["sec-fetch-site"])?.trim().toLowerCase();
  if (site === "cross-site" || site === "same-site") {
    return `the browser marks it Sec-Fetch-Site: ${site} (sent by a page of another site or port)`;
  }
  if (origin !== undefined) {
    return trustedOrigin(origin, single(headers.host), list)
      ? undefined
      : `its Origin '${origin.slice(0, 200)}' is not this dev host's origin`;
  }
  const type = single(headers["content-type"])?.split(";")[0].trim().toLowerCase();
  if (type !== undefined && FORM_CONTENT_TYPES.has(type)) {
    return `a ${type} body without an Origin header is what an HTML form sends; send Content-Type: application/json`;
  }
  return undefined;
}
