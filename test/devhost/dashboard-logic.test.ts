/**
 * The dashboard's pure logic with injected time: hand-off detection, RU rates (meter − the dashboard's own tally,
 * meter resets, windows, history trimming), the meter snapshot sum, which requests the tally counts, the plot's
 * geometry, and the settings module.
 */

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Container } from "@azure/cosmos";
import { describe, expect, it, vi } from "vitest";
import { WAIT_MS, waitUntil } from "../../bench/lib/until.js";
import { FakeClock } from "../../packages/core/src/clock.js";
import { plotGeometry } from "../../packages/devhost/src/dashboard/client/plot.js";
import { Dashboard } from "../../packages/devhost/src/dashboard/dashboard.js";
import { HandoffTracker } from "../../packages/devhost/src/dashboard/handoffs.js";
import { createDevDashboard } from "../../packages/devhost/src/dashboard/index.js";
import { InstanceView } from "../../packages/devhost/src/dashboard/instances.js";
import { mayBeEmulator, meterTotals } from "../../packages/devhost/src/dashboard/meter.js";
import { intervalDelta, RuHistory } from "../../packages/devhost/src/dashboard/rates.js";
import { DASHBOARD_SETTINGS, readDashboardSettings } from "../../packages/devhost/src/dashboard/settings.js";
import { meteredContainer, RuTally } from "../../packages/devhost/src/dashboard/tally.js";
import type { DashboardState } from "../../packages/devhost/src/dashboard/types.js";
import { type BuiltinRequest, underPrefix } from "../../packages/devhost/src/http/server.js";
import type { LoadedApp } from "../../packages/devhost/src/loader.js";

const T0 = Date.parse("2026-01-01T00:00:00Z");

describe("HandoffTracker", () => {
  it("takes the first sight as a baseline and lists owner changes newest first, with time, from and to", () => {
    const h = new HandoffTracker(3);
    expect(
      h.observe(
        "f",
        [
          { id: "a", leaseToken: "0", owner: "A" },
          { id: "b", leaseToken: "1", owner: "A" },
        ],
        T0,
      ),
    ).toEqual([]);
    expect(h.observe("f", [{ id: "a", leaseToken: "0", owner: "A" }], T0 + 1000)).toEqual([]);
    const found = h.observe(
      "f",
      [
        { id: "a", leaseToken: "0", owner: "B" },
        { id: "b", leaseToken: "1", owner: null },
      ],
      T0 + 2000,
    );
    expect(found).toEqual([
      { at: "2026-01-01T00:00:02.000Z", functionName: "f", leaseToken: "0", from: "A", to: "B" },
      { at: "2026-01-01T00:00:02.000Z", functionName: "f", leaseToken: "1", from: "A", to: null },
    ]);
    h.observe("f", [{ id: "b", leaseToken: "1", owner: "B" }], T0 + 3000);
    expect(h.recent.map((x) => `${x.leaseToken}:${x.from}->${x.to}`)).toEqual([
      "1:null->B",
      "1:A->null",
      "0:A->B",
    ]);
    h.observe("f", [{ id: "a", leaseToken: "0", owner: "C" }], T0 + 4000);
    expect(h.recent).toHaveLength(3); // keep
    expect(h.recent[0]).toMatchObject({ from: "B", to: "C" });
  });

  it("keeps triggers apart: the same lease id under another function is its own baseline", () => {
    const h = new HandoffTracker(10);
    h.observe("f", [{ id: "x", leaseToken: "0", owner: "A" }], T0);
    expect(h.observe("g", [{ id: "x", leaseToken: "0", owner: "B" }], T0 + 1)).toEqual([]);
  });
});

describe("RU rates", () => {
  it("subtracts the dashboard's own RU from the meter's, per container", () => {
    const d = intervalDelta(
      { t: T0, meter: { "db/leases": 100, "db/items": 10 }, dashboard: { "db/leases": 40 } },
      { t: T0 + 2000, meter: { "db/leases": 130, "db/items": 16 }, dashboard: { "db/leases": 60 } },
    );
    expect(d).toEqual({
      dtMs: 2000,
      meter: { "db/leases": 30, "db/items": 6 },
      dashboard: { "db/leases": 20, "db/items": 0 },
      app: { "db/leases": 10, "db/items": 6 },
    });
  });

  it("takes a meter that went down as reset, and never shows the app below zero", () => {
    const d = intervalDelta(
      { t: T0, meter: { c: 500 }, dashboard: { c: 10 } },
      { t: T0 + 1000, meter: { c: 4 }, dashboard: { c: 15 } },
    );
    expect(d.meter.c).toBe(4);
    expect(d.app.c).toBe(0);
  });

  it("averages over the window, totals since the first sample, and trims history", () => {
    const h = new RuHistory({ historyMs: 10_000, windowMs: 4_000 });
    let meter = 0;
    let dash = 0;
    for (let i = 0; i <= 10; i++) {
      h.add({ t: T0 + i * 2000, meter: { c: meter }, dashboard: { c: dash } });
      meter += i < 5 ? 10 : 30; // app 8 or 28 RU per 2 s, dashboard 2
      dash += 2;
    }
    const [row] = h.rates(T0 + 20_000);
    // The last two intervals (within 4 s): 28 RU app and 2 RU dashboard per 2 s each.
    expect(row).toMatchObject({ container: "c", appRuPerSecond: 14, dashboardRuPerSecond: 1 });
    expect(row.meterRuTotal).toBe(5 * 10 + 5 * 30);
    expect(row.dashboardRuTotal).toBe(20);
    expect(row.appRuTotal).toBe(200 - 20);
    const points = h.points();
    expect(points.length).toBe(5); // 10 s of 2 s intervals
    expect(points.at(-1)).toEqual({ t: T0 + 20_000, app: { c: 14 }, dashboard: 1 });
    // An out-of-order sample changes nothing.
    h.add({ t: T0, meter: { c: 0 }, dashboard: { c: 0 } });
    expect(h.points().length).toBe(5);
  });

  it("sums a meter snapshot per container", () => {
    expect(
      meterTotals({
        "db/a": { read: { count: 2, ru: 2, throttled: 0 }, query: { count: 1, ru: 3.5, throttled: 0 } },
        "db/b": {},
      }),
    ).toEqual({ "db/a": 5.5, "db/b": 0 });
    expect(meterTotals(null)).toEqual({});
  });
});

describe("the dashboard's RU tally", () => {
  it("counts data-plane requests per container, as the meter does", () => {
    expect(meteredContainer("/dbs/db1/colls/leases/docs")).toBe("db1/leases");
    expect(meteredContainer("dbs/db1/colls/leases/docs/a%20b")).toBe("db1/leases");
    expect(meteredContainer("/dbs/d/colls/c/operations/partitionkeydelete")).toBe("d/c");
    expect(meteredContainer("/dbs/db1/colls/leases")).toBeUndefined();
    expect(meteredContainer("/dbs/db1/colls/leases/pkranges")).toBeUndefined();
    expect(meteredContainer(undefined)).toBeUndefined();
    const t = new RuTally();
    t.add("a", 1.5);
    t.add("a", 2);
    t.add("b", Number.NaN);
    t.add("b", -1);
    expect(t.totals()).toEqual({ a: 3.5 });
    expect(t.total).toBe(3.5);
  });

  it("knows which endpoints can be an emulator", () => {
    expect(mayBeEmulator("http://127.0.0.1:8081/")).toBe(true);
    expect(mayBeEmulator("https://localhost:8081/")).toBe(true);
    expect(mayBeEmulator("http://[::1]:8081/")).toBe(true);
    expect(mayBeEmulator("https://acct.documents.azure.com:443/")).toBe(false);
    expect(mayBeEmulator("not a url")).toBe(false);
  });
});

describe("the RU/s plot", () => {
  it("maps points to the plot area, y from 0 to a rounded maximum, one series per container", () => {
    const g = plotGeometry(
      [
        { t: T0 + 60_000, app: { "db/a": 3 }, dashboard: 1 },
        { t: T0 + 120_000, app: { "db/a": 7, "db/b": 2 }, dashboard: 0.5 },
      ],
      { width: 340, height: 110, now: T0 + 120_000, spanMs: 120_000, padLeft: 40, padBottom: 10 },
    );
    expect(g.yMax).toBe(10);
    expect(g.series.map((s) => s.name)).toEqual(["db/a", "db/b"]);
    expect(g.series[0].points).toBe("190,70 340,30");
    expect(g.series[1].points).toBe("190,100 340,80");
    expect(g.dashboard.points).toBe("190,90 340,95");
    expect(g.xTicks.map((t) => t.label)).toEqual(["−2 min", "−1 min", "now"]);
    expect(g.yTicks.map((t) => t.label)).toEqual(["0", "5", "10"]);
  });

  it("clips a few peaks far above the rest instead of flattening the steady state, and says so", () => {
    const history = Array.from({ length: 40 }, (_v, k) => ({
      t: T0 + k * 1_000,
      app: { "db/leases": k === 3 ? 150 : 4 },
      dashboard: 1,
    }));
    const area = { width: 100, height: 100, now: T0 + 40_000, spanMs: 60_000, padLeft: 0, padBottom: 0 };
    const g = plotGeometry(history, area);
    expect(g.yMax).toBe(5);
    expect(g.clippedPeak).toBe(150);
    // The peak is drawn at the top edge, the steady 4 RU/s at 80 % of the height.
    const ys = g.series[0].points.split(" ").map((xy) => Number(xy.split(",")[1]));
    expect(ys[3]).toBe(0);
    expect(ys[0]).toBe(20);
    // Without an outlier the scale covers the maximum and nothing is clipped.
    const even = plotGeometry(
      history.filter((_p, k) => k !== 3),
      area,
    );
    expect(even.yMax).toBe(5);
    expect(even.clippedPeak).toBeUndefined();
  });

  it("leaves out points older than the span", () => {
    const g = plotGeometry([{ t: T0, app: { c: 100 }, dashboard: 0 }], {
      width: 100,
      height: 100,
      now: T0 + 10_000,
      spanMs: 5_000,
      padLeft: 0,
      padBottom: 0,
    });
    expect(g.series).toEqual([]);
    expect(g.yMax).toBe(1);
  });
});

describe("dashboard settings", () => {
  it("names every knob once with its app setting, unit and default, and refuses bad values by name", () => {
    for (const k of Object.values(DASHBOARD_SETTINGS)) {
      expect(k.setting).toMatch(/^DEV_DASHBOARD_[A-Z_]+$/);
      expect(k.default).toBeGreaterThanOrEqual(k.min);
      expect(k.default).toBeLessThanOrEqual(k.max);
    }
    expect(readDashboardSettings({})).toMatchObject({ pollIntervalMs: 1500, historyMs: 300_000, enabled: 1 });
    expect(readDashboardSettings({ DEV_DASHBOARD_POLL_INTERVAL_MS: " 2000 " }).pollIntervalMs).toBe(2000);
    expect(() =>
      readDashboardSettings({ DEV_DASHBOARD_POLL_INTERVAL_MS: "fast", DEV_DASHBOARD_HISTORY_MS: "5" }),
    ).toThrow(/DEV_DASHBOARD_POLL_INTERVAL_MS must be a whole number of ms[\s\S]*DEV_DASHBOARD_HISTORY_MS/);
  });
});

describe("Dashboard without an app's sources", () => {
  const request = (path: string, method = "GET"): BuiltinRequest => ({
    method,
    url: new URL(`http://127.0.0.1${path}`),
    headers: {},
    body: Buffer.alloc(0),
  });

  it("a failing or throwing source empties only its panel; anything else is a JSON 503, never a 500", async () => {
    let now = T0;
    const dashboard = new Dashboard({
      settings: { ...readDashboardSettings({}), minRefreshMs: 0 },
      env: {},
      meter: () => ({
        kind: "available",
        describe: "emulator at http://127.0.0.1:1/",
        read: async () => {
          throw new Error("connect ECONNREFUSED 127.0.0.1:1");
        },
      }),
      account: () => undefined,
      durable: () => undefined,
      thisHostOwner: () => undefined,
      now: () => now,
    });
    try {
      const res = await dashboard.routes.handle(request("/_dev/api/state"));
      expect(res?.status).toBe(200);
      const s = JSON.parse(String(res?.body)) as DashboardState;
      expect(s.generatedAt).toBe(new Date(T0).toISOString());
      expect(s.ru).toEqual({
        ok: false,
        error: "emulator at http://127.0.0.1:1/: connect ECONNREFUSED 127.0.0.1:1",
      });
      expect(s.leases).toEqual({ ok: true, data: { triggers: [], handoffs: [] } });
      expect(s.locks).toMatchObject({ ok: false, notConfigured: true });
      now += 1000;
      const broken = new Dashboard({
        settings: readDashboardSettings({}),
        env: {},
        meter: () => {
          throw new Error("meter exploded");
        },
        account: () => undefined,
        durable: () => {
          throw new Error("hub exploded");
        },
        thisHostOwner: () => undefined,
      });
      const partial = JSON.parse(String((await broken.routes.handle(request("/_dev/api/state")))?.body));
      expect(partial.ru).toEqual({ ok: false, error: "meter exploded" });
      expect(partial.durable).toEqual({ ok: false, error: "hub exploded" });
      expect(partial.leases.ok).toBe(true);
      await broken.close();
      const noClock = new Dashboard({
        settings: readDashboardSettings({}),
        env: {},
        meter: () => ({ kind: "unavailable", reason: "none" }),
        account: () => undefined,
        durable: () => undefined,
        thisHostOwner: () => undefined,
        now: () => {
          throw new Error("clock exploded");
        },
      });
      const out = await noClock.routes.handle(request("/_dev/api/state"));
      expect(out?.status).toBe(503);
      expect(JSON.parse(String(out?.body))).toEqual({
        code: "DashboardUnavailable",
        reason: "clock exploded",
      });
      await noClock.close();
      // Not the dashboard's: left to the app's routes.
      expect(await dashboard.routes.handle(request("/_devtools"))).toBeUndefined();
    } finally {
      await dashboard.close();
    }
  });
});

describe("createDevDashboard", () => {
  const app = { functions: [] } as unknown as LoadedApp;
  const base = {
    emulator: () => undefined,
    account: () => undefined,
    durable: () => undefined,
    thisHostOwner: () => undefined,
  };

  it("matches nothing before the app loaded and when DEV_DASHBOARD_ENABLED=0", async () => {
    const off = createDevDashboard({ ...base, env: { DEV_DASHBOARD_ENABLED: "0" } });
    expect(off.routes.enabled?.()).toBe(false);
    off.prepare(app);
    expect(off.get()).toBeUndefined();
    expect(off.routes.enabled?.()).toBe(false);
    await off.stop();

    const on = createDevDashboard({ ...base, env: {} });
    expect(on.routes.enabled?.()).toBe(false);
    on.prepare(app);
    expect(on.routes.enabled?.()).toBe(true);
    // The host takes `/_dev` and below for it, at a segment boundary.
    expect(on.routes.prefix).toBe("/_dev");
    expect(underPrefix("/_dev", on.routes.prefix)).toBe(true);
    expect(underPrefix("/_dev/api/state", on.routes.prefix)).toBe(true);
    expect(underPrefix("/_devtools", on.routes.prefix)).toBe(false);
    await on.stop();
  });

  it("on a real Azure account the meter is not available, said as such", async () => {
    const azure = createDevDashboard({
      ...base,
      env: {},
      account: () => ({
        kind: "key",
        source: "COSMOS",
        endpoint: "https://acct.documents.azure.com:443/",
        key: "k",
      }),
    });
    azure.prepare(app);
    const res = await azure.routes.handle({
      method: "GET",
      url: new URL("http://127.0.0.1/_dev/api/state"),
      headers: {},
      body: Buffer.alloc(0),
    });
    const s = JSON.parse(String(res?.body)) as DashboardState;
    expect(s.ru).toMatchObject({ ok: false, notConfigured: true });
    if (!s.ru.ok)
      expect(s.ru.error).toMatch(/^not available: https:\/\/acct\.documents\.azure\.com:443\/ is an Azure/);
    await azure.stop();
  });
});

describe("the orchestrations panel", () => {
  it("shows the runtime status the HTTP API answers (ContinuedAsNew is Running), then follows the change feed", async () => {
    const queries: unknown[] = [];
    const options: unknown[] = [];
    const doc = (instanceId: string, status: string, createdTime: string, output: string | null = null) => ({
      instanceId,
      name: "loop",
      status,
      createdTime,
      lastUpdatedTime: createdTime,
      output,
    });
    const resources = [
      doc("a", "ContinuedAsNew", "2026-01-01T00:00:03Z"),
      doc("b", "Running", "2026-01-01T00:00:02Z"),
      doc("c", "Completed", "2026-01-01T00:00:01Z"),
    ];
    // What the feed answers next: pages of changed documents, then a 304.
    const pages: { statusCode: number; result: unknown[] }[] = [];
    let feedReads = 0;
    const container = {
      items: {
        query: (q: unknown, o: unknown) => {
          queries.push(q);
          options.push(o);
          return { fetchAll: async () => ({ resources }) };
        },
        getChangeFeedIterator: () => ({
          readNext: async () => {
            feedReads++;
            return pages.shift() ?? { statusCode: 304, result: [] };
          },
        }),
      },
    } as unknown as Container;
    const view = new InstanceView(60_000);
    const where = { databaseName: "db", containerName: "hub", hubName: "H" };
    const signal = new AbortController().signal;
    const d = await view.read(container, where, 2, 0, signal);
    // A panel given up aborts its read.
    expect(options).toEqual([{ abortSignal: signal }]);
    expect(d.counts).toEqual({ Running: 2, Completed: 1 });
    expect(d.total).toBe(3);
    expect(d.latest.map((r) => `${r.instanceId} ${r.runtimeStatus}`)).toEqual(["a Running", "b Running"]);
    expect(queries).toEqual([
      {
        query:
          "SELECT c.instanceId, c.name, c.status, c.createdTime, c.lastUpdatedTime, c.output FROM c WHERE c.kind = 'instance' AND c.hub = @hub AND NOT STARTSWITH(c.instanceId, '@')",
        parameters: [{ name: "@hub", value: "H" }],
      },
    ]);
    // The feed was positioned before the listing (one read); the next refreshes read only the feed.
    expect(feedReads).toBe(1);
    pages.push({
      statusCode: 200,
      result: [
        { ...doc("b", "Failed", "2026-01-01T00:00:02Z", JSON.stringify("boom")), kind: "instance", hub: "H" },
        { ...doc("d", "Pending", "2026-01-01T00:00:04Z"), kind: "instance", hub: "other hub" },
        { ...doc("@e@k", "Running", "2026-01-01T00:00:05Z"), kind: "instance", hub: "H" },
        { id: "history-x-0", kind: "history", hub: "H" },
      ],
    });
    const next = await view.read(container, where, 10, 1_000, signal);
    expect(queries).toHaveLength(1);
    expect(feedReads).toBe(3); // the page, then the 304 that ends the catch-up
    expect(next.counts).toEqual({ Running: 1, Failed: 1, Completed: 1 });
    expect(next.latest.find((r) => r.instanceId === "b")).toMatchObject({
      runtimeStatus: "Failed",
      output: '"boom"',
    });
    // Idle: one feed read per refresh, whatever the number of instances.
    await view.read(container, where, 10, 2_000, signal);
    expect(feedReads).toBe(4);
    // Past the rescan interval: a full listing again (how a purged instance leaves the panel).
    await view.read(container, where, 10, 61_000, signal);
    expect(queries).toHaveLength(2);
  });
});

describe("a panel that gives up", () => {
  it("aborts its requests, so a read nobody waits for no longer spends RU", async () => {
    const sent: string[] = [];
    const closed: string[] = [];
    // An account that answers the SDK's account read and never answers a query.
    const server = createServer((req, res) => {
      if (req.url === "/") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            writableLocations: [],
            readableLocations: [],
            userConsistencyPolicy: { defaultConsistencyLevel: "Session" },
          }),
        );
        return;
      }
      sent.push(`${req.method} ${req.url}`);
      res.on("close", () => closed.push(`${req.method} ${req.url}`));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    // The panels' timeout runs on a fake clock: it fires when the test says, after the query was sent.
    const clock = new FakeClock();
    const dashboard = new Dashboard({
      settings: { ...readDashboardSettings({}), sourceTimeoutMs: 300, minRefreshMs: 0 },
      env: {},
      meter: () => ({ kind: "unavailable", reason: "none here" }),
      account: () => ({ kind: "key", source: "test", endpoint, key: "a2V5" }),
      locks: { databaseName: "db", containerName: "locks" },
      durable: () => undefined,
      thisHostOwner: () => undefined,
      clock,
    });
    try {
      const state = dashboard.state(true);
      await waitUntil("the lock panel's query to reach the account", () => sent.length > 0);
      expect(closed).toEqual([]);
      await clock.advance(300);
      const s = await state;
      expect(s.locks).toEqual({ ok: false, error: "no answer within 300 ms" });
      // The SDK's own request timeout is a minute: only the panel's abort closes them before it. (A wait for an
      // outcome, bounded at half that minute: far above the milliseconds the abort takes, far below the SDK's.)
      await vi.waitFor(() => expect(closed.sort()).toEqual(sent.sort()), { timeout: WAIT_MS / 2 });
    } finally {
      await dashboard.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
