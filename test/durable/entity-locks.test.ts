/**
 * Critical sections on the engine alone (no database): real durable-functions orchestrators (`context.df.lock`,
 * `isLocked`, `callEntity`, the lock's `release`) and a real Entity handler, their messages carried by an in-memory
 * router that delivers them in an order a seeded generator picks — every interleaving it explores must keep each
 * section exclusive (read-modify-write across two calls loses no update), never deadlock (sections over
 * overlapping sets in different orders), and release the locks however the orchestration ends.
 */
import { createRequire } from "node:module";
import { InvocationContext } from "@azure/functions";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../bench/lib/prng.js";
import { instanceDocOf, snapshotOf } from "../../packages/devhost/src/durable/documents.js";
import { applyMessages } from "../../packages/devhost/src/durable/engine.js";
import { entityLockOf, withEntities } from "../../packages/devhost/src/durable/entity-engine.js";
import { ORPHANED_LOCK_RELEASE_ID } from "../../packages/devhost/src/durable/entity-locks.js";
import { poisonEnding } from "../../packages/devhost/src/durable/poison.js";
import { historyEvent } from "../../packages/devhost/src/durable/protocol.js";
import {
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type OrchestratorInvoker,
} from "../../packages/devhost/src/durable/types.js";
import { type Gen, lockOrchestrators, registerInvoker } from "./lock-fixtures.js";

const require = createRequire(import.meta.url);
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (f: Gen) => (trigger: unknown, ctx: InvocationContext) => Promise<unknown>;
};

/** In-memory task hub: instances, their pending messages, and a delivery order picked by `rand`. */
class Router {
  readonly states = new Map<string, OrchestrationState | undefined>();
  readonly pending = new Map<string, InstanceMessage[]>();
  readonly ran: string[] = [];
  private now = Date.parse("2026-01-01T00:00:00Z");
  private readonly apply;

  /** Copies of delivered messages, sent again later (at a random step, or once the router is idle). */
  private readonly again: InstanceMessage[] = [];
  /** Each lock an entity took (`entity lockId`), in order. */
  readonly acquired: string[] = [];

  constructor(
    private readonly rand: () => number,
    /** Which outbound messages are delivered a second time (an outbox delivers at least once). */
    private readonly twice: (m: InstanceMessage) => boolean = () => false,
  ) {
    this.apply = withEntities(applyMessages, registerInvoker(this.ran));
  }

  private readonly invoke: OrchestratorInvoker = async (name, input) => {
    const h = createOrchestrator(lockOrchestrators[name] as Gen);
    try {
      return {
        returned: JSON.parse(JSON.stringify(await h(input, new InvocationContext({ functionName: name })))),
      };
    } catch (e) {
      return { thrown: e };
    }
  };

  send(m: InstanceMessage): void {
    const list = this.pending.get(m.instanceId) ?? [];
    list.push(m);
    this.pending.set(m.instanceId, list);
  }

  start(instanceId: string, name: string, input: unknown): void {
    const at = new Date(this.now).toISOString();
    this.send({
      key: `start-${instanceId}`,
      instanceId,
      event: historyEvent(HistoryEventType.ExecutionStarted, at),
      start: { name, input: JSON.stringify(input), executionId: `${instanceId}-x1` },
    });
  }

  raise(instanceId: string, name: string, value: unknown): void {
    const at = new Date(this.now).toISOString();
    this.send({
      key: `raise-${instanceId}-${name}`,
      instanceId,
      event: historyEvent(HistoryEventType.EventRaised, at, { Name: name, Input: JSON.stringify(value) }),
    });
  }

  terminate(instanceId: string): void {
    const at = new Date(this.now).toISOString();
    this.send({
      key: `terminate-${instanceId}`,
      instanceId,
      event: historyEvent(HistoryEventType.ExecutionTerminated, at, { Input: JSON.stringify("stop") }),
    });
  }

  /** Runs a work item of one instance (chosen at random among those with pending messages); false when idle. */
  async step(): Promise<boolean> {
    const ready = [...this.pending.entries()].filter(([, l]) => l.length > 0).map(([id]) => id);
    // Instances whose pending messages all wait make no progress: try the others in a random order.
    const order = ready.sort(() => this.rand() - 0.5);
    for (const id of order) {
      const messages = this.pending.get(id) ?? [];
      this.now += 1000;
      const r = await this.apply(this.states.get(id), messages, new Date(this.now), this.invoke, {
        maxPayloadBytes: 1_000_000,
      });
      if (r.consumed.length === 0) continue;
      const lockBefore = entityLockOf(this.states.get(id));
      const lockAfter = entityLockOf(r.state);
      if (lockAfter && lockAfter.id !== lockBefore?.id) this.acquired.push(`${id} ${lockAfter.id}`);
      this.states.set(id, r.state);
      this.pending.set(
        id,
        messages.filter((m) => !r.consumed.includes(m.key)),
      );
      // Each outbound message is delivered at once, or later in a random order (a message queue's freedom).
      for (const w of r.work) {
        if (w.kind !== "message") continue;
        this.send(w.message);
        if (this.twice(w.message) && this.rand() < 0.5) this.again.push(w.message);
      }
      return true;
    }
    return false;
  }

  async runToIdle(maxSteps = 2000): Promise<void> {
    for (let n = 0; n < maxSteps; n++) {
      if (this.again.length > 0 && this.rand() < 0.2) this.send(this.again.shift() as InstanceMessage);
      if (await this.step()) continue;
      const copy = this.again.shift();
      if (!copy) return;
      this.send(copy);
    }
    throw new Error("no end after maxSteps work items");
  }

  status(id: string): string | undefined {
    return this.states.get(id)?.status;
  }

  output(id: string): unknown {
    const o = this.states.get(id)?.output;
    return o ? JSON.parse(o) : undefined;
  }

  entityValue(key: string): unknown {
    const s = this.states.get(`@register@${key}`)?.engine?.entity as { state?: string } | undefined;
    return s?.state ? JSON.parse(s.state) : undefined;
  }

  lockOf(key: string) {
    return entityLockOf(this.states.get(`@register@${key}`));
  }
}

describe("critical sections on the engine", () => {
  it("sections over overlapping sets in any order: exclusive, no deadlock, isLocked as held (40 interleavings)", async () => {
    // A cycle of sets given in different orders: without one global order, some interleaving deadlocks.
    const sets = [
      ["a", "b"],
      ["b", "c"],
      ["c", "a"],
      ["b", "a"],
    ];
    for (let seed = 1; seed <= 40; seed++) {
      const r = new Router(seededRandom(seed));
      sets.forEach((keys, i) => {
        r.start(`o${i}`, "incrementAll", keys);
      });
      await r.runToIdle();
      const why = `seed ${seed}`;
      for (let i = 0; i < sets.length; i++) expect(r.status(`o${i}`), why).toBe("Completed");
      // Each entity was incremented once per section over it: no read-modify-write was interleaved.
      expect([r.entityValue("a"), r.entityValue("b"), r.entityValue("c")], why).toEqual([3, 3, 2]);
      for (const k of ["a", "b", "c"]) expect(r.lockOf(k), why).toBeUndefined();
      expect(r.output("o3"), why).toMatchObject({ before: false, inside: ["a", "b"], after: false });
      expect(r.output("o1"), why).toMatchObject({ inside: ["b", "c"] });
    }
  });

  it("lock requests, grants and releases delivered twice (after they were consumed): still exclusive, no deadlock", async () => {
    const sets = [
      ["a", "b"],
      ["b", "c"],
      ["c", "a"],
      ["a", "b", "c"],
    ];
    const lockMessage = (m: InstanceMessage) => /^entity-(lock|release)/.test(m.key);
    for (let seed = 1; seed <= 40; seed++) {
      const r = new Router(seededRandom(seed), lockMessage);
      sets.forEach((keys, i) => {
        r.start(`o${i}`, "incrementAll", keys);
      });
      await r.runToIdle();
      const why = `seed ${seed}`;
      for (let i = 0; i < sets.length; i++) expect(r.status(`o${i}`), why).toBe("Completed");
      expect([r.entityValue("a"), r.entityValue("b"), r.entityValue("c")], why).toEqual([3, 3, 3]);
      for (const k of ["a", "b", "c"]) expect(r.lockOf(k), why).toBeUndefined();
      // No entity took a lock request twice (a second time it would lock for a section that is over).
      expect(new Set(r.acquired).size, why).toBe(r.acquired.length);
    }
  });

  it("while locked only the holder's operations run; others (a client's signal) wait and run after the release", async () => {
    const r = new Router(seededRandom(7));
    r.start("holder", "holdAndEnd", "wait");
    await r.runToIdle();
    expect(r.lockOf("h")).toMatchObject({ by: "holder" });
    expect(r.entityValue("h")).toBe(1);
    // A client's signal (no parent) reaches the locked entity: it waits, pending.
    r.send({
      key: "client-signal",
      instanceId: "@register@h",
      event: historyEvent(HistoryEventType.EventRaised, "2026-01-01T00:00:00Z", {
        Name: "op",
        Input: JSON.stringify({ id: "s1", op: "add", signal: true, input: "100" }),
      }),
    });
    await r.runToIdle();
    expect(r.entityValue("h")).toBe(1);
    expect(r.pending.get("@register@h")?.map((m) => m.key)).toEqual(["client-signal"]);
    r.raise("holder", "go", null);
    await r.runToIdle();
    expect(r.status("holder")).toBe("Completed");
    expect(r.lockOf("h")).toBeUndefined();
    expect(r.entityValue("h")).toBe(101);
    expect(r.ran.filter((x) => x.startsWith("h:"))).toEqual(["h:add", "h:add"]);
  });

  it.each([
    ["completion without release", "done", "Completed"],
    ["failure inside the section", "throw", "Failed"],
  ])("releases on %s", async (_what, how, status) => {
    const r = new Router(seededRandom(3));
    r.start("o", "holdAndEnd", how);
    await r.runToIdle();
    expect(r.status("o")).toBe(status);
    expect(r.entityValue("h")).toBe(1);
    expect(r.lockOf("h")).toBeUndefined();
    // The next section over the same entity gets it.
    r.start("next", "incrementAll", ["h"]);
    await r.runToIdle();
    expect(r.status("next")).toBe("Completed");
    expect(r.entityValue("h")).toBe(2);
  });

  it("releases on termination, also when the grant comes after the end", async () => {
    const r = new Router(seededRandom(5));
    r.start("t1", "holdAndEnd", "wait");
    await r.runToIdle();
    expect(r.lockOf("h")).toMatchObject({ by: "t1" });
    // t2 asks for the same lock and waits in the entity's queue; it is terminated before its turn comes.
    r.start("t2", "holdAndEnd", "wait");
    await r.runToIdle();
    expect(r.status("t2")).toBe("Running");
    r.terminate("t2");
    r.terminate("t1");
    await r.runToIdle();
    expect(r.status("t1")).toBe("Terminated");
    expect(r.status("t2")).toBe("Terminated");
    // t1's end released h; t2's request then took it and was granted to a terminated instance, which released it.
    expect(r.lockOf("h")).toBeUndefined();
    r.start("t3", "incrementAll", ["h"]);
    await r.runToIdle();
    expect(r.status("t3")).toBe("Completed");
    expect(r.entityValue("h")).toBe(2);
  });

  it("releases on continue-as-new inside the section", async () => {
    const r = new Router(seededRandom(11));
    r.start("c", "continueInSection", "first");
    await r.runToIdle();
    expect(r.status("c")).toBe("Completed");
    expect(r.output("c")).toBe("second execution");
    expect(r.entityValue("h")).toBe(1);
    expect(r.lockOf("h")).toBeUndefined();
  });

  it("an instance given up as poison inside its section releases it", async () => {
    const r = new Router(seededRandom(13));
    r.start("p", "holdAndEnd", "wait");
    await r.runToIdle();
    const state = r.states.get("p") as OrchestrationState;
    expect(r.lockOf("h")).toMatchObject({ by: "p" });
    const inst = instanceDocOf("Hub", state, 1);
    const ending = poisonEnding(
      inst,
      { ...snapshotOf([]), history: state.history },
      "gave up",
      new Error("x"),
      new Date(),
    );
    expect(ending.state?.status).toBe("Failed");
    for (const w of ending.work) if (w.kind === "message") r.send(w.message);
    await r.runToIdle();
    expect(r.lockOf("h")).toBeUndefined();
  });

  it("cleanEntityStorage's release of an orphaned lock (id fix-orphaned-lock) unlocks an entity its parent holds", async () => {
    const apply = withEntities(applyMessages, registerInvoker([]));
    const locked: OrchestrationState = {
      instanceId: "@register@o",
      executionId: "x",
      name: "register",
      input: null,
      status: "Running",
      output: null,
      customStatus: null,
      createdTime: "2026-01-01T00:00:00.000Z",
      lastUpdatedTime: "2026-01-01T00:00:00.000Z",
      history: [],
      engine: { entity: { exists: true, state: "1", lockedBy: "gone", lockId: "lock-1" } },
    };
    const release = (parent: string): InstanceMessage => ({
      key: `release-${parent}`,
      instanceId: "@register@o",
      event: historyEvent(HistoryEventType.EventRaised, "2026-01-01T00:00:01.000Z", {
        Name: "release",
        Input: JSON.stringify({ parent, id: ORPHANED_LOCK_RELEASE_ID }),
      }),
    });
    const noOrchestrator: OrchestratorInvoker = async () => {
      throw new Error("no orchestrator here");
    };
    // From another parent: dropped, the lock stays.
    const other = await apply(locked, [release("someone-else")], new Date(), noOrchestrator, {
      maxPayloadBytes: 1 << 20,
    });
    expect(entityLockOf(other.state ?? locked)).toEqual({ by: "gone", id: "lock-1" });
    // From the holder, whatever its lock id: unlocked.
    const freed = await apply(locked, [release("gone")], new Date(), noOrchestrator, {
      maxPayloadBytes: 1 << 20,
    });
    expect(freed.consumed).toEqual(["release-gone"]);
    expect(entityLockOf(freed.state)).toBeUndefined();
  });
});
