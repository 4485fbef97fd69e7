import type { LoadedFunction } from "../loader.js";
import { type CompiledRoute, comparePrecedence, compileRoute, matchRoute } from "./routes.js";

export interface HttpRoute {
  fn: LoadedFunction;
  compiled: CompiledRoute;
  /** Upper-case methods; undefined = every method (a binding without `methods`). */
  methods?: Set<string>;
  authLevel: string;
}

export interface RouteTable {
  prefix: string;
  routes: HttpRoute[];
  /** Functions whose route could not be compiled (the host marks them in error). */
  errors: { name: string; message: string }[];
}

/** Builds the routing table from HTTP-triggered functions, most specific template first. */
export function buildRouteTable(functions: LoadedFunction[], routePrefix: string): RouteTable {
  const routes: HttpRoute[] = [];
  const errors: RouteTable["errors"] = [];
  for (const fn of functions) {
    const trigger = fn.bindings[fn.triggerName];
    if (trigger.type.toLowerCase() !== "httptrigger") continue;
    const template =
      typeof trigger.route === "string" && trigger.route !== "" ? trigger.route : fn.metadata.name;
    try {
      const methods = Array.isArray(trigger.methods)
        ? trigger.methods.map((m) => String(m).toUpperCase())
        : undefined;
      routes.push({
        fn,
        compiled: compileRoute(template),
        methods: methods && methods.length > 0 ? new Set(methods) : undefined,
        authLevel: typeof trigger.authLevel === "string" ? trigger.authLevel : "anonymous",
      });
    } catch (e) {
      errors.push({ name: fn.metadata.name, message: (e as Error).message });
    }
  }
  routes.sort((a, b) => comparePrecedence(a.compiled, b.compiled));
  return { prefix: routePrefix, routes, errors };
}

/** The URL a function is served on, as the host lists it at start. */
export function routeUrl(baseUrl: string, prefix: string, route: HttpRoute): string {
  return `${baseUrl}/${[prefix, route.compiled.template.replace(/^\/+/, "")].filter(Boolean).join("/")}`;
}

/**
 * Finds the function for a request path (no query) and method. A path that matches a route but not its
 * methods falls through to the next route and, failing all, is a 404 — the host answers 404 there too, not 405
 * (azure-functions-host#10098).
 */
export function findRoute(
  table: RouteTable,
  method: string,
  pathname: string,
): { route: HttpRoute; params: Record<string, string> } | undefined {
  const segments = pathname.split("/").filter((s) => s !== "");
  if (table.prefix) {
    const prefixSegments = table.prefix.split("/");
    for (const [i, p] of prefixSegments.entries()) {
      if (segments[i]?.toLowerCase() !== p.toLowerCase()) return undefined;
    }
    segments.splice(0, prefixSegments.length);
  }
  const upper = method.toUpperCase();
  for (const route of table.routes) {
    if (route.methods && !route.methods.has(upper)) continue;
    const params = matchRoute(route.compiled, segments);
    if (params) return { route, params };
  }
  return undefined;
}
