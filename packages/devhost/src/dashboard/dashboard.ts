import type { CosmosClient } from "@azure/cosmos";
import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import { type CosmosConnection, resolveCosmosConnection } from "../connections.js";
import { type CosmosTriggerOptions, resolveCosmosTriggerOptions } from "../cosmos/trigger.js";
import { errorMessage } from "../errorMessage.js";
import { type BuiltinRoutes, underPrefix } from "../http/server.js";
import type { LoadedApp } from "../loader.js";
import { HandoffTracker } from "./handoffs.js";
import { DASHBOARD_PREFIX, problem, routeDashboard } from "./http.js";
import { InstanceView } from "./instances.js";
import type { MeterSource } from "./meter.js";
import { RuHistory } from "./rates.js";
import type { DashboardSettings } from "./settings.js";
import {
  type DispatchLeases,
  hubLeaseSource,
  type LagCache,
  leaseReadKey,
  readLocks,
  readTriggerLeases,
  type TriggerSource,
  triggerLeasesBase,
} from "./sources.js";
import { RuTally, talliedClient } from "./tally.js";
import type { DashboardState, LeasesData, Panel, RuData, TriggerLeases } from "./types.js";

/**
 * The dev host's live dashboard at `/_dev` (docs/dashboard.md): a page (client/, plain TypeScript + DOM + SVG) that
 * polls `/_dev/api/state`, which reads — with the dashboard's own clients, whose RU is tallied and subtracted from
 * the meter — the leases of every cosmosDBTrigger of the loaded app, the lock holders, the durable instances, and
 * the RU meter. Each panel fails on its own; nothing here ever answers 500.
 */

export { DASHBOARD_PREFIX } from "./http.js";

export interface DashboardOptions {
  settings: DashboardSettings;
  env: NodeJS.ProcessEnv;
  /** Where the RU meter is read; asked at each sample (it may throw: that sample's error). */
  meter: () => MeterSource;
  /** The account of the app's own containers (locks, durable task hub), when one resolves. */
  account: () => CosmosConnection | undefined;
  /** The lock container (containers.json role "locks"). */
  locks?: { databaseName: string; containerName: string };
  /** The durable task hub's container, when the app runs one, and where its dispatch leases are. */
  durable: () =>
    | { hubName: string; databaseName: string; containerName: string; dispatch?: DispatchLeases }
    | undefined;
  /** This host's change feed processor instance name for a trigger function, when its listener runs. */
  thisHostOwner: (functionName: string) => string | undefined;
  /** Wall clock (ms); injectable for tests. */
  now?: () => number;
  /** What the panels' sourceTimeoutMs waits on; the system's by default (tests move a FakeClock). */
  clock?: Clock;
}

/** A panel with nothing to show in this app (no lock container, no task hub): said plainly, not as a failure. */
class NotConfigured extends Error {}

const errorFirstLine = (e: unknown) => errorMessage(e).split("\n")[0];

/**
 * A panel's read, given up after timeoutMs: the signal then aborts its SDK requests too, so an abandoned read does
 * not go on spending RU that would land in the next meter sample.
 */
async function panel<T>(
  clock: Clock,
  timeoutMs: number,
  read: (signal: AbortSignal) => Promise<T>,
): Promise<Panel<T>> {
  const timeout = new AbortController();
  const done = new AbortController();
  void clock.sleep(timeoutMs, done.signal).then(() => {
    if (!done.signal.aborted) timeout.abort();
  });
  const signal = timeout.signal;
  // Listening before the read starts: this rejection comes before the SDK's own abort error.
  const timedOut = new Promise<never>((_r, reject) =>
    signal.addEventListener("abort", () => reject(new Error(`no answer within ${timeoutMs} ms`)), {
      once: true,
    }),
  );
  timedOut.catch(() => undefined);
  try {
    return { ok: true, data: await Promise.race([read(signal), timedOut]) };
  } catch (e) {
    return {
      ok: false,
      error: errorFirstLine(e),
      ...(e instanceof NotConfigured ? { notConfigured: true } : {}),
    };
  } finally {
    done.abort();
  }
}

export class Dashboard {
  readonly tally = new RuTally();
  readonly #o: DashboardOptions;
  readonly #now: () => number;
  readonly #clock: Clock;
  readonly #history: RuHistory;
  readonly #handoffs: HandoffTracker;
  readonly #clients = new Map<string, CosmosClient>();
  readonly #lag = new Map<string, LagCache>();
  readonly #instances: InstanceView;
  /** The app's cosmosDBTriggers as their options and connections resolve, once the app has loaded. */
  #triggerSources: Omit<TriggerSource, "thisHostOwner">[] = [];
  #baseUrl = "";
  #queue: Promise<unknown> = Promise.resolve();
  #last: { at: number; state: DashboardState } | undefined;
  #pending: Promise<DashboardState> | undefined;
  #sampler: NodeJS.Timeout | undefined;
  #meterError: string | undefined;
  #closed = false;

  constructor(options: DashboardOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#clock = options.clock ?? systemClock;
    this.#history = new RuHistory({
      historyMs: options.settings.historyMs,
      windowMs: options.settings.rateWindowMs,
    });
    this.#handoffs = new HandoffTracker(options.settings.handoffsKept);
    this.#instances = new InstanceView(options.settings.instancesRescanMs);
  }

  /** Once the app has loaded and HTTP listens: takes the first meter sample and starts sampling in the background. */
  start(app: LoadedApp, baseUrl: string): void {
    // The app's bindings and connection settings no longer change once it has loaded: resolved once.
    this.#triggerSources = this.#resolveTriggers(app);
    this.#baseUrl = baseUrl;
    const sample = () => this.#exclusive(() => this.#sample()).catch(() => undefined);
    void sample();
    this.#sampler = setInterval(() => void sample(), this.#o.settings.sampleIntervalMs);
    this.#sampler.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sampler);
    await this.#queue.catch(() => undefined);
    for (const c of this.#clients.values()) c.dispose();
    this.#clients.clear();
  }

  /** One job at a time: the meter is never sampled while the dashboard's own reads are in flight. */
  #exclusive<T>(job: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(job, job);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #client(key: string, connection: () => CosmosConnection): CosmosClient {
    let c = this.#clients.get(key);
    if (!c) {
      c = talliedClient(connection(), this.tally);
      this.#clients.set(key, c);
    }
    return c;
  }

  async #sample(): Promise<void> {
    if (this.#closed) return;
    let source: MeterSource;
    try {
      source = this.#o.meter();
    } catch (e) {
      this.#meterError = errorFirstLine(e);
      return;
    }
    if (source.kind === "unavailable") {
      this.#meterError = undefined;
      return;
    }
    try {
      const meter = await source.read();
      this.#history.add({ t: this.#now(), meter, dashboard: this.tally.totals() });
      this.#meterError = undefined;
    } catch (e) {
      this.#meterError = `${source.describe}: ${errorFirstLine(e)}`;
    }
  }

  #resolveTriggers(app: LoadedApp): Omit<TriggerSource, "thisHostOwner">[] {
    const env = this.#o.env;
    const out: Omit<TriggerSource, "thisHostOwner">[] = [];
    for (const fn of app.functions) {
      if (fn.trigger.type.toLowerCase() !== "cosmosdbtrigger") continue;
      const name = fn.metadata.name;
      let resolved: ReturnType<typeof resolveCosmosTriggerOptions>;
      try {
        resolved = resolveCosmosTriggerOptions(
          name,
          fn.bindings[fn.triggerName] as unknown as CosmosTriggerOptions,
        );
      } catch (e) {
        out.push({
          functionName: name,
          resolved: {
            leaseContainerPrefix: "",
            databaseName: "?",
            containerName: "?",
            leaseDatabaseName: "?",
            leaseContainerName: "?",
            leaseExpirationInterval: 0,
          } as ReturnType<typeof resolveCosmosTriggerOptions>,
          leaseClient: { error: errorFirstLine(e) },
          leaseReadKey: `unresolved:${name}`,
          endpoint: "",
          sameAccount: false,
        });
        continue;
      }
      let leaseClient: TriggerSource["leaseClient"];
      let endpoint = "";
      let sameAccount = false;
      let readKey = `unresolved:${name}`;
      try {
        const lease = resolveCosmosConnection(resolved.leaseConnection, env);
        readKey = leaseReadKey(lease.endpoint, resolved.leaseDatabaseName, resolved.leaseContainerName);
        leaseClient = this.#client(`setting:${resolved.leaseConnection.toLowerCase()}`, () => lease);
        // Lease ids name the monitored account's host (leasePrefix), whichever account holds the leases.
        let monitored: string | undefined;
        try {
          monitored = resolveCosmosConnection(resolved.connection, env).endpoint;
        } catch {
          monitored = undefined;
        }
        endpoint = monitored ?? lease.endpoint;
        sameAccount = monitored === lease.endpoint;
      } catch (e) {
        leaseClient = { error: errorFirstLine(e) };
      }
      out.push({
        functionName: name,
        resolved,
        leaseClient,
        leaseReadKey: readKey,
        endpoint,
        sameAccount,
      });
    }
    return out;
  }

  async #readLeases(now: number, signal: AbortSignal): Promise<LeasesData> {
    // This host's owner name appears once a trigger's listener runs: asked at each refresh.
    const triggers: TriggerSource[] = this.#triggerSources.map((t) => ({
      ...t,
      thisHostOwner: this.#o.thisHostOwner(t.functionName),
    }));
    // The durable task hub's dispatch leases, once the hub runs: in the same lease container as the triggers'.
    let hub: ReturnType<DashboardOptions["durable"]>;
    try {
      hub = this.#o.durable();
    } catch {
      hub = undefined; // the orchestrations panel says why
    }
    const account = hub?.dispatch ? this.#o.account() : undefined;
    if (hub?.dispatch && account) {
      const client = this.#client(`account:${account.endpoint}`, () => account);
      triggers.push(
        hubLeaseSource({ ...hub, dispatch: hub.dispatch }, { client, endpoint: account.endpoint }),
      );
    }
    // Triggers sharing a lease container (different prefixes) share one read of it per refresh.
    const reads = new Map<string, Promise<Record<string, unknown>[]>>();
    const documents = (t: TriggerSource) => (client: CosmosClient) => {
      const r = t.resolved;
      const key = t.leaseReadKey;
      let read = reads.get(key);
      if (!read) {
        read = client
          .database(r.leaseDatabaseName)
          .container(r.leaseContainerName)
          .items.query<Record<string, unknown>>("SELECT * FROM c", { abortSignal: signal })
          .fetchAll()
          .then((res) => res.resources);
        reads.set(key, read);
      }
      return read;
    };
    const rows = await Promise.all(
      triggers.map(async (t): Promise<TriggerLeases> => {
        let lag = this.#lag.get(t.functionName);
        if (!lag) {
          lag = { values: new Map(), readAt: Number.NEGATIVE_INFINITY };
          this.#lag.set(t.functionName, lag);
        }
        const lagDue = now - lag.readAt >= this.#o.settings.lagIntervalMs;
        try {
          const row = await readTriggerLeases(t, { now, lagDue, lag, documents: documents(t) });
          this.#handoffs.observe(t.functionName, row.leases, now);
          return row;
        } catch (e) {
          return { ...triggerLeasesBase(t), error: errorFirstLine(e) };
        }
      }),
    );
    return { triggers: rows, handoffs: this.#handoffs.recent };
  }

  #account(): CosmosClient {
    const account = this.#o.account();
    if (!account) throw new Error("no Cosmos DB connection of the app resolves");
    return this.#client(`account:${account.endpoint}`, () => account);
  }

  async #build(): Promise<DashboardState> {
    const s = this.#o.settings;
    const now = this.#now();
    const locks = this.#o.locks;
    const [leasesPanel, locksPanel, durablePanel] = await Promise.all([
      panel(this.#clock, s.sourceTimeoutMs, (signal) => this.#readLeases(now, signal)),
      panel(this.#clock, s.sourceTimeoutMs, async (signal) => {
        if (!locks)
          throw new NotConfigured(
            "no lock container: the app's containers.json has no container with the role 'locks'",
          );
        return readLocks(this.#account(), locks, now, signal);
      }),
      panel(this.#clock, s.sourceTimeoutMs, async (signal) => {
        const durable = this.#o.durable();
        if (!durable) throw new NotConfigured("the app has no durable functions (no task hub runs)");
        const container = this.#account().database(durable.databaseName).container(durable.containerName);
        return this.#instances.read(container, durable, s.latestInstances, now, signal);
      }),
    ]);
    // After the dashboard's own reads have completed: the sample sees them in the meter and in the tally alike.
    await this.#sample();
    let ru: Panel<RuData>;
    let source: MeterSource;
    try {
      source = this.#o.meter();
    } catch (e) {
      source = { kind: "unavailable", reason: errorFirstLine(e) };
    }
    if (this.#meterError) ru = { ok: false, error: this.#meterError };
    else if (source.kind === "unavailable")
      ru = { ok: false, error: `not available: ${source.reason}`, notConfigured: true };
    else {
      const at = this.#now();
      ru = {
        ok: true,
        data: {
          source: source.describe,
          windowMs: s.rateWindowMs,
          containers: this.#history.rates(at),
          history: this.#history.points(),
        },
      };
    }
    return {
      generatedAt: new Date(now).toISOString(),
      host: { baseUrl: this.#baseUrl, pid: process.pid },
      settings: {
        pollIntervalMs: s.pollIntervalMs,
        hiddenPollIntervalMs: s.hiddenPollIntervalMs,
        historyMs: s.historyMs,
      },
      leases: leasesPanel,
      locks: locksPanel,
      durable: durablePanel,
      ru,
    };
  }

  /** The current state: a fresh one unless one younger than minRefreshMs exists (or `fresh`). */
  state(fresh = false): Promise<DashboardState> {
    const last = this.#last;
    if (!fresh && last && this.#now() - last.at < this.#o.settings.minRefreshMs) {
      return Promise.resolve(last.state);
    }
    if (this.#pending && !fresh) return this.#pending;
    const pending = this.#exclusive(async () => {
      const state = await this.#build();
      this.#last = { at: this.#now(), state };
      return state;
    });
    this.#pending = pending;
    // Cleared either way, without a second promise that could reject unhandled (and stop the dev host).
    const clear = () => {
      if (this.#pending === pending) this.#pending = undefined;
    };
    pending.then(clear, clear);
    return pending;
  }

  /** `/_dev…`: the page, its assets, the state API; JSON 400/404/405 for anything else under the prefix. */
  readonly routes: BuiltinRoutes = {
    prefix: DASHBOARD_PREFIX,
    handle: async (req) => {
      const path = req.url.pathname;
      // `/_dev` and everything under `/_dev/`; not `/_devtools` (the host routes so; a direct caller may not).
      if (!underPrefix(path, DASHBOARD_PREFIX)) return undefined;
      try {
        return await routeDashboard(req, path.slice(DASHBOARD_PREFIX.length), {
          state: (fresh) => this.state(fresh),
          settings: this.#o.settings,
        });
      } catch (e) {
        // Never a 500 from the dashboard: whatever failed is the dashboard's problem, said as JSON.
        return problem(503, "DashboardUnavailable", errorFirstLine(e));
      }
    },
  };
}
