/**
 * A staged commit (one too large for a transactional batch: docs/durable-design.md, "Commits") seen from outside
 * while its parts are still being written, and finished by someone else. What two side-by-side CI runs caught: a
 * recovered fan-out was shown Completed while its history held 32 of 1,000 completions — the deciding batch made
 * the new status visible before the parts holding its history landed.
 *
 * The host stops in the middle of a commit deterministically: its Cosmos client holds every write to the task hub
 * container once the deciding batch (the instance document carrying a `stage` mark) has been answered, after
 * letting `k` more writes through — as if the process died there. Another host finishes the commit.
 */
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { asJson, planCommit } from "../../packages/devhost/src/durable/cosmos-backend/commit-plan.js";
import { HubStore } from "../../packages/devhost/src/durable/cosmos-backend/store.js";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { partitionKeyOf } from "../../packages/devhost/src/durable/documents.js";
import { activityResultEvent } from "../../packages/devhost/src/durable/engine.js";
import type { ActivityWorkItem } from "../../packages/devhost/src/durable/types.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { faultPlugins } from "../support/faults.js";
import { instanceDoc, messageDoc } from "./hub-docs.js";
import {
  countOf,
  createHub,
  duplicateCompletions,
  Gate,
  type Gen,
  historyOf,
  isFinished,
  stopAll,
  unthrottledHubContainers,
  waitForStatus,
} from "./hub-harness.js";

/** More completions than one batch can delete: the commit recording them is staged. */
const FAN = 150;
const HUB = "StageHub";

let t: TestEmulator;
let db: Database;
const hubs: CosmosTaskHub[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-stage") })).database;
});

afterAll(async () => {
  await stopAll(hubs);
  await t?.close();
});

const fanIn: Gen = function* (ctx) {
  const results = (yield ctx.df.Task.all(
    Array.from({ length: FAN }, (_v, i) => ctx.df.callActivity("hang", i)),
  )) as number[];
  return results.reduce((x, y) => x + y, 0);
};

/** The hub's containers through a client that holds every write once a deciding batch went through (and `k` more). */
function stoppingAfterDecision(containers: { container: Container; leaseContainer: Container }, k: number) {
  const state = { decided: false, passed: 0, held: 0 };
  const hubDocs = `/colls/${containers.container.id}/docs`;
  const client = t.newClient(
    faultPlugins({
      match: (ctx) =>
        // Writes only: reads and queries (POSTs too) pass.
        ctx.method !== "GET" &&
        ctx.operationType !== "read" &&
        ctx.operationType !== "query" &&
        decodeURIComponent(ctx.path ?? "").includes(hubDocs),
      run: async (ctx, next) => {
        if (state.decided && state.passed++ >= k) {
          state.held++;
          return new Promise<never>(() => {});
        }
        const answer = await next();
        const body = typeof ctx.body === "string" ? ctx.body : JSON.stringify(ctx.body ?? null);
        if (ctx.operationType === "batch" && body.includes('"stage":{"token"')) state.decided = true;
        return answer;
      },
    }),
  );
  const database = client.database(db.id);
  return {
    state,
    container: database.container(containers.container.id),
    leaseContainer: database.container(containers.leaseContainer.id),
  };
}

describe("task hub: a staged commit in the middle", () => {
  for (const k of [0, 1]) {
    it(`shows the instance as it was until the commit's parts land (stopped ${k} writes after the decision); another host finishes it with the whole history`, async () => {
      const containers = await unthrottledHubContainers(db);
      const client = createHub({ ...containers, hubName: HUB, orchestrators: {}, activities: {} });
      const instanceId = `fan-${k}`;

      // Host A schedules the fan-out; its activities never return, and its claim outlives the test.
      const never = new Gate();
      const a = createHub({
        ...containers,
        hubName: HUB,
        instanceName: "A",
        orchestrators: { fanIn },
        activities: {
          hang: async (i) => {
            await never.pass();
            return i;
          },
        },
        options: { activityLockMs: 600_000, maxConcurrentActivities: FAN },
      });
      hubs.push(a);
      await a.start();
      await a.startNew("fanIn", { instanceId });
      const scheduled = await until("the fan-out to be scheduled", async () => {
        const h = await historyOf(client, instanceId);
        return countOf(h, "TaskScheduled") === FAN ? h : undefined;
      });
      await a.abandon();

      // Every result waits as a message (as a host hands results over): one work item records them all, staged.
      const status = await client.getStatus(instanceId);
      expect(status?.runtimeStatus).toBe("Running");
      const executionId = (
        await containers.container.item("instance", partitionKeyOf(HUB, instanceId)).read()
      ).resource?.executionId as string;
      for (const e of scheduled.filter((x) => x.EventType === "TaskScheduled")) {
        const item: ActivityWorkItem = {
          instanceId,
          executionId,
          taskScheduledId: Number(e.EventId),
          name: "hang",
          input: String(e.EventId),
        };
        const doc = a.dispatcher.newMessageDoc({
          key: `task-${executionId}-${item.taskScheduledId}`,
          instanceId,
          executionId,
          event: activityResultEvent(item, { result: String(e.EventId) }, new Date(), 1 << 20),
        });
        await containers.container.items.create(doc);
      }

      // Host B records them and stops in the middle of that commit.
      const stopping = stoppingAfterDecision(containers, k);
      const b = createHub({
        container: stopping.container,
        leaseContainer: stopping.leaseContainer,
        hubName: HUB,
        instanceName: "B",
        orchestrators: { fanIn },
        activities: {},
      });
      await b.start();
      await until("host B to stop in the middle of its commit", async () =>
        stopping.state.held > 0 ? true : undefined,
      );

      // Undecided to readers: the instance as it was, with the history it had (no partial episode).
      const between = await client.getStatus(instanceId, { showHistory: true });
      expect(between?.runtimeStatus).toBe("Running");
      const shown = (between?.historyEvents ?? []) as { EventType: string }[];
      expect(shown.filter((e) => e.EventType === "TaskScheduled")).toHaveLength(FAN);
      expect(shown.filter((e) => e.EventType === "TaskCompleted")).toHaveLength(0);
      // B stays stopped where it is (a page it handles never ends: waiting for it would hang); it dispatches nothing.
      void b.abandon();

      // Host C finishes B's commit: Completed, with every completion in its history exactly once.
      const c = createHub({
        ...containers,
        hubName: HUB,
        instanceName: "C",
        orchestrators: { fanIn },
        activities: {},
      });
      hubs.push(c);
      await c.start();
      const done = await waitForStatus(client, instanceId, isFinished);
      expect(done).toMatchObject({ runtimeStatus: "Completed", output: ((FAN - 1) * FAN) / 2 });
      const history = await historyOf(client, instanceId);
      expect(countOf(history, "TaskScheduled")).toBe(FAN);
      expect(countOf(history, "TaskCompleted")).toBe(FAN);
      expect(duplicateCompletions(history)).toEqual([]);
      // The finished commit's stage documents and consumed messages go in its last, idempotent step, which may
      // land just after the instance shows Completed: wait (bounded) for the partition to hold none.
      const left = async () =>
        (
          await containers.container.items
            .query<{ id: string }>({
              query: "SELECT c.id FROM c WHERE c.pk = @pk AND c.kind IN ('stage', 'message')",
              parameters: [{ name: "@pk", value: partitionKeyOf(HUB, instanceId) }],
            })
            .fetchAll()
        ).resources;
      await until("no stage or message document left", async () =>
        (await left()).length === 0 ? true : undefined,
      );
      await c.stop();
    });
  }
});

describe("task hub store: a staged commit finished twice", () => {
  it("a host finishing a stage late (another finished it, a later commit deleted what it wrote) writes nothing back", async () => {
    const { container } = await unthrottledHubContainers(db);
    const store = new HubStore(container, HUB);
    const instanceId = "late";
    const pk = store.pk(instanceId);
    const version = (n: number) => instanceDoc(HUB, instanceId, `2026-01-01T00:00:0${n}.000Z`);
    const message = (n: number) => messageDoc(HUB, instanceId, `event-${n}`, n);
    const created = await store.batch(pk, [{ operationType: "Create", resourceBody: asJson(version(1)) }]);
    if (!created.ok) throw new Error(`create: ${created.status}`);

    // A commit writing 120 messages: staged. Its stage documents and deciding batch are written, then a host
    // reads the partition (the mark and the parts) — and is slow.
    const messages = Array.from({ length: 120 }, (_v, i) => message(i));
    const plan = planCommit({
      hub: HUB,
      instanceId,
      instance: { body: version(2), ifMatch: created.etag, before: version(1) },
      upserts: messages,
      deletes: [],
      token: "first",
    });
    expect(plan.kind).toBe("staged");
    if (plan.kind !== "staged") return;
    for (const s of plan.stages) await container.items.upsert(s);
    const decided = await store.batch(pk, plan.deciding);
    expect(decided.ok).toBe(true);
    const stale = await store.readPartition(instanceId);
    expect(stale.instance?.stage).toBeDefined();

    // Another host finishes it, and a later commit consumes the messages.
    await store.resumeStage(await store.readPartition(instanceId));
    const now = await store.readPartition(instanceId);
    expect(now.instance?.stage).toBeUndefined();
    expect(now.messages).toHaveLength(120);
    const consumed = await store.commit({
      hub: HUB,
      instanceId,
      instance: { body: version(3), ifMatch: now.instance?._etag ?? "", before: now.instance },
      upserts: [],
      deletes: messages.slice(0, 10).map((m) => m.id),
      token: "second",
    });
    expect(consumed.committed).toBe(true);

    // The slow host finishes the first commit from what it read: nothing comes back, nothing changes.
    await store.resumeStage(stale).catch(() => undefined);
    const after = await store.readPartition(instanceId);
    expect(after.messages.map((m) => m.id).sort()).toEqual(
      messages
        .slice(10)
        .map((m) => m.id)
        .sort(),
    );
    expect(after.instance).toMatchObject({ lastUpdatedTime: version(3).lastUpdatedTime });
    expect(after.instance?.stage).toBeUndefined();
    expect(after.stages).toEqual([]);
  });
});

describe("task hub store: stages of commits that never decided", () => {
  async function abandoned(instanceId: string, token: string) {
    const { container } = await unthrottledHubContainers(db);
    const store = new HubStore(container, HUB);
    const pk = store.pk(instanceId);
    const base = instanceDoc(HUB, instanceId, "2026-01-01T00:00:01.000Z");
    const created = await store.batch(pk, [{ operationType: "Create", resourceBody: asJson(base) }]);
    if (!created.ok) throw new Error(`create: ${created.status}`);
    const messages = Array.from({ length: 250 }, (_v, n) => messageDoc(HUB, instanceId, `${token}-${n}`, n));
    const plan = planCommit({
      hub: HUB,
      instanceId,
      instance: {
        body: { ...base, lastUpdatedTime: "2026-01-01T00:00:02.000Z" },
        ifMatch: created.etag,
        before: base,
      },
      upserts: messages,
      deletes: [],
      token,
    });
    if (plan.kind !== "staged") throw new Error("expected a staged commit");
    // The host writes its parts and dies before its deciding batch.
    for (const part of plan.stages) await container.items.upsert(part);
    return { store, pk, plan, etag: created.etag };
  }

  it("deletes them (final parts first) and leaves the instance as it was; a commit whose parts were swept loses when it decides", async () => {
    const { store, plan, etag } = await abandoned("swept", "dead");
    const before = await store.readPartition("swept");
    expect(before.stages.length).toBe(plan.stages.length);
    expect(plan.stages.length).toBeGreaterThan(2);
    expect(await store.sweepAbandonedStages(before)).toBe(plan.stages.length);
    const after = await store.readPartition("swept");
    expect(after.stages).toEqual([]);
    expect(after.messages).toEqual([]);
    expect(after.instance?._etag).toBe(etag);
    // Had the host only been slow: its deciding batch now reads a final part that is gone and loses.
    const late = await store.batch(store.pk("swept"), plan.deciding);
    expect(late).toEqual({ ok: false, status: 404 });
    expect((await store.readPartition("swept")).instance).toMatchObject({ _etag: etag });
    expect((await store.readPartition("swept")).instance?.stage).toBeUndefined();
  });

  it("deletes nothing from a snapshot the instance has moved on from (a commit decided since)", async () => {
    const { store, plan } = await abandoned("decided", "slow");
    const stale = await store.readPartition("decided");
    const decided = await store.batch(store.pk("decided"), plan.deciding);
    expect(decided.ok).toBe(true);
    expect(await store.sweepAbandonedStages(stale)).toBe(0);
    // The decided commit still finishes, with all of its writes.
    await store.resumeStage(await store.readPartition("decided"));
    const done = await store.readPartition("decided");
    expect(done.instance?.stage).toBeUndefined();
    expect(done.messages).toHaveLength(250);
    expect(done.stages).toEqual([]);
  });
});

describe("task hub: a host reading an instance sweeps stages that never decided", () => {
  const awaitAnswer: Gen = function* (ctx) {
    return yield ctx.df.waitForExternalEvent("answer");
  };

  it("deletes a dead host's undecided parts when it next loads the instance, which then runs on", async () => {
    const containers = await unthrottledHubContainers(db);
    const spec = { ...containers, hubName: HUB, orchestrators: { awaitAnswer }, activities: {} };
    const a = createHub({ ...spec, instanceName: "A" });
    await a.start();
    await a.startNew("awaitAnswer", { instanceId: "waits" });
    await waitForStatus(a, "waits", (s) => s.runtimeStatus === "Running");
    await a.stop();

    // A host that died mid-commit left the parts of a commit it never decided.
    const store = new HubStore(containers.container, HUB);
    const now = await store.readPartition("waits");
    const instance = now.instance;
    if (!instance?._etag) throw new Error("no instance");
    const plan = planCommit({
      hub: HUB,
      instanceId: "waits",
      instance: { body: { ...instance }, ifMatch: instance._etag, before: instance },
      upserts: [],
      deletes: Array.from({ length: 150 }, (_v, i) => `gone-${i}`),
      token: "dead",
    });
    if (plan.kind !== "staged") throw new Error("expected a staged commit");
    for (const part of plan.stages) await containers.container.items.upsert(part);
    expect((await store.readPartition("waits")).stages).toHaveLength(plan.stages.length);

    const b = createHub({ ...spec, instanceName: "B" });
    hubs.push(b);
    await b.start();
    expect(await b.raiseEvent("waits", "answer", JSON.stringify(42))).toBe("ok");
    expect(await waitForStatus(b, "waits", isFinished)).toMatchObject({
      runtimeStatus: "Completed",
      output: 42,
    });
    expect((await store.readPartition("waits")).stages).toEqual([]);
    await b.stop();
  });
});
