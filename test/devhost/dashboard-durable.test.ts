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
import { meterTotals, remoteMeter } from "../../src/devhost/dashboard/meter.js";
import type { DashboardState } from "../../src/devhost/dashboard/types.js";
import type { StartedApp } from "../../src/devhost/index.js";
import { type EmulatorChild, spawnEmulator } from "../support/child.js";
import { type InProcessDevHost, startInProcessDevHost } from "../support/dev-host.js";
import { until } from "../support/until.js";

const appDir = fileURLToPath(new URL("../fixtures/app-durable", import.meta.url));
let started: StartedApp;
let host: InProcessDevHost;
let other: EmulatorChild;

beforeAll(async () => {
  [host, other] = await Promise.all([
    startInProcessDevHost({
      appDir,
      dataDirPrefix: "dashboard-durable-",
      env: { DEV_DASHBOARD_MIN_REFRESH_MS: "0" },
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
