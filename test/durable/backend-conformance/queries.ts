/** The conformance suite's queries: instances, entities, entity records, and the pending-work scan. */
import { describe, expect, it } from "vitest";
import type { Page, TaskHubBackend } from "../../../packages/devhost/src/durable/backend.js";
import { durableErrorResponse } from "../../../packages/devhost/src/durable/http-errors.js";
import type { InstanceFilter, RuntimeStatus } from "../../../packages/devhost/src/durable/types.js";
import {
  activity,
  entity,
  eventMessage,
  events,
  instance,
  iso,
  outbox,
  type Suite,
  startedInstance,
  timer,
  uniqueId,
  uniqueWindow,
} from "./fixtures.js";

/** Every page of a query, following its continuation tokens. */
async function all<T>(query: (token: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  do {
    const page = await query(token);
    items.push(...page.items);
    token = page.continuationToken;
  } while (token);
  return items;
}

const idsOf = async (b: TaskHubBackend, filter: InstanceFilter) =>
  (await all((continuationToken) => b.queryInstances({ ...filter, continuationToken })))
    .map((d) => d.instanceId)
    .sort();

/** The HTTP API's answer to a query's failure on a continuation token. */
async function answerTo(query: Promise<unknown>, token: string) {
  const e = await query.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(e).toBeDefined();
  const answer = durableErrorResponse(e, { route: "GET instances", continuationToken: token });
  return { status: answer.status, code: (JSON.parse(answer.body) as { code: string }).code };
}

export function queryTests(s: Suite): void {
  describe("queries", () => {
    it("selects instances by id prefix, status and created time (inclusive), and leaves entities out", async () => {
      const b = s.backend();
      const p = uniqueId("q");
      const t0 = uniqueWindow();
      const statuses: RuntimeStatus[] = ["Running", "Completed", "Failed", "Pending"];
      const names = ["a", "b", "c", "d"].map((n) => `${p}-${n}`);
      for (const [i, id] of names.entries()) {
        await b.createInstance(
          instance(b.hubName, id, { status: statuses[i], createdTime: iso(t0 + 1_000 * (i + 1)) }),
        );
      }
      const ent = entity(b.hubName, `@${p}@k`, iso(t0), { exists: true, state: "1" });
      await b.createInstance({ ...ent, createdTime: iso(t0 + 500) });
      const [a, bb, c, d] = names;
      expect(await idsOf(b, { instanceIdPrefix: p })).toEqual(names);
      expect(await idsOf(b, { instanceIdPrefix: p, runtimeStatus: ["Completed", "Failed"] })).toEqual([
        bb,
        c,
      ]);
      expect(await idsOf(b, { instanceIdPrefix: p, createdTimeFrom: iso(t0 + 2_000) })).toEqual([bb, c, d]);
      expect(await idsOf(b, { instanceIdPrefix: p, createdTimeTo: iso(t0 + 3_000) })).toEqual([a, bb, c]);
      const window = { createdTimeFrom: iso(t0), createdTimeTo: iso(t0 + 9_999) };
      // The entity was created in the window too: orchestration queries leave it out.
      expect(await idsOf(b, window)).toEqual(names);
      const [first] = (await b.queryInstances({ instanceIdPrefix: a })).items;
      expect(first).toMatchObject({ kind: "instance", instanceId: a, status: "Running" });
      expect(first?._etag).toBe((await b.readInstance(a))?._etag);
    });

    it("lists instances without their history tail; a snapshot reads the tail as the history", async () => {
      const b = s.backend();
      const id = uniqueId("tail");
      const tail = events(3);
      const bytes = tail.reduce((n, e) => n + JSON.stringify(e).length, 0);
      await b.createInstance({ ...instance(b.hubName, id), historyTail: tail, historyTailBytes: bytes });
      expect((await b.readInstanceState(id)).history).toEqual(tail);
      const [listed] = (await b.queryInstances({ instanceIdPrefix: id })).items;
      expect(listed).toMatchObject({
        instanceId: id,
        executionId: "exec1",
        historyChunks: 0,
        status: "Running",
      });
      expect(listed?._etag).toBe((await b.readInstance(id))?._etag);
      expect(listed && "historyTail" in listed).toBe(false);
      expect(listed && "historyTailBytes" in listed).toBe(false);
    });

    it("pages instances: a page holds at most `top`; deletions between pages skip and repeat nothing else", async () => {
      const b = s.backend();
      const p = uniqueId("page");
      const ids = Array.from({ length: 7 }, (_v, i) => `${p}-${i}`);
      for (const id of ids) await b.createInstance(instance(b.hubName, id, { status: "Completed" }));
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const page = await b.queryInstances({ instanceIdPrefix: p, top: 2, continuationToken: token });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((d) => d.instanceId));
        token = page.continuationToken;
        if (pages++ === 0) {
          expect(token).toBeDefined();
          // One returned already and one not read yet go between the pages.
          for (const gone of [seen[0], ids[4]]) {
            expect(await b.deleteInstance(await b.readInstanceState(gone))).toBe("purged");
          }
        }
      } while (token);
      // Every instance that stayed is seen once; the one deleted before its page may still be seen (a Cosmos DB
      // query's pages can come from what it read when the query began), never twice.
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.filter((id) => id !== ids[4]).sort()).toEqual(ids.filter((id) => id !== ids[4]));
    });

    it("refuses a continuation token it did not give: the HTTP API answers 400 InvalidContinuationToken", async () => {
      const b = s.backend();
      const token = "not-a-continuation-token";
      const bad = { status: 400, code: "InvalidContinuationToken" };
      expect(await answerTo(b.queryInstances({ continuationToken: token }), token)).toEqual(bad);
      expect(await answerTo(b.queryEntities({ continuationToken: token }), token)).toEqual(bad);
    });

    it("lists the entities of a name that have a state, by last operation time, with their state when asked", async () => {
      const b = s.backend();
      const name = uniqueId("ent").toLowerCase();
      const t0 = uniqueWindow();
      const hub = b.hubName;
      await b.createInstance(entity(hub, `@${name}@a`, iso(t0 + 1_000), { exists: true, state: '{"v":1}' }));
      await b.createInstance(entity(hub, `@${name}@b`, iso(t0 + 2_000), { exists: true, state: "2" }));
      await b.createInstance(entity(hub, `@${name}@deleted`, iso(t0 + 1_000), { exists: false }));
      await b.createInstance(entity(hub, `@${name}@never`, iso(t0 + 1_000), undefined));
      await b.createInstance(entity(hub, `@${name}x@a`, iso(t0 + 1_000), { exists: true, state: "3" }));
      const list = (f: Parameters<TaskHubBackend["queryEntities"]>[0]) =>
        all((continuationToken) => b.queryEntities({ ...f, continuationToken }));
      const byId = <T extends { instanceId: string }>(rows: T[]) =>
        rows.sort((x, y) => x.instanceId.localeCompare(y.instanceId));
      const rows = byId(await list({ name: name.toUpperCase() }));
      expect(rows.map((r) => [r.instanceId, r.lastUpdatedTime])).toEqual([
        [`@${name}@a`, iso(t0 + 1_000)],
        [`@${name}@b`, iso(t0 + 2_000)],
      ]);
      expect(rows.map((r) => r.engine?.entity?.state)).toEqual([undefined, undefined]);
      const withState = byId(await list({ name, fetchState: true }));
      expect(withState.map((r) => r.engine?.entity?.state)).toEqual(['{"v":1}', "2"]);
      const ids = async (f: Parameters<TaskHubBackend["queryEntities"]>[0]) =>
        (await list({ name, ...f })).map((r) => r.instanceId);
      expect(await ids({ lastOperationTimeFrom: iso(t0 + 2_000) })).toEqual([`@${name}@b`]);
      expect(await ids({ lastOperationTimeTo: iso(t0 + 1_000) })).toEqual([`@${name}@a`]);
      const firstPage = await b.queryEntities({ name, top: 1 });
      expect(firstPage.items.length).toBeLessThanOrEqual(1);
      expect(firstPage.continuationToken).toBeDefined();
    });

    it("walks every entity, state or not, with its bookkeeping, and no orchestration", async () => {
      const b = s.backend();
      const name = uniqueId("rec").toLowerCase();
      const hub = b.hubName;
      await b.createInstance(
        entity(hub, `@${name}@live`, iso(0), { exists: true, state: "1", lockedBy: "o" }),
      );
      await b.createInstance(entity(hub, `@${name}@empty`, iso(0), { exists: false }));
      await b.createInstance(instance(hub, `${name}-orchestration`));
      const records = await all((token) => b.queryEntityRecords(token, 50));
      expect(records.every((r) => r.instanceId.startsWith("@"))).toBe(true);
      const ours = records.filter((r) => r.instanceId.startsWith(`@${name}@`));
      expect(ours.sort((x, y) => x.instanceId.localeCompare(y.instanceId))).toEqual([
        { instanceId: `@${name}@empty`, engine: { entity: { exists: false } } },
        { instanceId: `@${name}@live`, engine: { entity: { exists: true, state: "1", lockedBy: "o" } } },
      ]);
    });
  });

  describe("pending-work scan", () => {
    it("finds timers due by the horizon, unlocked or expired activities, outbox, stages, expired claims", async () => {
      const b = s.backend();
      const hub = b.hubName;
      const now = Date.UTC(2030, 0, 1);
      const horizon = now + 5_000;
      const id = uniqueId("scan");
      const [staged, expired, live, fresh] = ["staged", "expired", "live", "fresh"].map((n) => `${id}-${n}`);
      const other = eventMessage(`${id}-other`, `sub-${id}`);
      await b.completeOrchestrationWorkItem({
        hub,
        instanceId: id,
        instance: { body: instance(hub, id) },
        upserts: [
          timer(hub, id, 1, horizon),
          timer(hub, id, 2, horizon + 1),
          activity(hub, id, 1),
          activity(hub, id, 2, now - 1),
          activity(hub, id, 3, now + 1),
          outbox(hub, id, other),
        ],
        deletes: [],
        token: uniqueId("t"),
      });
      await b.createInstance({ ...instance(hub, staged), stage: { token: "x", parts: 2, finalPart: 1 } });
      await b.createInstance({ ...instance(hub, expired), claim: { owner: "dead", until: now - 1 } });
      await b.createInstance({ ...instance(hub, live), claim: { owner: "alive", until: now } });
      // A start written just now is not left behind: its own host applies it.
      await b.createInstance(startedInstance(hub, fresh));
      const found = await b.scanPending(now, horizon);
      const mine = (docs: { pk: string; id: string }[]) =>
        docs
          .filter((d) => d.pk.startsWith(`${hub}|${id}`))
          .map((d) => `${d.pk.slice(hub.length + 1)} ${d.id}`);
      expect(mine(found.timers)).toEqual([`${id} timer-exec1-1`]);
      expect(mine(found.activities).sort()).toEqual([`${id} activity-exec1-1`, `${id} activity-exec1-2`]);
      expect(mine(found.outbox)).toEqual([`${id} outbox-${other.key}`]);
      expect(mine(found.staged)).toEqual([`${staged} instance`]);
      expect(mine(found.claims)).toEqual([`${expired} instance`]);
      expect(found.claims.find((c) => c.instanceId === expired)?.claim).toEqual({
        owner: "dead",
        until: now - 1,
      });
    });
  });
}
