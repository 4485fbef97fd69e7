import type { RunningEmulator } from "@cosmos-feed/emulator";
import type { BuiltinRoutes } from "../http/server.js";
import type { LoadedApp } from "../loader.js";
import { DASHBOARD_PREFIX, Dashboard, type DashboardOptions } from "./dashboard.js";
import { inProcessMeter, type MeterSource, mayBeEmulator, remoteMeter } from "./meter.js";
import { readDashboardSettings } from "./settings.js";

export { DASHBOARD_PREFIX, Dashboard } from "./dashboard.js";
export { DASHBOARD_SETTINGS, type DashboardSettings, readDashboardSettings } from "./settings.js";

/**
 * The dashboard as `cosmos-feed start` wires it: its routes exist from the start (not enabled until the app has
 * loaded, and never when DEV_DASHBOARD_ENABLED=0); `prepare` builds it once the app's settings are in the
 * environment; `listening` starts its meter sampling; `stop` closes its clients.
 */
export interface DevDashboard {
  /** The dashboard's routes (/_dev), served by the dev host before the functions. */
  routes: BuiltinRoutes;
  /** Tells the dashboard the app that loaded. */
  prepare(app: LoadedApp): void;
  /** Tells the dashboard the host listens at `baseUrl` (starts its meter sampling). */
  listening(baseUrl: string): void;
  /**
   * The dashboard, once the app has loaded.
   * @internal The dashboard's internals (tests read them): stripped from the package's .d.ts (`stripInternal`).
   */
  get(): Dashboard | undefined;
  /** Stops it and closes its clients. */
  stop(): Promise<void>;
}

export interface DevDashboardOptions extends Omit<DashboardOptions, "settings" | "meter" | "env"> {
  env: NodeJS.ProcessEnv;
  /** The embedded emulator, when this process runs one. */
  emulator: () => RunningEmulator | undefined;
}

export function createDevDashboard(o: DevDashboardOptions): DevDashboard {
  let dashboard: Dashboard | undefined;
  let app: LoadedApp | undefined;
  // Where the meter is read. By `prepare` the emulator, if any, runs and the app's account is settled (the durable
  // task hub has chosen its own): found once — or again next time, when finding it threw.
  let source: MeterSource | undefined;
  const findMeter = (timeoutMs: number): MeterSource => {
    const emulator = o.emulator();
    if (emulator) return inProcessMeter(emulator.meter);
    const account = o.account();
    if (!account) return { kind: "unavailable", reason: "no Cosmos DB connection of the app resolves" };
    if (account.kind !== "key" || !mayBeEmulator(account.endpoint)) {
      return {
        kind: "unavailable",
        reason: `${account.endpoint} is an Azure Cosmos DB account; the RU meter is the emulator's (use Azure Monitor's Total Request Units there)`,
      };
    }
    return remoteMeter(account.endpoint, account.key, timeoutMs);
  };
  return {
    routes: {
      prefix: DASHBOARD_PREFIX,
      // Off (DEV_DASHBOARD_ENABLED=0) or not built yet: the path goes on to the app's routes.
      enabled: () => dashboard !== undefined,
      handle: async (req) => (dashboard ? dashboard.routes.handle(req) : undefined),
    },
    prepare(loaded) {
      app = loaded;
      const settings = readDashboardSettings(o.env);
      if (settings.enabled === 0) return;
      dashboard = new Dashboard({
        ...o,
        settings,
        meter: () => {
          source ??= findMeter(settings.sourceTimeoutMs);
          return source;
        },
      });
    },
    listening(baseUrl) {
      if (dashboard && app) dashboard.start(app, baseUrl);
    },
    get: () => dashboard,
    stop: async () => {
      await dashboard?.close();
    },
  };
}
