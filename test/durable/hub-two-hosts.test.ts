/**
 * Issue 20, several hosts on one task hub (in this process, each with its own Cosmos client): a host that loses its
 * dispatch lease in the middle of an episode must not commit that episode — the lease's new owner decides it, and
 * every activity's effect happens once; and two hosts sharing a task hub whose container has two physical ranges
 * (a lease each, moving while they work) complete 100 orchestrations, every task run at least once (as
 * docs/durable.md promises: a task of the moved range may run again) and no task's completion recorded twice.
 *
 * The lease is lost the way a partitioned host loses it: host A can no longer reach the lease container (every
 * request to it fails with 503, injected in A's SDK pipeline), so A's renewals fail, A gives the lease up at its
 * local deadline, and B takes it over once it expired. Twice: once A's feed has brought the instance (the lease
 * gates it through its page's signal), once it never did (A's feed reads fail too, as when a loaded host's first page
 * is late: no page ties the instance to the lease, so losing any of A's leases gates it).
 */
import type { Container, Database, RequestContext } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import type { OrchestrationTriggerInput } from "../../packages/devhost/src/durable/types.js";
import { HistoryEventType } from "../../packages/devhost/src/durable/types.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { faultPlugins, serviceError } from "../support/faults.js";
import {
  countOf,
  createHub,
  duplicateCompletions,
  Gate,
  type Gen,
  historyOf,
  hubContainers,
  isFinished,
  leaseOwners,
  stopAll,
  waitForStatus,
} from "./hub-harness.js";

const FAN = 120;

/**
 * The dispatch lease's timings in the lease-loss test (ms): a lease is renewed at age 3 s and given up at 7.2 s, so a
 * loaded host does not lose it before the test cuts it (the fast ones leave 150 ms: its results would then go to a
 * feed the unfed variant starves); B takes it over 8 s after A's last renewal.
 */
const MOVE_LEASES = { leaseRenewIntervalMs: 3_000, leaseExpirationIntervalMs: 8_000 };

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-hosts") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

/** The same containers through another client (another host's connection). */
function through(
  client: ReturnType<TestEmulator["newClient"]>,
  c: { container: Container; leaseContainer: Container },
) {
  const database = client.database(db.id);
  return {
    container: database.container(c.container.id),
    leaseContainer: database.container(c.leaseContainer.id),
  };
}

const typesIn = (input: OrchestrationTriggerInput, type: number) =>
  input.history.filter((e) => e.EventType === type).length;

describe("task hub: two hosts", () => {
  // Fed: A's change feed brought the instance before the cut. Unfed: it had not (A's feed reads fail throughout, as
  // when a loaded host's first page comes late), so A's lease is not tied to the instance by any page.
  it.each([
    ["fed", false],
    ["unfed", true],
  ])("a host that loses its lease mid-episode (%s) does not commit it; the new owner completes the instance, each effect once", async (variant, starved) => {
    const hubName = `MoveHub${variant}`;
    const containers = await hubContainers(db, 1);
    let cut = false;
    const failing = (ctx: RequestContext) => {
      const path = decodeURIComponent(ctx.path ?? "");
      if (cut && path.includes(`/colls/${containers.leaseContainer.id}`)) return true;
      const feedRead = Object.entries(ctx.headers ?? {}).some(([k, v]) => k.toLowerCase() === "a-im" && v);
      return starved && feedRead && path.includes(`/colls/${containers.container.id}`);
    };
    const clientA = t.newClient(
      faultPlugins({
        match: failing,
        run: async () => {
          throw serviceError(503);
        },
      }),
    );
    const effects = new Map<string, number>();
    const activities = {
      effect: (input: unknown) => {
        const { key, by } = input as { key: string; by: string };
        effects.set(key, (effects.get(key) ?? 0) + 1);
        return by;
      },
    };
    // Each host's orchestrator names the host in the inputs it decides, so the output shows who decided what.
    const moving = (host: string): Gen =>
      function* (ctx) {
        const first = yield ctx.df.callActivity("effect", { key: "first", by: host });
        const fan = yield ctx.df.Task.all(
          Array.from({ length: FAN }, (_v, i) =>
            ctx.df.callActivity("effect", { key: `fan-${i}`, by: host }),
          ),
        );
        return { first, fan };
      };
    // The fan-out episode: the first task completed, nothing else scheduled yet.
    const isFanOutEpisode = (input: OrchestrationTriggerInput) =>
      typesIn(input, HistoryEventType.TaskCompleted) === 1 &&
      typesIn(input, HistoryEventType.TaskScheduled) === 1;
    const gateA = new Gate();
    const gateB = new Gate();
    const logA: string[] = [];
    const logB: string[] = [];
    const hubA = createHub({
      ...through(clientA, containers),
      hubName,
      instanceName: "A",
      orchestrators: { moving: moving("A") },
      options: MOVE_LEASES,
      activities,
      log: logA,
      beforeInvoke: async (_n, input) => {
        if (isFanOutEpisode(input)) await gateA.pass();
      },
    });
    hubs.push(hubA);
    await hubA.start();
    await until("A to own the dispatch lease", async () =>
      (await leaseOwners(containers.leaseContainer, hubName)).join() === "A" ? true : undefined,
    );
    const hubB = createHub({
      ...through(t.newClient(), containers),
      hubName,
      instanceName: "B",
      orchestrators: { moving: moving("B") },
      options: MOVE_LEASES,
      activities,
      log: logB,
      beforeInvoke: async (_n, input) => {
        if (isFanOutEpisode(input)) await gateB.pass();
      },
    });
    hubs.push(hubB);
    await hubB.start();

    await hubA.startNew("moving", { instanceId: "moving-1" });
    try {
      await gateA.reached("A to run the fan-out episode");
      // A is in the middle of the episode when it loses the lease store; B takes the lease over once it expired.
      cut = true;
      await until("B to own the dispatch lease", async () =>
        (await leaseOwners(containers.leaseContainer, hubName)).join() === "B" ? true : undefined,
      );
      // A's episode ends after its lease did: it hands its result over (or, wrongly, commits the fan-out — B's own
      // fan-out episode waits at its gate, so only A's could); then A stops and B may run its own.
      gateA.open();
      await until("A's late episode to end", async () => {
        if (logA.some((l) => l.includes("'moving-1': its lease moved"))) return true;
        return countOf(await historyOf(hubB, "moving-1"), "TaskScheduled") > 1 ? true : undefined;
      });
      await hubA.stop();
    } finally {
      gateA.open();
      gateB.open();
    }

    const done = await waitForStatus(hubB, "moving-1", isFinished, logB);
    expect(done.runtimeStatus).toBe("Completed");
    // "first" was decided by A before it lost the lease; the fan-out only by B (A's late episode is not committed).
    const output = done.output as { first: string; fan: string[] };
    expect({
      first: output.first,
      fanLength: output.fan.length,
      fanDecidedBy: [...new Set(output.fan)],
    }).toEqual({
      first: "A",
      fanLength: FAN,
      fanDecidedBy: ["B"],
    });
    const notOnce = [...effects].filter(([, n]) => n !== 1);
    expect(notOnce, "effects that did not happen exactly once").toEqual([]);
    expect(effects.size).toBe(FAN + 1);
    const history = await historyOf(hubB, "moving-1");
    expect(countOf(history, "TaskScheduled")).toBe(FAN + 1);
    expect(countOf(history, "TaskCompleted")).toBe(FAN + 1);
    expect(duplicateCompletions(history)).toEqual([]);
  });

  it("two hosts on a two-range task hub, a lease moving while activities run: 100 orchestrations complete, each task at least once and recorded once", async () => {
    const hubName = "SharedHub";
    const containers = await hubContainers(db, 2);
    const runs = new Map<string, number>();
    const ranOn = new Map<string, number>();
    const firstSteps = new Gate();
    const orchestrators: Record<string, Gen> = {
      seq3: function* (ctx) {
        const a = (yield ctx.df.callActivity("first", ctx.df.getInput())) as number;
        const b = (yield ctx.df.callActivity("double", a)) as number;
        return yield ctx.df.callActivity("double", b);
      },
    };
    type Item = { instanceId: string; executionId: string; taskScheduledId: number };
    const activitiesOn = (host: string) => {
      const count = (item: Item) => {
        const key = `${item.instanceId}/${item.executionId}/${item.taskScheduledId}`;
        runs.set(key, (runs.get(key) ?? 0) + 1);
        ranOn.set(host, (ranOn.get(host) ?? 0) + 1);
      };
      return {
        // The first step of every orchestration waits until the second host has joined.
        first: async (n: unknown, item: Item) => {
          count(item);
          await firstSteps.pass();
          return (n as number) * 2;
        },
        double: (n: unknown, item: Item) => {
          count(item);
          return (n as number) * 2;
        },
      };
    };
    const logOf: Record<string, string[]> = {};
    const host = (name: string) => {
      const own: string[] = [];
      logOf[name] = own;
      const hub = createHub({
        ...through(t.newClient(), containers),
        hubName,
        instanceName: name,
        orchestrators,
        activities: activitiesOn(name),
        log: own,
        // Leases that do not expire within the test (a loaded machine delays renewals): the one move is B taking a
        // lease from A by balancing, not a lease flapping back and forth.
        options: {
          maxConcurrentActivities: 100,
          leaseRenewIntervalMs: 1_000,
          leaseExpirationIntervalMs: 10_000,
        },
      });
      hubs.push(hub);
      return hub;
    };
    const ids = Array.from({ length: 100 }, (_v, i) => `shared-${i}`);
    const a = host("A");
    const b = host("B");
    try {
      await a.start();
      for (const [i, id] of ids.entries()) await a.startNew("seq3", { instanceId: id, input: String(i) });
      // All 100 first steps run on A (it owns both leases) …
      await until("A to run the first step of all 100 orchestrations", async () =>
        firstSteps.entered >= ids.length ? true : undefined,
      ).catch((e: Error) => {
        throw new Error(`${e.message} (${firstSteps.entered} started)`);
      });
      // A's feed has brought every instance here (so A knows under which lease it holds each) …
      await until("A's feed to bring all 100 instances", async () =>
        a.dispatcher.ownedInstances >= ids.length ? true : undefined,
      );
      // … when B joins: one of A's two leases moves to B while they are in flight.
      await b.start();
      await until("each host to own one lease", async () =>
        (await leaseOwners(containers.leaseContainer, hubName)).join() === "A,B" ? true : undefined,
      );
      // A learns at its next renewal that the lease moved; from then on it hands that range's results to B.
      await until("A to notice the lease it lost", async () =>
        logOf.A?.some((l) => l.includes(" lost (")) ? true : undefined,
      );
    } finally {
      firstSteps.open();
    }

    for (const [i, id] of ids.entries()) {
      expect(
        await waitForStatus(i % 2 ? a : b, id, isFinished, [...(logOf.A ?? []), ...(logOf.B ?? [])]),
      ).toMatchObject({
        runtimeStatus: "Completed",
        output: i * 8,
      });
    }
    // What docs/durable.md promises: activities are at-least-once (a task of the range that moved may run again on
    // the host it moved to), and a completion is recorded once — so every result above is right.
    for (const id of ids) expect(duplicateCompletions(await historyOf(a, id)), id).toEqual([]);
    const ranTasks = [...runs.keys()].map((key) => {
      const [instanceId, , taskScheduledId] = key.split("/");
      return `${instanceId}/${taskScheduledId}`;
    });
    expect(ranTasks.sort(), "the tasks that ran at least once").toEqual(
      ids.flatMap((id) => [0, 1, 2].map((n) => `${id}/${n}`)).sort(),
    );
    // Both hosts worked: B took over the orchestrations of the range it got.
    expect(ranOn.get("B") ?? 0).toBeGreaterThan(0);
  });
});
