/** The conformance suite's instance verbs: create, replace, read, read the state, delete. */
import { describe, expect, it } from "vitest";
import type { WorkItemCommit } from "../../../packages/devhost/src/durable/backend.js";
import {
  chunks,
  events,
  instance,
  message,
  type Suite,
  startedInstance,
  timer,
  uniqueId,
} from "./fixtures.js";

const commitOf = (c: Omit<WorkItemCommit, "token" | "deletes"> & { deletes?: string[] }): WorkItemCommit => ({
  deletes: [],
  token: uniqueId("t"),
  ...c,
});

export function instanceTests(s: Suite): void {
  describe("instances", () => {
    it("creates an instance once: a second create answers the stored document, with the etag the first gave", async () => {
      const b = s.backend();
      const id = uniqueId("create");
      const first = await b.createInstance(startedInstance(b.hubName, id));
      expect(first.created).toBe(true);
      const etag = first.created ? first.etag : "";
      const again = await b.createInstance(instance(b.hubName, id, { name: "other" }));
      expect(again.created).toBe(false);
      const existing = again.created ? undefined : again.existing;
      expect(existing).toMatchObject({
        instanceId: id,
        name: "orchestrator",
        status: "Pending",
        _etag: etag,
      });
      expect(existing?.start?.key).toBe("start-exec1");
      expect((await b.readInstance(id))?._etag).toBe(etag);
    });

    it("replaces an instance If-Match: the current etag wins once, a stale one loses", async () => {
      const b = s.backend();
      const id = uniqueId("replace");
      const created = await b.createInstance(instance(b.hubName, id, { status: "Completed" }));
      const etag = created.created ? created.etag : "";
      const restarts = await Promise.all([
        b.replaceInstance(instance(b.hubName, id, { status: "Pending", name: "a" }), etag),
        b.replaceInstance(instance(b.hubName, id, { status: "Pending", name: "b" }), etag),
      ]);
      const won = restarts.filter((r) => r.replaced);
      expect(won).toHaveLength(1);
      const winner = restarts[0]?.replaced ? "a" : "b";
      const stored = await b.readInstance(id);
      expect(stored).toMatchObject({ name: winner, status: "Pending" });
      expect(stored?._etag).toBe(won[0]?.replaced ? won[0].etag : "none");
      expect(stored?._etag).not.toBe(etag);
      expect(await b.replaceInstance(instance(b.hubName, id), etag)).toEqual({ replaced: false });
      expect(await b.replaceInstance(instance(b.hubName, uniqueId("absent")), etag)).toEqual({
        replaced: false,
      });
    });

    it("reads nothing of an instance that does not exist", async () => {
      const b = s.backend();
      const id = uniqueId("absent");
      expect(await b.readInstance(id)).toBeUndefined();
      const snap = await b.readInstanceState(id);
      expect(snap.instance).toBeUndefined();
      expect([snap.history, snap.messages, snap.timers, snap.outbox, snap.activities]).toEqual([
        [],
        [],
        [],
        [],
        [],
      ]);
      expect(snap.ids.size).toBe(0);
    });

    it("reads an instance's state: its document, the current execution's history in order, its pending work", async () => {
      const b = s.backend();
      const id = uniqueId("state");
      const hub = b.hubName;
      const history = events(3);
      const body = instance(hub, id, { executionId: "exec2" }, 2);
      const outcome = await b.completeOrchestrationWorkItem(
        commitOf({
          hub,
          instanceId: id,
          instance: { body },
          upserts: [
            ...chunks(hub, id, "exec2", 1, history.slice(2)),
            ...chunks(hub, id, "exec2", 0, history.slice(0, 2)),
            // An older execution's chunk and one past historyChunks: not the current history.
            ...chunks(hub, id, "exec1", 0, events(1, 100)),
            ...chunks(hub, id, "exec2", 2, events(1, 200)),
            message(hub, id, "late", 20),
            message(hub, id, "early", 10),
            timer(hub, id, 1, Date.UTC(2026, 0, 2)),
          ],
        }),
      );
      expect(outcome).toMatchObject({ committed: true });
      const snap = await b.readInstanceState(id);
      expect(snap.instance).toMatchObject({ instanceId: id, executionId: "exec2", historyChunks: 2 });
      expect(snap.instance?._etag).toBe(outcome.committed ? outcome.etag : "none");
      expect(snap.history.map((e) => e.EventId)).toEqual([0, 1, 2]);
      expect(snap.messages.map((m) => m.message.key)).toEqual(["early", "late"]);
      expect(snap.timers.map((t) => t.timerId)).toEqual([1]);
      expect(snap.staleHistory).toEqual(["history-exec1-000000"]);
      expect([snap.ids.has("instance"), snap.ids.has("history-exec2-000002")]).toEqual([true, true]);
    });

    it("hands out copies and keeps copies: mutating what was given or returned changes nothing stored", async () => {
      const b = s.backend();
      const id = uniqueId("copies");
      const doc = instance(b.hubName, id, { engine: { kept: { n: 1 } } });
      await b.createInstance(doc);
      (doc.engine.kept as { n: number }).n = 2;
      const read = await b.readInstance(id);
      expect(read?.engine).toEqual({ kept: { n: 1 } });
      (read?.engine.kept as { n: number }).n = 3;
      const snap = await b.readInstanceState(id);
      expect(snap.instance?.engine).toEqual({ kept: { n: 1 } });
      (snap.instance?.engine.kept as { n: number }).n = 4;
      expect((await b.readInstance(id))?.engine).toEqual({ kept: { n: 1 } });
    });

    it("deletes an instance and everything of it: purged, then gone", async () => {
      const b = s.backend();
      const id = uniqueId("purge");
      const hub = b.hubName;
      await b.completeOrchestrationWorkItem(
        commitOf({
          hub,
          instanceId: id,
          instance: { body: instance(hub, id, { status: "Completed" }, 1) },
          upserts: [
            ...chunks(hub, id, "exec1", 0, events(2)),
            message(hub, id, "m", 1),
            timer(hub, id, 1, 1),
          ],
        }),
      );
      const snap = await b.readInstanceState(id);
      expect(snap.ids.size).toBe(4);
      expect(await b.deleteInstance(snap)).toBe("purged");
      const after = await b.readInstanceState(id);
      expect(after.instance).toBeUndefined();
      expect(after.ids.size).toBe(0);
      expect(await b.deleteInstance(snap)).toBe("gone");
      expect(await b.deleteInstance(await b.readInstanceState(uniqueId("never")))).toBe("gone");
    });

    it("does not delete an instance that changed since its snapshot", async () => {
      const b = s.backend();
      const id = uniqueId("changed");
      const created = await b.createInstance(instance(b.hubName, id, { status: "Completed" }));
      const snap = await b.readInstanceState(id);
      const replaced = await b.replaceInstance(
        startedInstance(b.hubName, id),
        created.created ? created.etag : "",
      );
      expect(replaced.replaced).toBe(true);
      expect(await b.deleteInstance(snap)).toBe("changed");
      const still = await b.readInstance(id);
      expect(still).toMatchObject({ status: "Pending", _etag: replaced.replaced ? replaced.etag : "none" });
    });
  });
}
