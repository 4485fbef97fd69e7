import type { BuiltinRequest, BuiltinResponse } from "../http/server.js";
import { clientCss, clientModule } from "./assets.js";
import type { DashboardSettings } from "./settings.js";
import type { DashboardState } from "./types.js";

/** The dashboard's HTTP answers under `/_dev` (docs/dashboard.md, "HTTP"): the page, its assets, the state API. */

export const DASHBOARD_PREFIX = "/_dev";

export const SECURITY_HEADERS: Record<string, string> = {
  // Only this origin: no CDN, no inline script or style, no frames, no form posts elsewhere.
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

export function json(status: number, body: unknown, extra: Record<string, string> = {}): BuiltinResponse {
  return {
    status,
    headers: { ...SECURITY_HEADERS, "content-type": "application/json; charset=utf-8", ...extra },
    body: JSON.stringify(body),
  };
}

export const problem = (status: number, code: string, reason: string, extra: Record<string, string> = {}) =>
  json(status, { code, reason }, extra);

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cosmos-feed dev host</title>
<link rel="icon" href="/_dev/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/_dev/assets/app.css">
<script type="module" src="/_dev/assets/app.js"></script>
</head>
<body>
<header><h1>cosmos-feed dev host</h1><span id="status" class="status">loading…</span></header>
<main>
<section id="leases" class="panel"><h2>Leases</h2><div class="body"></div></section>
<section id="handoffs" class="panel"><h2>Hand-offs</h2><div class="body"></div></section>
<section id="ru" class="panel"><h2>RU/s per container</h2><div class="body"></div></section>
<section id="locks" class="panel"><h2>Lock holders</h2><div class="body"></div></section>
<section id="durable" class="panel"><h2>Orchestrations</h2><div class="body"></div></section>
</main>
</body>
</html>
`;

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#2b6cb0"/></svg>`;

export async function routeDashboard(
  req: BuiltinRequest,
  rest: string,
  d: { state(fresh: boolean): Promise<DashboardState>; settings: DashboardSettings },
): Promise<BuiltinResponse> {
  const readOnly = (what: string) =>
    req.method === "GET" || req.method === "HEAD"
      ? undefined
      : problem(405, "MethodNotAllowed", `${what} answers GET and HEAD only; got ${req.method}.`, {
          allow: "GET, HEAD",
        });
  const noQuery = () => {
    const keys = [...req.url.searchParams.keys()];
    return keys.length > 0
      ? problem(400, "UnknownParameter", `No query parameters here; got '${keys[0]}'.`)
      : undefined;
  };
  const noBody = () =>
    req.body.length > 0 ? problem(400, "UnexpectedBody", "A GET takes no request body.") : undefined;
  if (rest === "" || rest === "/") {
    return (
      readOnly("The dashboard page") ??
      noQuery() ??
      noBody() ?? {
        status: 200,
        headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8" },
        body: PAGE,
      }
    );
  }
  if (rest === "/api/state") {
    const bad = readOnly("/_dev/api/state") ?? noBody();
    if (bad) return bad;
    let fresh = false;
    for (const [k, v] of req.url.searchParams) {
      if (k !== "fresh")
        return problem(400, "UnknownParameter", `Unknown query parameter '${k}' (only 'fresh').`);
      if (!/^(1|true|0|false)$/.test(v))
        return problem(400, "InvalidParameter", `'fresh' is 1/true or 0/false; got '${v}'.`);
      fresh = v === "1" || v === "true";
    }
    return json(200, await d.state(fresh));
  }
  if (rest === "/api/settings") {
    return readOnly("/_dev/api/settings") ?? noQuery() ?? noBody() ?? json(200, d.settings);
  }
  const asset = /^\/assets\/([^/]+)$/.exec(rest);
  if (asset) {
    const bad = readOnly("Assets") ?? noQuery();
    if (bad) return bad;
    const name = asset[1];
    if (name === "app.css") {
      const css = clientCss();
      if (css !== undefined)
        return {
          status: 200,
          headers: { ...SECURITY_HEADERS, "content-type": "text/css; charset=utf-8" },
          body: css,
        };
    } else if (name === "favicon.svg") {
      return {
        status: 200,
        headers: { ...SECURITY_HEADERS, "content-type": "image/svg+xml" },
        body: FAVICON,
      };
    } else if (name.endsWith(".js")) {
      const js = await clientModule(name.slice(0, -3));
      if (js !== undefined) {
        return {
          status: 200,
          headers: { ...SECURITY_HEADERS, "content-type": "text/javascript; charset=utf-8" },
          body: js,
        };
      }
    }
    return problem(404, "NotFound", `No dashboard asset '${name}'.`);
  }
  return problem(
    404,
    "NotFound",
    `Nothing at ${DASHBOARD_PREFIX}${rest}: the dashboard is ${DASHBOARD_PREFIX}/, its data ${DASHBOARD_PREFIX}/api/state.`,
  );
}
