/**
 * The conformance suite's work item verbs: commits (races, size), messages, outbox delivery, results handed over,
 * activity claims, garbage deleted.
 */
import { describe, expect, it } from "vitest";
import type { TaskHubBackend, WorkItemCommit } from "../../../packages/devhost/src/durable/backend.js";
import type { InstanceDoc } from "../../../packages/devhost/src/durable/documents.js";
import {
  activity,
  chunks,
  eventMessage,
  events,
  instance,
  message,
  outbox,
  type Suite,
  timer,
  uniqueId,
} from "./fixtures.js";

function commitOf(
  b: TaskHubBackend,
  instanceId: string,
  c: Partial<Omit<WorkItemCommit, "hub" | "instanceId">>,
): WorkItemCommit {
  return { hub: b.hubName, instanceId, upserts: [], deletes: [], token: uniqueId("t"), ...c };
}

/** Creates an instance (and `upserts` with it) by a commit; its etag. */
async function created(b: TaskHubBackend, body: InstanceDoc, upserts: WorkItemCommit["upserts"] = []) {
  const outcome = await b.completeOrchestrationWorkItem(
    commitOf(b, body.instanceId, { instance: { body }, upserts }),
  );
  if (!outcome.committed || outcome.etag === undefined)
    throw new Error(`not created: ${JSON.stringify(outcome)}`);
  return outcome.etag;
}

const keysOf = async (b: TaskHubBackend, id: string) =>
  (await b.readInstanceState(id)).messages.map((m) => m.message.key).sort();

export function workItemTests(s: Suite): void {
  describe("orchestration work items", () => {
    it("decides a commit race by the etag: of two commits on one etag one wins, the other is told 412", async () => {
      const b = s.backend();
      const id = uniqueId("race");
      const etag = await created(b, instance(b.hubName, id));
      const attempt = (tag: string) =>
        commitOf(b, id, {
          instance: { body: instance(b.hubName, id, { customStatus: JSON.stringify(tag) }), ifMatch: etag },
          upserts: [message(b.hubName, id, `from-${tag}`, 1)],
        });
      const outcomes = await Promise.all([
        b.completeOrchestrationWorkItem(attempt("a")),
        b.completeOrchestrationWorkItem(attempt("b")),
      ]);
      expect(outcomes.filter((o) => o.committed)).toHaveLength(1);
      expect(outcomes.filter((o) => !o.committed)).toEqual([{ committed: false, status: 412 }]);
      const winner = outcomes[0]?.committed ? "a" : "b";
      const snap = await b.readInstanceState(id);
      expect(snap.instance?.customStatus).toBe(JSON.stringify(winner));
      expect(snap.messages.map((m) => m.message.key)).toEqual([`from-${winner}`]);
    });

    it("loses a creating commit to an existing instance (409) and one If-Match to a missing instance (404)", async () => {
      const b = s.backend();
      const id = uniqueId("exists");
      const etag = await created(b, instance(b.hubName, id, { customStatus: '"first"' }));
      const creating = commitOf(b, id, {
        instance: { body: instance(b.hubName, id, { customStatus: '"second"' }) },
        upserts: [message(b.hubName, id, "second", 1)],
      });
      expect(await b.completeOrchestrationWorkItem(creating)).toEqual({ committed: false, status: 409 });
      const snap = await b.readInstanceState(id);
      expect(snap.instance).toMatchObject({ customStatus: '"first"', _etag: etag });
      expect(snap.messages).toEqual([]);

      const absent = uniqueId("absent");
      const replacing = commitOf(b, absent, {
        instance: { body: instance(b.hubName, absent), ifMatch: etag },
        upserts: [message(b.hubName, absent, "m", 1)],
      });
      expect(await b.completeOrchestrationWorkItem(replacing)).toEqual({ committed: false, status: 404 });
      expect((await b.readInstanceState(absent)).ids.size).toBe(0);
    });

    it("commits 150 upserts and 60 deletes whole: after it returns every write shows, and its etag is the instance's", async () => {
      const b = s.backend();
      const hub = b.hubName;
      const id = uniqueId("large");
      const old = Array.from({ length: 60 }, (_v, i) => message(hub, id, `old-${i}`, i));
      await created(b, instance(hub, id), old);
      const etag = (await b.readInstance(id))?._etag;
      const fresh = Array.from({ length: 149 }, (_v, i) => message(hub, id, `new-${i}`, 100 + i));
      const outcome = await b.completeOrchestrationWorkItem(
        commitOf(b, id, {
          instance: {
            body: instance(hub, id, { customStatus: '"after"' }, 1),
            ifMatch: etag ?? "",
            before: (await b.readInstance(id)) as InstanceDoc,
          },
          upserts: [...chunks(hub, id, "exec1", 0, events(3)), ...fresh],
          deletes: old.map((m) => m.id),
        }),
      );
      expect(outcome.committed).toBe(true);
      const snap = await b.readInstanceState(id);
      expect(snap.instance).toMatchObject({ customStatus: '"after"', historyChunks: 1 });
      expect(snap.instance?._etag).toBe(outcome.committed ? outcome.etag : "none");
      expect(snap.history.map((e) => e.EventId)).toEqual([0, 1, 2]);
      expect(snap.messages.map((m) => m.message.key)).toEqual(fresh.map((m) => m.message.key));
      expect(snap.stages).toEqual([]);
      // The etag it gave decides the next commit.
      const next = await b.completeOrchestrationWorkItem(
        commitOf(b, id, {
          instance: { body: instance(hub, id, {}, 1), ifMatch: snap.instance?._etag ?? "" },
        }),
      );
      expect(next.committed).toBe(true);
    });

    it("applies a commit without an instance document unguarded, and a missing delete is fine", async () => {
      const b = s.backend();
      const id = uniqueId("unguarded");
      const t = timer(b.hubName, id, 1, 1);
      await b.completeOrchestrationWorkItem(commitOf(b, id, { upserts: [t] }));
      const outcome = await b.completeOrchestrationWorkItem(
        commitOf(b, id, { upserts: [message(b.hubName, id, "m", 1)], deletes: [t.id, "timer-missing"] }),
      );
      expect(outcome.committed).toBe(true);
      const snap = await b.readInstanceState(id);
      expect(snap.instance).toBeUndefined();
      expect([...snap.ids]).toEqual([message(b.hubName, id, "m", 1).id]);
    });

    it("gets a work item: the instance's state as read", async () => {
      const b = s.backend();
      const id = uniqueId("get");
      await created(b, instance(b.hubName, id, {}, 1), [
        ...chunks(b.hubName, id, "exec1", 0, events(2)),
        message(b.hubName, id, "m", 1),
      ]);
      const { snapshot, swept } = await b.getOrchestrationWorkItem(id);
      const read = await b.readInstanceState(id);
      expect(swept).toBe(0);
      expect(snapshot.instance?._etag).toBe(read.instance?._etag);
      expect(snapshot.history).toEqual(read.history);
      expect(snapshot.messages.map((m) => m.id)).toEqual(["msg-m"]);
      expect([...snapshot.ids].sort()).toEqual([...read.ids].sort());
    });

    it("hands results over as messages: each once with its source's deletion, a gone source skipped", async () => {
      const b = s.backend();
      const hub = b.hubName;
      const id = uniqueId("abandon");
      const t1 = timer(hub, id, 1, 1);
      const t2 = timer(hub, id, 2, 1);
      const t3 = timer(hub, id, 3, 1);
      await created(b, instance(hub, id), [t1, t2, t3]);
      await b.addMessage(message(hub, id, "timer-2", 1));
      const fresh = { message: message(hub, id, "timer-1", 2), sourceId: t1.id };
      const handedAlready = { message: message(hub, id, "timer-2", 3), sourceId: t2.id };
      const recorded = { message: message(hub, id, "timer-9", 4), sourceId: "timer-exec1-9" };
      const noSource = { message: message(hub, id, "task-1", 5) };
      const stored = await b.abandonOrchestrationWorkItem(id, [fresh, handedAlready, recorded, noSource]);
      expect(stored.map((r) => r.message.id).sort()).toEqual(["msg-task-1", "msg-timer-1"]);
      const snap = await b.readInstanceState(id);
      expect(snap.messages.map((m) => [m.message.key, m.seq])).toEqual([
        ["timer-2", 1],
        ["timer-1", 2],
        ["task-1", 5],
      ]);
      expect(snap.timers.map((t) => t.id)).toEqual([t3.id]);
      // Handing the same over again stores nothing more.
      expect(await b.abandonOrchestrationWorkItem(id, [fresh, handedAlready])).toEqual([]);
    });

    it("deletes documents nothing reads any more; missing ones are fine", async () => {
      const b = s.backend();
      const id = uniqueId("garbage");
      await created(
        b,
        instance(b.hubName, id, { executionId: "exec2" }),
        chunks(b.hubName, id, "exec1", 0, events(2)),
      );
      const stale = (await b.readInstanceState(id)).staleHistory;
      expect(stale).toEqual(["history-exec1-000000"]);
      await b.deleteDocuments(id, [...stale, "history-exec1-000001"]);
      const snap = await b.readInstanceState(id);
      expect([...snap.ids]).toEqual(["instance"]);
    });
  });

  describe("messages", () => {
    it("adds a message once: a second of its key is 'exists' and leaves the first", async () => {
      const b = s.backend();
      const id = uniqueId("msg");
      expect(await b.addMessage(message(b.hubName, id, "event-1", 1, "first"))).toBe("added");
      expect(await b.addMessage(message(b.hubName, id, "event-1", 2, "second"))).toBe("exists");
      const [m] = (await b.readInstanceState(id)).messages;
      expect(m).toMatchObject({ seq: 1, message: { event: { Input: '"first"' } } });
    });

    it("delivers an outbox document: its message stored in the target once, the outbox deleted", async () => {
      const b = s.backend();
      const hub = b.hubName;
      const [from, to] = [uniqueId("parent"), uniqueId("child")];
      const sent = eventMessage(to, `sub-${from}`);
      const box = outbox(hub, from, sent);
      await created(b, instance(hub, from), [box]);
      expect((await b.readInstanceState(from)).outbox.map((o) => o.id)).toEqual([box.id]);
      const doc = message(hub, to, sent.key, 7);
      await b.deliverOutbox(box, doc);
      await b.deliverOutbox(box, { ...doc, seq: 8 });
      expect((await b.readInstanceState(from)).outbox).toEqual([]);
      expect((await b.readInstanceState(to)).messages.map((m) => [m.message.key, m.seq])).toEqual([
        [sent.key, 7],
      ]);
      // An outbox whose message was delivered already (a crash between the two writes) is only deleted.
      const again = outbox(hub, from, sent);
      await b.completeOrchestrationWorkItem(commitOf(b, from, { upserts: [again] }));
      await b.deliverOutbox(again, { ...doc, seq: 9 });
      expect((await b.readInstanceState(from)).outbox).toEqual([]);
      expect(await keysOf(b, to)).toEqual([sent.key]);
      expect((await b.readInstanceState(to)).messages[0]?.seq).toBe(7);
    });
  });

  describe("activity work items", () => {
    it("claims a stored activity If-Match: one of two claims wins, a stale or deleted one gets nothing", async () => {
      const b = s.backend();
      const id = uniqueId("claim");
      await created(b, instance(b.hubName, id), [activity(b.hubName, id, 1), activity(b.hubName, id, 2)]);
      const [a1, a2] = (await b.readInstanceState(id)).activities.sort((x, y) => x.id.localeCompare(y.id));
      if (!a1 || !a2) throw new Error("activities not stored");
      const claims = await Promise.all([
        b.claimActivityWorkItem(a1, "host-a", 1_000),
        b.claimActivityWorkItem(a1, "host-b", 2_000),
      ]);
      const won = claims.filter((c) => c !== undefined);
      expect(won).toHaveLength(1);
      const owner = claims[0] ? "host-a" : "host-b";
      expect(won[0]).toMatchObject({ id: a1.id, lockedBy: owner, item: a1.item });
      const stored = (await b.readInstanceState(id)).activities.find((a) => a.id === a1.id);
      expect(stored).toMatchObject({ lockedBy: owner, lockedUntil: owner === "host-a" ? 1_000 : 2_000 });
      expect(stored?._etag).toBe(won[0]?._etag);
      // The claimed document renews the claim; the document as it was before does not.
      expect(await b.claimActivityWorkItem(won[0] as typeof a1, owner, 3_000)).toMatchObject({
        lockedUntil: 3_000,
      });
      expect(await b.claimActivityWorkItem(a1, "host-c", 4_000)).toBeUndefined();
      await b.deleteDocuments(id, [a2.id]);
      expect(await b.claimActivityWorkItem(a2, "host-c", 4_000)).toBeUndefined();
    });
  });
}
