/**
 * The durable task hub across processes: dev host child processes (`cosmos-feed start`, the unmodified fixture app
 * test/fixtures/app-durable) on one emulator in the test process. A durable timer created by a host that is then
 * killed (-9) fires on the restarted host; two hosts share the orchestrations of one task hub (the task hub
 * container has two ranges, so each host leases one), and when one is killed the other takes its lease over and
 * completes every instance, timers included.
 */
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppChild, startAppChild } from "../../bench/lib/app-child.js";
import { until } from "../../bench/lib/until.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

const appDir = fileURLToPath(new URL("../fixtures/app-durable", import.meta.url));
const children: ChildProcess[] = [];
let t: TestEmulator;

const ENV = {
  DURABLE_FEED_POLL_DELAY_MS: "100",
  DURABLE_LEASE_ACQUIRE_INTERVAL_MS: "300",
  DURABLE_LEASE_RENEW_INTERVAL_MS: "300",
  DURABLE_LEASE_EXPIRATION_INTERVAL_MS: "1500",
  DURABLE_TIMER_SCAN_INTERVAL_MS: "500",
};

beforeAll(async () => {
  t = await startTestEmulator();
  const { database } = await t.client.databases.createIfNotExists({ id: "devhost-durable" });
  // Two physical ranges (6,000 RU/s each on the emulator): two dispatch leases to share.
  await database.containers.createIfNotExists(
    { id: "durable-tasks", partitionKey: { paths: ["/pk"] } },
    { offerThroughput: 12_000 },
  );
});

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await t?.close();
});

const start = (hub: string) =>
  startAppChild({
    appDir,
    connectionString: t.emulator.connectionString,
    env: { ...ENV, FIXTURE_HUB: hub },
    children,
  });

async function status(host: AppChild, id: string): Promise<{ runtimeStatus?: string; output?: unknown }> {
  const res = await fetch(`${host.baseUrl}/runtime/webhooks/durabletask/instances/${id}`);
  return res.status === 404 ? {} : ((await res.json()) as { runtimeStatus: string; output: unknown });
}

/** A host's API may refuse a request while it starts or dies: such a read is polled again. */
const READ_THROUGH_ERRORS = { retryErrors: true };

/** The instance's status once `host` reports it Completed (read through the host's refusals). */
function completedOn(host: AppChild, id: string, what = `instance ${id}`) {
  return until(
    what,
    async () => {
      const st = await status(host, id);
      return st.runtimeStatus === "Completed" ? st : undefined;
    },
    READ_THROUGH_ERRORS,
  );
}

describe("durable task hub across processes", () => {
  it("a timer created by a host killed with -9 fires on the restarted host", async () => {
    const first = await start("ChaosHub");
    const res = await fetch(
      `${first.baseUrl}/runtime/webhooks/durabletask/orchestrators/napThenGreet/nap-1`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "2",
      },
    );
    expect(res.status, first.output()).toBe(202);
    // The timer exists (the instance is running, its TimerCreated stored) …
    await until(
      "the timer to be created",
      async () => {
        const s = await fetch(
          `${first.baseUrl}/runtime/webhooks/durabletask/instances/nap-1?showHistory=true`,
        );
        const body = (await s.json()) as { historyEvents?: { EventType: string }[] };
        return body.historyEvents?.some((e) => e.EventType === "TimerCreated") ? true : undefined;
      },
      READ_THROUGH_ERRORS,
    );
    // … when the host dies, before it fires.
    first.child.kill("SIGKILL");
    await first.exited;
    const second = await start("ChaosHub");
    const done = await completedOn(second, "nap-1", "the instance to complete after the restart");
    expect(done.output).toBe("Hello, after the nap!");
    expect(second.output()).toContain("Executed 'Functions.cityGreeting' (Succeeded");
    second.child.kill("SIGTERM");
    await second.exited;
  });

  it("two hosts share one task hub's orchestrations; when one is killed, the other finishes its work", async () => {
    const [a, b] = await Promise.all([start("SharedHub"), start("SharedHub")]);
    const ran = (h: AppChild) =>
      (h.output().match(/Executed 'Functions\.(fanOutFanIn|napThenGreet)' \(Succeeded/g) ?? []).length;
    const fanOut = Array.from({ length: 12 }, (_v, i) => `shared-${i}`);
    const naps = Array.from({ length: 6 }, (_v, i) => `nap-shared-${i}`);
    for (const id of fanOut) {
      const res = await fetch(`${a.baseUrl}/runtime/webhooks/durabletask/orchestrators/fanOutFanIn/${id}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([`${id}-x`, `${id}-y`]),
      });
      expect(res.status).toBe(202);
    }
    for (const id of naps) {
      await fetch(`${a.baseUrl}/runtime/webhooks/durabletask/orchestrators/napThenGreet/${id}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "2",
      });
    }
    // Both hosts are working (each leases one of the task hub's two ranges) …
    await until(
      "both hosts to run orchestrations",
      async () => (ran(a) > 0 && ran(b) > 0 ? true : undefined),
      READ_THROUGH_ERRORS,
    );
    // … when one dies with timers and work of its own in flight: the other takes its lease over and finishes.
    a.child.kill("SIGKILL");
    await a.exited;
    for (const id of fanOut) {
      const s = await completedOn(b, id);
      expect(s.output).toMatchObject({ greetings: [`Hello, ${id}-x!`, `Hello, ${id}-y!`] });
    }
    for (const id of naps) {
      const s = await completedOn(b, id);
      expect(s.output).toBe("Hello, after the nap!");
    }
  });
});
