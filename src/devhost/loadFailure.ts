import type { DevDashboard } from "./dashboard/index.js";
import { type BuiltinRoutes, DevHttpServer } from "./http/server.js";
import { readDevHttpSettings } from "./http/settings.js";
import type { LoadedApp } from "./loader.js";
import type { HostLogger } from "./logger.js";

/** Why the app is not served, for its routes' 503 (`{code, message}`). */
export const APP_LOAD_FAILED = "AppLoadFailed";

/**
 * After a --watch save whose app does not load, the dev host keeps its port: this server answers there until the
 * next save that loads — the dev host's own routes (the dashboard, the durable HTTP API) as before, every other path
 * 503 `AppLoadFailed` with the load error, so that a browser or client sees why instead of a refused connection.
 */
export async function serveLoadFailure(o: {
  error: unknown;
  port: number;
  hostname: string;
  /** The last app that loaded (the dashboard's view of its triggers; none of its functions is served). */
  previous: LoadedApp;
  builtinRoutes: BuiltinRoutes[];
  dashboard: DevDashboard;
  logger: HostLogger;
  env: NodeJS.ProcessEnv;
}): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const reason = (o.error as Error)?.message ?? String(o.error);
  const http = new DevHttpServer({
    app: o.previous,
    table: { prefix: o.previous.config.routePrefix, routes: [], errors: [] },
    logger: o.logger,
    builtinRoutes: o.builtinRoutes,
    settings: readDevHttpSettings(o.env),
    unavailable: {
      code: APP_LOAD_FAILED,
      message: `The app failed to load: ${reason} Fix it and save again: the dev host restarts it then.`,
    },
  });
  const port = await http.listen(o.port, o.hostname);
  const baseUrl = `http://${o.hostname.includes(":") ? `[${o.hostname}]` : o.hostname}:${port}`;
  o.dashboard.prepare(o.previous);
  o.dashboard.listening(baseUrl);
  return { baseUrl, close: () => http.close() };
}
