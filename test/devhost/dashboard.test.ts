/**
 * The dev host dashboard (/_dev) in process, over real sockets, on the embedded emulator: `cosmos-feed start` runs a
 * small CommonJS app whose cosmosDBTrigger is tuned quiet (it writes its lease container only at start), with the
 * repository's containers.json (so the lock container is the app's). /_dev/api/state is checked against the lease
 * and lock containers as a separate client reads them; the RU table's app figures exclude the dashboard's own reads;
 * a failing source empties only its panel; bad requests get JSON 400/404/405.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { Dashboard } from "../../packages/devhost/src/dashboard/dashboard.js";
import { readDashboardSettings } from "../../packages/devhost/src/dashboard/settings.js";
import type { DashboardState } from "../../packages/devhost/src/dashboard/types.js";
import type { StartedApp } from "../../packages/devhost/src/index.js";
import type { LoadedApp } from "../../packages/devhost/src/loader.js";
import { LockClient } from "../../packages/locks/src/index.js";
import { type InProcessDevHost, startInProcessDevHost } from "../support/dev-host.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const scratch = join(repoRoot, ".data", "test-apps");
let appDir: string;
let host: InProcessDevHost;
let started: StartedApp;
let client: CosmosClient;

function writeApp(): string {
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, "dashboard-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ main: "index.js" }));
  // No route prefix and a catch-all: paths beside /_dev (such as /_devx) reach the app.
  writeFileSync(
    join(dir, "host.json"),
    JSON.stringify({ version: "2.0", extensions: { http: { routePrefix: "" } } }),
  );
  // Intervals far beyond the test: after its first balancing round the processor leaves the lease container alone.
  writeFileSync(
    join(dir, "index.js"),
    `const { app } = require("@azure/functions");
app.cosmosDB("onResource", {
  connection: "DASH_COSMOS",
  databaseName: "cosmos-feed-app",
  containerName: "resources",
  leaseContainerName: "leases",
  leaseContainerPrefix: "dash-",
  leaseAcquireInterval: 600000,
  leaseRenewInterval: 600000,
  leaseExpirationInterval: 3600000,
  feedPollDelay: 1000,
  handler: (documents, context) => context.log("saw " + documents.length),
});
app.http("hello", { route: "api/hello", handler: async () => ({ body: "hi" }) });
app.http("catchAll", { route: "{*rest}", handler: async (req) => ({ body: "app " + new URL(req.url).pathname }) });`,
  );
  return dir;
}

beforeAll(async () => {
  appDir = writeApp();
  host = await startInProcessDevHost({
    appDir,
    dataDirPrefix: "dashboard-",
    containers: join(repoRoot, "src", "shared", "containers.json"),
    env: { DEV_DASHBOARD_MIN_REFRESH_MS: "0", DEV_DASHBOARD_LAG_INTERVAL_MS: "0" },
  });
  started = host.started;
  const emu = started.emulator;
  if (!emu) throw new Error("no embedded emulator");
  client = new CosmosClient({ endpoint: emu.endpoint, key: emu.key });
});

afterAll(async () => {
  client?.dispose();
  await host?.stop();
  rmSync(appDir, { recursive: true, force: true });
});

async function state(): Promise<DashboardState> {
  const res = await fetch(`${started.host.baseUrl}/_dev/api/state`);
  expect(res.status).toBe(200);
  return (await res.json()) as DashboardState;
}

const leaseDocs = async () =>
  (
    await client
      .database("cosmos-feed-app")
      .container("leases")
      .items.query<{ id: string; LeaseToken: string; Owner: string | null; timestamp: string }>(
        "SELECT c.id, c.LeaseToken, c.Owner, c.timestamp FROM c WHERE STARTSWITH(c.id, 'dash-') AND IS_DEFINED(c.LeaseToken)",
      )
      .fetchAll()
  ).resources;

describe("dev host dashboard: /_dev/api/state", () => {
  it("shows the trigger's leases as the lease container has them, owned by this host, with lag and expiry", async () => {
    const owner = await until("the trigger to own its leases", async () => {
      const docs = await leaseDocs();
      return docs.length > 0 && docs.every((d) => d.Owner) ? docs[0].Owner : undefined;
    });
    expect(started.dashboard.get()).toBeDefined();
    const s = await state();
    if (!s.leases.ok) throw new Error(s.leases.error);
    const t = s.leases.data.triggers.find((x) => x.functionName === "onResource");
    expect(t).toBeDefined();
    if (!t) return;
    expect(t).toMatchObject({
      monitored: "cosmos-feed-app/resources",
      leaseContainer: "cosmos-feed-app/leases",
      prefix: "dash-",
      leaseExpirationIntervalMs: 3_600_000,
      thisHostOwner: owner,
    });
    const docs = await leaseDocs();
    expect(t.leases.map((l) => `${l.id} ${l.owner}`).sort()).toEqual(
      docs.map((d) => `${d.id} ${d.Owner}`).sort(),
    );
    for (const l of t.leases) {
      expect(l.thisHost).toBe(true);
      expect(l.expired).toBe(false);
      expect(l.estimatedLag).toBe(0);
      // The lease's last write + the trigger's expiration interval (an hour: nothing renews it during the test).
      const written = docs.find((d) => d.id === l.id)?.timestamp ?? "";
      expect(Date.parse(l.expiresAt ?? "")).toBe(Date.parse(written) + 3_600_000);
    }
    expect(t.owners).toEqual([{ owner, thisHost: true, leases: docs.length }]);
    // Lag follows the monitored container: two writes nobody handled yet would show as lag once read … the
    // handler reads them within a poll, so only the shape is asserted here.
    expect(s.leases.data.handoffs).toEqual([]);
    // No durable functions in this app: that panel says so, alone.
    expect(s.durable).toEqual({
      ok: false,
      error: "the app has no durable functions (no task hub runs)",
      notConfigured: true,
    });
  });

  it("matches lease ids by the monitored account's host when the lease connection names the account otherwise", async () => {
    const emu = started.emulator;
    if (!emu) throw new Error("no embedded emulator");
    await until("the trigger to own its leases", async () =>
      (await leaseDocs()).length > 0 ? true : undefined,
    );
    const docs = await leaseDocs();
    // The same emulator, its lease connection spelled `localhost`: the ids still carry the monitored 127.0.0.1.
    const monitored = new URL(emu.endpoint);
    expect(monitored.hostname).toBe("127.0.0.1");
    const otherName = `http://localhost:${monitored.port}/`;
    const app = {
      functions: [
        {
          metadata: { name: "onResourceElsewhere" },
          trigger: { type: "cosmosDBTrigger" },
          triggerName: "documents",
          bindings: {
            documents: {
              connection: "MON_COSMOS",
              leaseConnection: "LEASE_COSMOS",
              databaseName: "cosmos-feed-app",
              containerName: "resources",
              leaseContainerName: "leases",
              leaseContainerPrefix: "dash-",
            },
          },
        },
      ],
    } as unknown as LoadedApp;
    const dashboard = new Dashboard({
      settings: { ...readDashboardSettings({}), minRefreshMs: 0 },
      env: {
        MON_COSMOS: emu.connectionString,
        LEASE_COSMOS: `AccountEndpoint=${otherName};AccountKey=${emu.key};`,
      },
      meter: () => ({ kind: "unavailable", reason: "not needed here" }),
      account: () => undefined,
      durable: () => undefined,
      thisHostOwner: () => undefined,
    });
    try {
      dashboard.start(app, "http://127.0.0.1:1");
      const s = await dashboard.state(true);
      if (!s.leases.ok) throw new Error(s.leases.error);
      const [t] = s.leases.data.triggers;
      expect(t.error).toBeUndefined();
      expect(t.leases.map((l) => l.id).sort()).toEqual(docs.map((d) => d.id).sort());
    } finally {
      await dashboard.close();
    }
  });

  it("shows a hand-off when a lease's owner changes between refreshes", async () => {
    await state(); // baseline
    const leases = client.database("cosmos-feed-app").container("leases");
    const [doc] = await leaseDocs();
    const { resource } = await leases.item(doc.id, doc.id).read<Record<string, unknown>>();
    await leases.item(doc.id, doc.id).replace({ ...resource, Owner: "someone-else" });
    const s = await state();
    if (!s.leases.ok) throw new Error(s.leases.error);
    expect(s.leases.data.handoffs[0]).toMatchObject({
      functionName: "onResource",
      leaseToken: doc.LeaseToken,
      from: doc.Owner,
      to: "someone-else",
    });
    const t = s.leases.data.triggers[0];
    expect(t.owners.map((o) => o.owner)).toContain("someone-else");
    // Put it back, as it was (the processor, renewing only hourly, never noticed).
    const { resource: now } = await leases.item(doc.id, doc.id).read<Record<string, unknown>>();
    await leases.item(doc.id, doc.id).replace({ ...now, Owner: doc.Owner });
  });

  it("lists lock holders with their remaining TTL", async () => {
    const locks = new LockClient({
      container: client.database("cosmos-feed-app").container("locks"),
      owner: "test-owner",
      ttlSeconds: 30,
    });
    const handle = await locks.tryAcquire("dash-lock", { autoRenew: false });
    try {
      const s = await state();
      if (!s.locks.ok) throw new Error(s.locks.error);
      expect(s.locks.data.container).toBe("cosmos-feed-app/locks");
      const h = s.locks.data.holders.find((x) => x.name === "dash-lock");
      expect(h).toMatchObject({ owner: "test-owner", ttlSeconds: 30, expired: false, waiters: 0 });
      // What is left of the 30 s when the state was generated: the lock's _ts + ttl − generatedAt, exactly.
      const doc = (await locks.container.item("dash-lock", "dash-lock").read<{ _ts: number }>()).resource;
      expect(h?.remainingMs).toBe(((doc?._ts ?? 0) + 30) * 1000 - Date.parse(s.generatedAt));
    } finally {
      await handle.release();
    }
  });

  it("RU per container: the dashboard's own reads are subtracted from the meter and shown apart", async () => {
    const leases = client.database("cosmos-feed-app").container("leases");
    const rate = (s: DashboardState) => {
      if (!s.ru.ok) throw new Error(s.ru.error);
      const row = s.ru.data.containers.find((c) => c.container === "cosmos-feed-app/leases");
      if (!row) throw new Error("no row for the lease container");
      return row;
    };
    const before = rate(await state());
    // The app's traffic on the lease container in this window is exactly these writes (the processor is quiet).
    let written = 0;
    for (let i = 0; i < 5; i++) {
      const res = await leases.items.create({ id: `probe-${i}-${Date.now()}` });
      written += res.requestCharge;
    }
    for (let i = 0; i < 3; i++) await state(); // more dashboard reads of the lease container
    const after = rate(await state());
    const app = after.appRuTotal - before.appRuTotal;
    const dashboard = after.dashboardRuTotal - before.dashboardRuTotal;
    const meter = after.meterRuTotal - before.meterRuTotal;
    expect(written).toBeGreaterThan(0);
    expect(dashboard).toBeGreaterThan(written / 2); // four refreshes read every lease document
    expect(meter).toBeCloseTo(app + dashboard, 1);
    // Without the subtraction the app's figure would be `meter`, i.e. `written + dashboard`.
    expect(Math.abs(app - written)).toBeLessThan(0.1);
    expect(after.dashboardRuPerSecond).toBeGreaterThan(0);
    // The independent tally agrees: the dashboard's client saw as much as the table says it spent.
    const tally = started.dashboard.get()?.tally.totals()["cosmos-feed-app/leases"] ?? 0;
    expect(tally).toBeGreaterThanOrEqual(after.dashboardRuTotal - 0.01);
  });

  it("a failing source empties only its own panel", async () => {
    await client.database("cosmos-feed-app").container("locks").delete();
    const res = await fetch(`${started.host.baseUrl}/_dev/api/state?fresh=1`);
    expect(res.status).toBe(200);
    const s = (await res.json()) as DashboardState;
    expect(s.locks.ok).toBe(false);
    if (!s.locks.ok) expect(s.locks.error).toMatch(/not found|does not exist|NotFound|Resource/i);
    expect(s.leases.ok).toBe(true);
    expect(s.ru.ok).toBe(true);
  });
});

describe("dev host dashboard: the page and bad requests", () => {
  it("serves the page, its transpiled modules and stylesheet under a strict CSP", async () => {
    const base = started.host.baseUrl;
    for (const path of ["/_dev", "/_dev/"]) {
      const res = await fetch(`${base}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/unsafe|https?:|\*/);
      const html = await res.text();
      expect(html).toContain('<script type="module" src="/_dev/assets/app.js">');
      expect(html).not.toMatch(/https?:\/\//);
    }
    const js = await fetch(`${base}/_dev/assets/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
    const text = await js.text();
    expect(text).toContain('from "./plot.js"');
    expect(text).not.toMatch(/import type|: HTMLElement|https?:\/\/(?!www\.w3\.org)/);
    for (const name of ["plot.js", "format.js", "app.css", "favicon.svg"]) {
      expect((await fetch(`${base}/_dev/assets/${name}`)).status).toBe(200);
    }
  });

  it("answers bad requests under /_dev with JSON 400/404/405, a code and a reason — never a 500", async () => {
    const base = started.host.baseUrl;
    const cases: [string, RequestInit, number, string][] = [
      ["/_dev/nope", {}, 404, "NotFound"],
      ["/_dev/api/other", {}, 404, "NotFound"],
      ["/_dev/assets/nope.js", {}, 404, "NotFound"],
      ["/_dev/assets/..%2f..%2fpackage.json", {}, 404, "NotFound"],
      ["/_dev/assets/types.js", {}, 404, "NotFound"],
      // JSON: a text/plain POST (fetch's default) is refused before the dashboard sees it (cross-site guard).
      [
        "/_dev/api/state",
        { method: "POST", headers: { "content-type": "application/json" }, body: "{}" },
        405,
        "MethodNotAllowed",
      ],
      ["/_dev/api/state", { method: "DELETE" }, 405, "MethodNotAllowed"],
      ["/_dev", { method: "PUT" }, 405, "MethodNotAllowed"],
      ["/_dev/api/state?fresh=maybe", {}, 400, "InvalidParameter"],
      ["/_dev/api/state?x=1", {}, 400, "UnknownParameter"],
      ["/_dev/?q=1", {}, 400, "UnknownParameter"],
    ];
    for (const [path, init, status, code] of cases) {
      const res = await fetch(`${base}${path}`, init);
      expect(res.status, `${init.method ?? "GET"} ${path}`).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      const body = (await res.json()) as { code: string; reason: string };
      expect(body.code).toBe(code);
      expect(body.reason.length).toBeGreaterThan(5);
      if (status === 405) expect(res.headers.get("allow")).toBe("GET, HEAD");
    }
    // Outside /_dev the app's routes are untouched.
    expect(await (await fetch(`${base}/api/hello`)).text()).toBe("hi");
    const beside = await fetch(`${base}/_devx`);
    expect(beside.status).toBe(200);
    expect(await beside.text()).toBe("app /_devx");
  });
});
