/**
 * The dashboard's orchestration panel and RU meter sources: the unmodified durable fixture app
 * (test/fixtures/app-durable) on `cosmos-feed start` in process; an instance started through its HTTP starter shows
 * in the counts by runtime status and among the latest instances. The meter of an emulator in another process is
 * read through its signed /_emulator/meter; a wrong key or a server that is not this project's emulator is an
 * error of that panel only.
 */
import { fileURLToPath } from "node:url";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { meterTotals, remoteMeter } from "../../packages/devhost/src/dashboard/meter.js";
import type { DashboardState } from "../../packages/devhost/src/dashboard/types.js";
import type { StartedApp } from "../../packages/devhost/src/index.js";
import { type EmulatorChild, spawnEmulator } from "../support/child.js";
import { type InProcessDevHost, startInProcessDevHost } from "../support/dev-host.js";

const appDir = fileURLToPath(new URL("../fixtures/app-durable", import.meta.url));
let started: StartedApp;
let host: InProcessDevHost;
let other: EmulatorChild;

beforeAll(async () => {
  [host, other] = await Promise.all([
    startInProcessDevHost({
      appDir,
      dataDirPrefix: "dashboard-durable-",
      // Lag on every refresh: a refresh's reads are then the same every time (what the bound below counts).
      env: { DEV_DASHBOARD_MIN_REFRESH_MS: "0", DEV_DASHBOARD_LAG_INTERVAL_MS: "0" },
    }),
    spawnEmulator({ port: 0 }),
  ]);
  started = host.started;
});

afterAll(async () => {
  await host?.stop();
  other?.process.kill("SIGTERM");
  await other?.exited;
});

async function state(): Promise<DashboardState> {
  const res = await fetch(`${started.host.baseUrl}/_dev/api/state`);
  expect(res.status).toBe(200);
  return (await res.json()) as DashboardState;
}

/** Starts `orchestrator` through the fixture's HTTP starter; its instance id and status URL. */
async function start(orchestrator: string, input: unknown) {
  const res = await fetch(`${started.host.baseUrl}/api/orchestrators/${orchestrator}`, {
    method: "POST",
    body: JSON.stringify(input),
  });
  expect(res.status).toBe(202);
  return (await res.json()) as { id: string; statusQueryGetUri: string };
}

async function finished(statusQueryGetUri: string) {
  await until("the orchestration to finish", async () =>
    (await fetch(statusQueryGetUri)).status === 202 ? undefined : true,
  );
}

/** The dashboard's own RU on the task hub's container, as its state reports it (summed since it started). */
function dashboardRuOnHub(s: DashboardState): number {
  if (!s.ru.ok) throw new Error(s.ru.error);
  return s.ru.data.containers.find((c) => c.container.endsWith("/durable-tasks"))?.dashboardRuTotal ?? 0;
}

/** The dashboard's RU on the hub's container in each of `n` refreshes, after one that catches up. */
async function ruPerRefresh(n: number): Promise<number[]> {
  let before = dashboardRuOnHub(await state());
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const after = dashboardRuOnHub(await state());
    out.push(Math.round((after - before) * 100) / 100);
    before = after;
  }
  return out;
}

/**
 * What one refresh may spend on the hub's container, idle: the change feed read that finds nothing (1 RU) and the
 * dispatch lease's lag read (1 RU, 2.5 with a change), with room for one change of the hub's own. Listing the
 * instances each refresh cost 2.3 RU + 0.05 RU per document of the container + 1 RU per KiB returned: over this
 * with 50 instances.
 */
const HUB_RU_PER_REFRESH = 6;

describe("dashboard: durable orchestrations", () => {
  it("counts instances by runtime status and lists the latest", async () => {
    const base = started.host.baseUrl;
    const res = await fetch(`${base}/api/orchestrators/fanOutFanIn`, {
      method: "POST",
      body: JSON.stringify(["Oslo"]),
    });
    expect(res.status).toBe(202);
    const { id, statusQueryGetUri } = (await res.json()) as { id: string; statusQueryGetUri: string };
    await until("the orchestration to finish", async () =>
      (await fetch(statusQueryGetUri)).status === 202 ? undefined : true,
    );
    const s = await state();
    if (!s.durable.ok) throw new Error(s.durable.error);
    expect(s.durable.data.hubName).toBe("FixtureHub");
    expect(s.durable.data.counts.Completed).toBeGreaterThanOrEqual(1);
    expect(s.durable.data.total).toBe(Object.values(s.durable.data.counts).reduce((a, b) => a + b, 0));
    expect(s.durable.data.latest.find((i) => i.instanceId === id)).toMatchObject({
      name: "fanOutFanIn",
      runtimeStatus: "Completed",
    });
    // The task hub's own traffic is the app's: it shows in the RU table of the embedded emulator.
    if (!s.ru.ok) throw new Error(s.ru.error);
    expect(s.ru.data.source).toBe("embedded emulator");
    expect(s.ru.data.containers.some((c) => c.container.endsWith("/durable-tasks") && c.appRuTotal > 0)).toBe(
      true,
    );
    // No containers.json in this app: no lock container, said plainly.
    expect(s.locks).toMatchObject({ ok: false, notConfigured: true });
  });
});

describe("dashboard: what the newcomer saw", () => {
  it("a Failed instance shows its failure reason", async () => {
    // The fixture's orchestrator maps over its input: a number fails it with a TypeError.
    const { id, statusQueryGetUri } = await start("fanOutFanIn", 5);
    await finished(statusQueryGetUri);
    const s = await state();
    if (!s.durable.ok) throw new Error(s.durable.error);
    const row = s.durable.data.latest.find((i) => i.instanceId === id);
    expect(row?.runtimeStatus).toBe("Failed");
    expect(row?.output).toMatch(/map is not a function/);
  });

  it("lists the task hub's dispatch lease with the triggers' leases, this host owning it, with a lag", async () => {
    const s = await until("the dispatch lease with a lag", async () => {
      const v = await state();
      const row = v.leases.ok ? v.leases.data.triggers.find((t) => t.taskHub === "FixtureHub") : undefined;
      return row && row.leases.length > 0 && row.leases.every((l) => l.estimatedLag !== null)
        ? row
        : undefined;
    });
    expect(s.prefix).toBe("durable.FixtureHub.");
    expect(s.monitored.endsWith("/durable-tasks")).toBe(true);
    expect(s.thisHostOwner).not.toBeNull();
    expect(s.leases.every((l) => l.thisHost && l.owner === s.thisHostOwner)).toBe(true);
    expect(s.lagError).toBeUndefined();
  });

  it("a refresh's reads of the task hub do not grow with the instances: 1 and 50, the same bound", async () => {
    const first = await start("fanOutFanIn", ["One"]);
    await finished(first.statusQueryGetUri);
    const withFew = await ruPerRefresh(3);
    const more = await Promise.all(Array.from({ length: 50 }, (_, i) => start("fanOutFanIn", [`City ${i}`])));
    for (const m of more) await finished(m.statusQueryGetUri);
    const s = await state();
    if (!s.durable.ok) throw new Error(s.durable.error);
    expect(s.durable.data.total).toBeGreaterThanOrEqual(51);
    expect(s.durable.data.counts.Completed).toBeGreaterThanOrEqual(51);
    const withMany = await ruPerRefresh(3);
    for (const ru of [...withFew, ...withMany]) {
      expect(ru).toBeGreaterThan(0);
      expect(ru).toBeLessThanOrEqual(HUB_RU_PER_REFRESH);
    }
  });
});

describe("dashboard: another emulator process's meter", () => {
  it("reads it through the signed /_emulator/meter, and fails clearly otherwise", async () => {
    const client = new CosmosClient({ endpoint: other.endpoint, key: other.key });
    try {
      const { database } = await client.databases.createIfNotExists({ id: "m" });
      const { container } = await database.containers.createIfNotExists({ id: "c" });
      const created = await container.items.create({ id: "x" });
      const totals = await remoteMeter(other.endpoint, other.key, 5_000).read();
      expect(totals["m/c"]).toBeCloseTo(created.requestCharge, 2);
    } finally {
      client.dispose();
    }
    const wrongKey = Buffer.alloc(64, 1).toString("base64");
    const source = remoteMeter(other.endpoint, wrongKey, 5_000);
    await expect(source.read()).rejects.toThrow(/answered 401/);
    // The dev host is not an emulator: its /_emulator/meter is nothing.
    const notEmulator = remoteMeter(`${started.host.baseUrl}/`, other.key, 5_000);
    await expect(notEmulator.read()).rejects.toThrow(/answered 404 .*not this project's emulator/);
    expect(meterTotals("garbage")).toEqual({});
  });
});
