/**
 * Issue 20, scheduling: a slow activity never holds other orchestrations (activities have their own worker; the
 * change feed does not wait for them), and a durable timer 30 days out fires by the hub's injected clock — not
 * early (setTimeout's 2^31−1 ms cap is 24.8 days), and without a real month passing. The slow activity is blocked
 * on a gate the test holds; the clock is a FakeClock the test moves. Counts, order and statuses only.
 */
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FakeClock } from "../../packages/core/src/clock.js";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import {
  countOf,
  createHub,
  Gate,
  type Gen,
  type HubSpec,
  historyOf,
  hubContainers,
  isFinished,
  stopAll,
  waitForStatus,
} from "./hub-harness.js";

const DAY = 86_400_000;
/** The longest delay a Node timer can have: a longer one fires after 1 ms, a clamped one fires early. */
const NODE_TIMER_MAX = 2 ** 31 - 1;

const orchestrators: Record<string, Gen> = {
  seq3: function* (ctx) {
    const a = (yield ctx.df.callActivity("double", ctx.df.getInput())) as number;
    const b = (yield ctx.df.callActivity("double", a)) as number;
    return yield ctx.df.callActivity("double", b);
  },
  slowOne: function* (ctx) {
    return yield ctx.df.callActivity("slow", null);
  },
  longNap: function* (ctx) {
    const timer = ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + 30 * DAY));
    const ping = ctx.df.waitForExternalEvent("ping");
    ctx.df.setCustomStatus("napping");
    const first = yield ctx.df.Task.any([timer, ping]);
    if (first === timer) return "the timer fired before the ping";
    ctx.df.setCustomStatus({ pinged: ping.result });
    yield timer;
    return { woke: true, pinged: ping.result };
  },
};

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-scheduling") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

async function startedHub(spec: Omit<HubSpec, "container" | "leaseContainer" | "orchestrators">) {
  const hub = createHub({ ...(await hubContainers(db)), orchestrators, ...spec });
  hubs.push(hub);
  await hub.start();
  return hub;
}

/**
 * Moves a FakeClock along with real time in small steps (so whatever a hub sleeps on it — polls, lease renewals,
 * waits — keeps going), and jumps it by days on request.
 */
class ClockPump {
  private running = true;
  private holding = false;
  private current: Promise<void> = Promise.resolve();
  private readonly loop: Promise<void>;

  constructor(private readonly clock: FakeClock) {
    this.loop = (async () => {
      while (this.running) {
        if (!this.holding) {
          this.current = this.clock.advance(20);
          await this.current;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
  }

  async jump(ms: number): Promise<void> {
    this.holding = true;
    await this.current;
    await this.clock.advance(ms);
    this.holding = false;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

describe("task hub: scheduling", () => {
  it("10 orchestrations started after a blocked activity all complete while it is still pending", async () => {
    const log: string[] = [];
    const slow = new Gate();
    const hub = await startedHub({
      log,
      activities: {
        double: (n) => (n as number) * 2,
        slow: async () => {
          await slow.pass();
          return "slow done";
        },
      },
      // Two activity slots: the slow activity holds one, the 30 fast activities share the other.
      options: { maxConcurrentActivities: 2 },
    });
    await hub.startNew("slowOne", { instanceId: "slow-1" });
    try {
      await slow.reached("the slow activity to start");

      const fast = Array.from({ length: 10 }, (_v, i) => `fast-${i}`);
      for (const [i, id] of fast.entries()) await hub.startNew("seq3", { instanceId: id, input: String(i) });
      for (const [i, id] of fast.entries()) {
        expect(await waitForStatus(hub, id, isFinished, log)).toMatchObject({
          runtimeStatus: "Completed",
          output: i * 8,
        });
      }

      // All ten finished while the slow one still waits in its activity, started once.
      expect(slow.isOpen).toBe(false);
      expect(slow.entered).toBe(1);
      expect((await hub.getStatus("slow-1"))?.runtimeStatus).toBe("Running");
      const pending = await historyOf(hub, "slow-1");
      expect(countOf(pending, "TaskScheduled")).toBe(1);
      expect(countOf(pending, "TaskCompleted")).toBe(0);
    } finally {
      // Also when an assertion above failed: a hub stopping waits for its running activities.
      slow.open();
    }
    expect(await waitForStatus(hub, "slow-1", isFinished, log)).toMatchObject({
      runtimeStatus: "Completed",
      output: "slow done",
    });
    expect(slow.entered).toBe(1);
  });

  it("a timer 30 days out follows the injected clock: not fired at 29 days, fired after 30", async () => {
    const log: string[] = [];
    const clock = new FakeClock(Date.now());
    const nodeTimers = vi.spyOn(globalThis, "setTimeout");
    const overflows: string[] = [];
    const onWarning = (w: Error) => {
      if (w.name === "TimeoutOverflowWarning") overflows.push(w.message);
    };
    process.on("warning", onWarning);
    const pump = new ClockPump(clock);
    try {
      const hub = await startedHub({ log, activities: {}, options: { clock } });
      await hub.startNew("longNap", { instanceId: "nap-30" });
      await waitForStatus(hub, "nap-30", (s) => s.customStatus === "napping", log);

      // 29 days on: an event raised now is processed before the timer — the timer has not fired.
      await pump.jump(29 * DAY);
      expect(await hub.raiseEvent("nap-30", "ping", "29")).toBe("ok");
      const pinged = await waitForStatus(
        hub,
        "nap-30",
        (s) => isFinished(s) || JSON.stringify(s.customStatus) === JSON.stringify({ pinged: 29 }),
        log,
      );
      expect(pinged).toMatchObject({ runtimeStatus: "Running", customStatus: { pinged: 29 } });

      // No Node timer was armed for the month (a clamped 2^31−1 ms one would fire at 24.8 days).
      const longest = Math.max(0, ...nodeTimers.mock.calls.map((c) => Number(c[1] ?? 0)));
      expect(longest, "the longest Node timer armed (ms)").toBeLessThan(NODE_TIMER_MAX);
      expect(overflows).toEqual([]);

      // Past 30 days: it fires.
      await pump.jump(2 * DAY);
      expect(await waitForStatus(hub, "nap-30", isFinished, log)).toMatchObject({
        runtimeStatus: "Completed",
        output: { woke: true, pinged: 29 },
      });
    } finally {
      await pump.stop();
      process.off("warning", onWarning);
      nodeTimers.mockRestore();
    }
  });
});
