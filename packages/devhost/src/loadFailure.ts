import type { AppRunSession } from "./appRun.js";
import type { DevDashboard } from "./dashboard/index.js";
import { type BuiltinRoutes, DevHttpServer } from "./http/server.js";
import { readDevHttpSettings } from "./http/settings.js";
import type { LoadedApp } from "./loader.js";
import { HostLogger } from "./logger.js";

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
  session: Pick<AppRunSession, "sink" | "say" | "env">;
  /** Releases what the failed run holds (the task hub, the dashboard's clients): on close, or if listening fails. */
  release: () => Promise<void>;
}): Promise<{ close(): Promise<void> }> {
  const reason = (o.error as Error)?.message ?? String(o.error);
  const http = new DevHttpServer({
    app: o.previous,
    table: { prefix: o.previous.config.routePrefix, routes: [], errors: [] },
    logger: new HostLogger({ sink: o.session.sink }),
    builtinRoutes: o.builtinRoutes,
    settings: readDevHttpSettings(o.session.env),
    unavailable: {
      code: APP_LOAD_FAILED,
      message: `The app failed to load: ${reason} Fix it and save again: the dev host restarts it then.`,
    },
  });
  const port = await http.listen(o.port, o.hostname).catch(async (e: unknown) => {
    await o.release();
    throw e;
  });
  const baseUrl = `http://${o.hostname.includes(":") ? `[${o.hostname}]` : o.hostname}:${port}`;
  o.dashboard.prepare(o.previous);
  o.dashboard.listening(baseUrl);
  o.session.say(
    `The app failed to load: ${reason} — ${baseUrl} keeps serving the dev host's own routes (/_dev, /runtime/webhooks/durabletask/); the app's routes answer 503 with this error until a save that loads.`,
    "error",
  );
  return { close: () => http.close().finally(o.release) };
}
