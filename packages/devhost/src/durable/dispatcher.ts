import { randomUUID } from "node:crypto";
import type { Clock } from "@cosmos-feed/core/clock";
import { errorMessage } from "../errorMessage.js";
import type { TaskHubBackend } from "./backend.js";
import {
  type ActivityDoc,
  type InstanceDoc,
  type MessageDoc,
  messageId,
  type OutboxDoc,
  type PartitionSnapshot,
  partitionKeyOf,
  snapshotOf,
  stateOf,
  type TimerDoc,
} from "./documents.js";
import { isTerminal } from "./engine.js";
import { InFlightWorkItems } from "./in-flight.js";
import {
  addTrigger,
  type HandOverReason,
  handOver,
  LeaseOwnership,
  type LocalEvent,
  newTrigger,
  onlyLostPages,
  type Trigger,
} from "./ownership.js";
import { poisonEnding } from "./poison.js";
import { SnapshotCache } from "./snapshot-cache.js";
import type { ApplyMessages, InstanceMessage, OrchestratorInvoker, WorkItemResult } from "./types.js";
import { claimedActivity, pendingActivities, planWorkItem, snapshotAfter } from "./work-item-plan.js";

/**
 * Orchestration work items (docs/durable-design.md, "Dispatch"): per instance, ALL its pending messages and the
 * results this host holds for it become one work item — one replay (engine `applyMessages`), one commit. The
 * instance's last snapshot is cached by ETag, so a host that committed an instance's last step neither reads nor
 * queries it for the next; the commit's If-Match catches a stale cache (re-read, redo). Work items of one instance
 * run one at a time; at most `maxConcurrent` run at once. A work item that throws `maxAttempts` times is poison:
 * its instance fails with the reason and the hub moves on. Which work items may commit after a lease moved, and
 * the hand-over of results as messages: ownership.ts.
 */

export type { LocalEvent } from "./ownership.js";

/** What a commit scheduled, for the host to start at once. */
export interface CommittedWork {
  instanceId: string;
  instance: InstanceDoc | undefined;
  activities: ActivityDoc[];
  timers: TimerDoc[];
  canceledTimers: string[];
  outbox: OutboxDoc[];
  settled: LocalEvent[];
  terminal: boolean;
}

export interface DispatcherOptions {
  backend: TaskHubBackend;
  hub: string;
  clock: Clock;
  /** This host's claim name for the activities its commits schedule. */
  owner: string;
  apply: ApplyMessages;
  invoke: OrchestratorInvoker;
  maxConcurrent: number;
  maxAttempts: number;
  maxPayloadBytes: number;
  /** host.json durableTask.defaultVersion: what a sub-orchestration without a version gets. */
  defaultVersion?: string;
  activityLockMs: number;
  committed: (work: CommittedWork) => void;
  log: (level: "debug" | "information" | "warning" | "error", message: string) => void;
  /** The dispatch lease tokens this host holds right now (ownership.ts: the gate of instances not fed here yet). */
  heldLeases?: () => string[];
}

interface Slot {
  messages: Map<string, MessageDoc>;
  local: Map<string, LocalEvent>;
  /** Renew this host's claim on the instance's activities, or take an expired one over (see claimRound). */
  claim: boolean;
  /** What asked for the work item (feed pages under their leases, or anything else). */
  trigger: Trigger;
  done: { resolve: () => void; reject: (e: unknown) => void }[];
  running: boolean;
}

/** Starts whose first episode failed here (startHere) that a host remembers for their next work item. */
const START_FAILURES_REMEMBERED = 1_000;

/** Lost commit races one work item re-reads and redoes before it counts as a failed attempt. */
const MAX_RACES = 20;

export class OrchestrationDispatcher {
  private readonly slots = new Map<string, Slot>();
  /** Starts whose first episode failed at startHere (the error), until their next work item counts it. */
  private readonly startFailures = new Map<string, { error: unknown }>();
  private readonly cache = new SnapshotCache();
  private readonly ownership: LeaseOwnership;
  private active = 0;
  /** Work items waiting for a slot: woken with true (it is theirs), or false (the hub stops: no slot needed). */
  private readonly gate: ((slot: boolean) => void)[] = [];
  /** The last message sequence number this host gave (see newMessageDoc). */
  private seq = 0;
  private stopped = false;
  /** Stopped as a crash (abandon): nothing is handed over. */
  private crashed = false;
  private readonly inFlight = new InFlightWorkItems();
  /** Every instance's drive loop (see stop). */
  private readonly drives = new Set<Promise<void>>();
  /** Orchestrator invocations and commits made, results of this host's activities and timers given (bench, tests). */
  readonly counters = {
    workItems: 0,
    loads: 0,
    replays: 0,
    commits: 0,
    racesLost: 0,
    poisoned: 0,
    localResults: 0,
  };

  constructor(private readonly o: DispatcherOptions) {
    this.ownership = new LeaseOwnership(o.heldLeases);
  }

  /**
   * A graceful stop. Work items waiting for a slot need none now: each records the results it holds (activities
   * that finished, timers that fired) as messages for the instance and leaves its other inputs — stored messages,
   * a start, a feed page that is not checkpointed — to be redone after the restart. Work items in flight get
   * `boundMs` to end (commit); past it they are cut: their results are recorded the same way, their inputs stay,
   * and they commit nothing if they ever come back (in-flight.ts). It waits for no invocation past the bound, and
   * for nothing that waits for the stop (the change feed processor's stop, which waits for its pages, comes after).
   */
  async stop(boundMs: number): Promise<void> {
    this.stopped = true;
    for (const wake of this.gate.splice(0)) wake(false);
    const running = this.inFlight.size;
    if (running > 0)
      this.o.log(
        "debug",
        `The durable task hub is stopping: ${running} work item(s) in flight get up to ${boundMs} ms to end.`,
      );
    const cut = await this.inFlight.drain(boundMs);
    if (cut > 0)
      this.o.log(
        "information",
        `The durable task hub stopped waiting for ${cut} work item(s) still running after ${boundMs} ms (DURABLE_STOP_WORK_ITEMS_MS): they are redone after the restart.`,
      );
    // What is left of each drive is store writes (the hand-over of results), no invocation.
    await Promise.allSettled([...this.drives]);
  }

  /** Stops as a crash does: work items waiting or in flight end at once, nothing is written. */
  abandon(): void {
    this.stopped = true;
    this.crashed = true;
    for (const wake of this.gate.splice(0)) wake(false);
    this.inFlight.cutAll();
  }

  /** Seeds the cache with a snapshot this host just wrote (a start), so the first work item reads nothing. */
  prime(instanceId: string, snapshot: PartitionSnapshot): void {
    this.remember(instanceId, snapshot);
  }

  /** The change feed delivered documents of this instance under a lease whose signal this is (ownership.ts). */
  own(instanceId: string, signal: AbortSignal): void {
    this.ownership.own(instanceId, signal);
  }

  /** This host lost or gave up a dispatch lease: instances its feed has not brought stop committing (ownership.ts). */
  leaseLost(): void {
    this.ownership.leaseLost();
  }

  /** Instances the feed brought here under a lease that still holds (tests: which instances are this host's). */
  get ownedInstances(): number {
    return this.ownership.ownedInstances;
  }

  /**
   * Forgets an instance's snapshot (another host changed it, it was purged): snapshot-cache.ts. True when messages
   * were waiting in it (an entity's request waiting for its sender's previous one, a message the instance could not
   * apply yet): what the other host's change brought may let them apply, and nothing else would bring them back —
   * their feed page was handled — so the caller runs the instance again.
   */
  forget(instanceId: string, etag?: string): boolean {
    return this.cache.forget(instanceId, etag);
  }

  /**
   * A message document; its `seq` orders an instance's messages (the clock in µs, strictly increasing on this
   * host): one sender's messages — a client's signals, awaited one after the other — apply in the order written.
   * It was the clock's ms × 1000 plus a counter modulo 1000, which went back by 999 when the counter wrapped within
   * one millisecond.
   */
  newMessageDoc(message: InstanceMessage): MessageDoc {
    this.seq = Math.max(this.o.clock.now() * 1000, this.seq + 1);
    return {
      id: messageId(message.key),
      pk: partitionKeyOf(this.o.hub, message.instanceId),
      kind: "message",
      hub: this.o.hub,
      instanceId: message.instanceId,
      seq: this.seq,
      message,
    };
  }

  /**
   * Runs a work item for the instance with these inputs (merged with any already waiting); resolves once a work
   * item that included them has ended (committed, found nothing to do, or failed the instance as poison).
   */
  schedule(
    instanceId: string,
    input: { message?: MessageDoc; local?: LocalEvent; signal?: AbortSignal; claim?: boolean } = {},
  ): Promise<void> {
    if (input.signal) this.own(instanceId, input.signal);
    else this.ownership.ownUnfed(instanceId);
    if (input.message && !input.local && this.cache.wasConsumed(input.message.pk, input.message.id)) {
      // The feed's copy of a message this host already consumed (read before its deletion): nothing to do.
      return Promise.resolve();
    }
    let slot = this.slots.get(instanceId);
    if (!slot) {
      slot = {
        messages: new Map(),
        local: new Map(),
        claim: false,
        trigger: newTrigger(),
        done: [],
        running: false,
      };
      this.slots.set(instanceId, slot);
    }
    if (input.message) slot.messages.set(input.message.id, input.message);
    if (input.local) {
      this.counters.localResults++;
      slot.local.set(input.local.message.key, input.local);
    }
    if (input.claim) slot.claim = true;
    addTrigger(slot.trigger, input.signal);
    const s = slot;
    const promise = new Promise<void>((resolve, reject) => s.done.push({ resolve, reject }));
    if (!slot.running) this.startDrive(instanceId, slot);
    return promise;
  }

  /**
   * A new instance's start written by this host's client, run before anything is stored (docs/durable-design.md,
   * "Orchestration work items"): its first work item replays the Pending instance the start would write, and its
   * commit creates the instance — the start and its first episode in one batch. "created"; "exists" (the create
   * lost: an instance of that id is stored); undefined when it did not run here, failed, or did not end within
   * `waitMs` (real time). The caller then writes the start alone, as a start made elsewhere; a work item still
   * running then commits nothing if it has not begun to (else its create and the caller's race, and one loses), and
   * the instance's next work item — queued behind it — applies the stored start.
   */
  async startHere(pending: InstanceDoc, waitMs: number): Promise<"created" | "exists" | undefined> {
    const instanceId = pending.instanceId;
    const start = pending.start;
    if (this.stopped || !start || waitMs <= 0 || this.slots.has(instanceId)) return undefined;
    const slot: Slot = {
      messages: new Map(),
      local: new Map(),
      claim: false,
      trigger: newTrigger(),
      done: [],
      running: true,
    };
    this.slots.set(instanceId, slot);
    this.ownership.ownUnfed(instanceId);
    // `passed`: the wait ended first (the caller writes the start alone); `committing`: too late for that, the
    // create is on its way (the wait then lasts until it returns).
    const gaveUp = { passed: false, committing: false };
    const run = (async (): Promise<"created" | "exists" | undefined> => {
      const held = await this.acquire();
      try {
        if (!held || gaveUp.passed) return undefined;
        let outcome: "created" | "exists" | undefined;
        const work = this.firstEpisode(instanceId, pending, start, gaveUp).then((o) => {
          outcome = o;
        });
        if ((await this.inFlight.run(work)) === "ended") return outcome;
        void work.then(
          () =>
            this.o.log("debug", `Instance '${instanceId}': its work item returned after the stop cut it.`),
          (e: unknown) =>
            this.o.log(
              "debug",
              `Instance '${instanceId}': its work item ended after the stop cut it: ${String(e)}`,
            ),
        );
        return undefined;
      } finally {
        if (held) this.release();
      }
    })();
    const drive = run
      .catch((e: unknown) => {
        // An attempt that failed at the hub (as a work item's: the instance's next work item counts it).
        if (!this.stopped) {
          this.startFailures.set(instanceId, { error: e });
          if (this.startFailures.size > START_FAILURES_REMEMBERED)
            this.startFailures.delete(this.startFailures.keys().next().value as string);
          this.logAttemptFailed(instanceId, 1, e);
        }
        return undefined;
      })
      .finally(() => {
        slot.running = false;
        if (slot.done.length === 0) this.slots.delete(instanceId);
        else this.startDrive(instanceId, slot);
      });
    const tracked = drive.then(() => undefined);
    this.drives.add(tracked);
    void tracked.finally(() => this.drives.delete(tracked));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => {
        if (gaveUp.committing) return;
        gaveUp.passed = true;
        resolve(undefined);
      }, waitMs);
    });
    try {
      return await Promise.race([drive, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The first work item of a start not stored yet (see startHere): one replay, a commit that creates the instance. */
  private async firstEpisode(
    instanceId: string,
    pending: InstanceDoc,
    start: InstanceMessage,
    gaveUp: { passed: boolean; committing: boolean },
  ): Promise<"created" | "exists" | undefined> {
    this.counters.workItems++;
    this.counters.replays++;
    const result = await this.o.apply(
      stateOf(pending, []),
      [start],
      new Date(this.o.clock.now()),
      this.o.invoke,
      {
        maxPayloadBytes: this.o.maxPayloadBytes,
        ...(this.o.defaultVersion !== undefined ? { defaultVersion: this.o.defaultVersion } : {}),
      },
    );
    if (!result.consumed.includes(start.key)) return undefined;
    if (gaveUp.passed) {
      // The start was written alone meanwhile: the episode commits on it (If-Match the etag the start's write
      // primed the cache with), as the work item queued behind this one would after replaying it again.
      const stored = this.cache.get(instanceId);
      if (stored?.instance?.start?.key !== start.key || stored.history.length > 0) return undefined;
      await this.commitResult(instanceId, stored, result, [], []);
      return undefined;
    }
    // Nothing is stored: the commit creates the instance (a lost race is an instance of that id already there).
    gaveUp.committing = true;
    const outcome = await this.commitResult(instanceId, snapshotOf([]), result, [], []);
    return outcome === "lost" ? "exists" : "created";
  }

  /** The warning for a work item attempt that failed (a start's first episode here is attempt 1). */
  private logAttemptFailed(instanceId: string, attempt: number, e: unknown): void {
    this.o.log(
      "warning",
      `Instance '${instanceId}': work item attempt ${attempt} of ${this.o.maxAttempts} failed: ${errorMessage(e)}`,
    );
  }

  private startDrive(instanceId: string, slot: Slot): void {
    const drive = this.drive(instanceId, slot);
    this.drives.add(drive);
    void drive.finally(() => this.drives.delete(drive));
  }

  private async drive(instanceId: string, slot: Slot): Promise<void> {
    slot.running = true;
    try {
      while (slot.done.length > 0) {
        const done = slot.done.splice(0);
        const messages = [...slot.messages.values()];
        const local = [...slot.local.values()];
        const claim = slot.claim;
        const trigger = slot.trigger;
        slot.messages.clear();
        slot.local.clear();
        slot.claim = false;
        slot.trigger = newTrigger();
        const held = await this.acquire();
        try {
          await this.runOrLeave(instanceId, messages, local, claim, trigger);
          for (const d of done) d.resolve();
        } catch (e) {
          for (const d of done) d.reject(e);
        } finally {
          if (held) this.release();
        }
      }
    } finally {
      slot.running = false;
      if (slot.done.length === 0) this.slots.delete(instanceId);
      else this.startDrive(instanceId, slot);
    }
  }

  /**
   * Runs the work item; on a stop, what it cannot finish is left for the restart (see stop). Resolves when its
   * inputs are done with; throws when some are left in the store to be redone (so a feed page that asked for it
   * is not checkpointed).
   */
  private async runOrLeave(
    instanceId: string,
    messages: MessageDoc[],
    local: LocalEvent[],
    claim: boolean,
    trigger: Trigger,
  ): Promise<void> {
    if (!this.stopped) {
      let outcome: "ended" | "cut";
      const work = this.workItem(instanceId, messages, local, claim, trigger);
      try {
        outcome = await this.inFlight.run(work);
      } catch (e) {
        // Only a work item of a stopping hub throws (it does not retry an attempt that failed).
        await this.recordOnStop(instanceId, local).catch((h: unknown) => this.handOffFailed(instanceId, h));
        throw e;
      }
      if (outcome === "ended") return;
      void work.then(
        () => this.o.log("debug", `Instance '${instanceId}': its work item returned after the stop cut it.`),
        (e: unknown) =>
          this.o.log(
            "debug",
            `Instance '${instanceId}': its work item ended after the stop cut it: ${String(e)}`,
          ),
      );
      await this.recordOnStop(instanceId, local);
      throw new Error(
        `Instance '${instanceId}': its work item was still running when the durable task hub stopped; it is redone after the restart.`,
      );
    }
    await this.recordOnStop(instanceId, local);
    // Done with only when all it had were results (now recorded): a feed page that asked for it stays unchecked,
    // so that whatever else the page carried is redone too.
    if (messages.length > 0 || local.length === 0 || trigger.pages.size > 0)
      throw new Error("The durable task hub is stopping.");
  }

  /**
   * Results this host holds (activities that finished, timers that fired) are recorded, not dropped, when the hub
   * stops before they are applied: they wait as messages for the instance's next work item, on whichever host, so
   * the activity does not run again. Race-free with a cut work item's commit: each message goes with its source
   * document's deletion, and whichever of the two deletes it first wins (ownership.ts, handOver); a result without
   * a document (an activity under its instance's claim) applied twice is dropped the second time by the engine.
   */
  private async recordOnStop(instanceId: string, local: LocalEvent[]): Promise<void> {
    if (this.crashed || local.length === 0) return;
    await this.handOff(instanceId, local, "stopping");
  }

  private handOffFailed(instanceId: string, e: unknown): void {
    this.o.log(
      "warning",
      `Instance '${instanceId}': recording its results on stop failed (they are redone after the restart): ${String(e)}`,
    );
  }

  /** A slot: true when it is taken (release it), false when the hub stopped (none is needed). */
  private async acquire(): Promise<boolean> {
    if (this.stopped) return false;
    if (this.active < this.o.maxConcurrent) {
      this.active++;
      return true;
    }
    return new Promise<boolean>((r) => this.gate.push(r));
  }

  private release(): void {
    const next = this.gate.shift();
    if (next) next(true);
    else this.active--;
  }

  private remember(instanceId: string, snap: PartitionSnapshot) {
    // An ended instance needs nothing more from this host: nothing of it is kept.
    if (!this.cache.remember(instanceId, snap)) this.ownership.forget(instanceId);
  }

  private async load(instanceId: string): Promise<PartitionSnapshot> {
    this.counters.loads++;
    const { snapshot, swept } = await this.o.backend.getOrchestrationWorkItem(instanceId);
    if (snapshot.staleHistory.length > 0) this.cleanup(instanceId, snapshot.staleHistory);
    if (swept > 0)
      this.o.log("information", `Instance '${instanceId}': deleted ${swept} abandoned stage document(s).`);
    return snapshot;
  }

  /** Deletes an old execution's history in bounded steps; safe to repeat (reads ignore it meanwhile). */
  private cleanup(instanceId: string, ids: string[]) {
    this.o.backend.deleteDocuments(instanceId, ids).catch((e: unknown) => {
      this.o.log(
        "warning",
        `Instance '${instanceId}': deleting old history failed (retried later): ${String(e)}`,
      );
    });
  }

  private async workItem(
    instanceId: string,
    fed: MessageDoc[],
    local: LocalEvent[],
    claim: boolean,
    trigger: Trigger,
  ): Promise<void> {
    this.counters.workItems++;
    // A start whose first episode failed at startHere: that was this work item's first attempt.
    const failed = this.startFailures.get(instanceId);
    this.startFailures.delete(instanceId);
    let failures = failed ? 1 : 0;
    if (failed && failures >= this.o.maxAttempts) {
      await this.poison(instanceId, failed.error, [...local]);
      return;
    }
    let races = 0;
    let pendingLocal = local;
    let pendingFed = fed;
    for (;;) {
      // Cut by the stop: its caller moved on and left its inputs for the restart.
      if (this.inFlight.cut) return;
      if (pendingLocal.length === 0 && onlyLostPages(trigger)) {
        // The pages' lease moved: their new owner reads them again and runs it.
        this.cache.drop(instanceId);
        return;
      }
      try {
        const outcome = await this.round(instanceId, pendingFed, pendingLocal, claim, trigger);
        if (outcome === "idle" || outcome === "done") return;
        if (outcome === "lost") {
          this.counters.racesLost++;
          if (++races > MAX_RACES) {
            // Each attempt gets its own MAX_RACES: the count did not restart, so after one such failure every
            // further lost race was a failed attempt, and a busy instance was given up after four more.
            races = 0;
            throw new Error(`lost ${MAX_RACES + 1} commit races in a row`);
          }
          // The re-read holds every stored message: a fed one it lacks was consumed by the host that won (else
          // it would be applied again, its deletion 404, and every round after lost the same way).
          pendingFed = [];
          continue;
        }
        // Committed: the inputs are in; the next round looks at what is still pending (a new execution's start).
        pendingFed = [];
        pendingLocal = [];
        races = 0;
      } catch (e) {
        this.cache.drop(instanceId);
        // A stopping hub does not retry (nor poison the instance for what the stop caused): the attempt is redone
        // after the restart.
        if (this.stopped) throw e;
        failures++;
        this.logAttemptFailed(instanceId, failures, e);
        if (failures >= this.o.maxAttempts) {
          await this.poison(instanceId, e, [...pendingLocal]);
          return;
        }
        await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** failures, 2_000)));
      }
    }
  }

  /** One replay and one commit; "idle" when nothing could apply. */
  private async round(
    instanceId: string,
    fed: MessageDoc[],
    local: LocalEvent[],
    claim: boolean,
    trigger: Trigger,
  ): Promise<"idle" | "lost" | "committed" | "done"> {
    const cached = this.cache.get(instanceId);
    const snap = cached ?? (await this.load(instanceId));
    const pk = partitionKeyOf(this.o.hub, instanceId);
    for (const m of fed) {
      // Only a cached snapshot may predate a message handed to this work item. A read made after the message was
      // written is the store's word: a message missing from it was consumed already — by another host (its feed
      // copy or delivery raced this one), or by this host before the race it lost — and applying it would apply
      // it twice.
      if (cached && !snap.ids.has(m.id) && !this.cache.wasConsumed(pk, m.id)) {
        snap.messages.push(m);
        snap.ids.add(m.id);
      }
    }
    snap.messages.sort((a, b) => a.seq - b.seq || a.id.localeCompare(b.id));
    const live = local.filter((l) => !l.stored || snap.ids.has(l.sourceId));
    const settledEarly = local.filter((l) => l.stored && !snap.ids.has(l.sourceId));
    if (settledEarly.length > 0) this.o.committed(this.emptyWork(instanceId, snap, settledEarly));
    if (this.ownership.mustNotCommit(instanceId, live, trigger)) {
      this.throwIfCut(instanceId);
      await this.handOff(instanceId, live);
      return "idle";
    }
    const byKey = new Map<string, { doc?: MessageDoc; local?: LocalEvent }>();
    for (const m of snap.messages) byKey.set(m.message.key, { doc: m });
    for (const l of live) if (!byKey.has(l.message.key)) byKey.set(l.message.key, { local: l });
    if (byKey.size === 0) return claim ? this.claimRound(instanceId, snap) : "idle";
    const inst = snap.instance;
    const state = inst ? stateOf(inst, snap.history) : undefined;
    const messages = [...byKey.values()].map((v) =>
      v.doc ? v.doc.message : (v.local as LocalEvent).message,
    );
    this.counters.replays++;
    const result = await this.o.apply(state, messages, new Date(this.o.clock.now()), this.o.invoke, {
      maxPayloadBytes: this.o.maxPayloadBytes,
      ...(this.o.defaultVersion !== undefined ? { defaultVersion: this.o.defaultVersion } : {}),
    });
    // Results the replay could not apply yet (the instance is suspended, pending, continued as new, or they need
    // a replay of their own) wait as messages, as any message does: a result held only in memory would be lost.
    const waiting = live.filter((l) => !result.consumed.includes(l.message.key));
    this.throwIfCut(instanceId);
    if (result.consumed.length === 0) {
      if (waiting.length > 0) await this.handOff(instanceId, waiting, "waits");
      else this.remember(instanceId, snap);
      return "idle";
    }
    if (this.ownership.mustNotCommit(instanceId, live, trigger)) {
      await this.handOff(instanceId, live);
      return "idle";
    }
    const consumed = result.consumed.map((k) => byKey.get(k)).filter((v) => v !== undefined);
    const deletes = [
      ...consumed.flatMap((v) => (v.doc && !v.doc.virtual ? [v.doc.id] : [])),
      ...consumed.flatMap((v) => (v.local?.stored ? [v.local.sourceId] : [])),
    ];
    const outcome = await this.commitResult(
      instanceId,
      snap,
      result,
      deletes,
      consumed.flatMap((v) => (v.local ? [v.local] : [])),
    );
    if (outcome === "lost" || waiting.length === 0) return outcome;
    await this.handOff(instanceId, waiting, "waits");
    return "committed";
  }

  /**
   * Nothing to apply, but the claim on the instance's activities is due: renewed when it is this host's (its
   * activities still run here), taken over when it expired (a dead host's: its activities run here now) — an
   * instance-only commit. The activities come back in CommittedWork; the worker skips those it holds already.
   */
  private async claimRound(instanceId: string, snap: PartitionSnapshot): Promise<"idle" | "lost" | "done"> {
    const inst = snap.instance;
    if (!inst || isTerminal(inst.status)) return "idle";
    const state = stateOf(inst, snap.history);
    const prior = inst.claim;
    const now = this.o.clock.now();
    if (prior && prior.owner !== this.o.owner && prior.until >= now) return "idle";
    const pending = pendingActivities(state);
    if (pending.length === 0) return "idle";
    const outcome = await this.commitResult(
      instanceId,
      snap,
      { state, newEvents: [], work: [], consumed: [], dropped: [], invocations: 0 },
      [],
      [],
      pending.map((item) => claimedActivity(this.o.hub, item)),
    );
    return outcome === "lost" ? "lost" : "done";
  }

  /** A work item the stop cut writes nothing (its results were recorded, its inputs left: see stop). */
  private throwIfCut(instanceId: string): void {
    if (this.inFlight.cut)
      throw new Error(`Instance '${instanceId}': its work item was cut by the stop; nothing is committed.`);
  }

  /** Results this host must not or cannot apply yet, handed over as messages (ownership.ts, handOver). */
  private async handOff(
    instanceId: string,
    local: LocalEvent[],
    why: HandOverReason = "lease",
  ): Promise<void> {
    this.cache.drop(instanceId);
    const o = {
      backend: this.o.backend,
      newMessageDoc: (m: InstanceMessage) => this.newMessageDoc(m),
      log: this.o.log,
    };
    await handOver(o, instanceId, local, why);
    if (local.length > 0) this.o.committed(this.emptyWork(instanceId, snapshotOf([]), local));
  }

  private emptyWork(instanceId: string, snap: PartitionSnapshot, settled: LocalEvent[]): CommittedWork {
    return {
      instanceId,
      instance: snap.instance,
      activities: [],
      timers: [],
      canceledTimers: [],
      outbox: [],
      settled,
      terminal: false,
    };
  }

  private async commitResult(
    instanceId: string,
    snap: PartitionSnapshot,
    result: WorkItemResult,
    deletes: string[],
    settledLocal: LocalEvent[],
    runHere: ActivityDoc[] = [],
  ): Promise<"lost" | "committed" | "done"> {
    this.throwIfCut(instanceId);
    const plan = planWorkItem({
      hub: this.o.hub,
      instanceId,
      snap,
      result,
      deletes,
      owner: this.o.owner,
      now: this.o.clock.now(),
      lockedUntil: this.o.clock.now() + this.o.activityLockMs,
      newMessageDoc: (m) => this.newMessageDoc(m),
    });
    this.counters.commits++;
    const outcome = await this.o.backend.completeOrchestrationWorkItem({
      hub: this.o.hub,
      instanceId,
      ...(plan.body
        ? {
            instance: {
              body: plan.body,
              ...(snap.instance ? { ifMatch: snap.instance._etag ?? "", before: snap.instance } : {}),
            },
          }
        : {}),
      upserts: plan.upserts,
      deletes: plan.deletes,
      token: randomUUID().replaceAll("-", ""),
    });
    if (!outcome.committed) {
      this.cache.drop(instanceId);
      this.o.log("debug", `Instance '${instanceId}': commit lost a race (${outcome.status}); re-reading.`);
      return "lost";
    }
    this.cache.markConsumed(partitionKeyOf(this.o.hub, instanceId), plan.deletes);
    const next = snapshotAfter(snap, plan, outcome.etag ?? "");
    // Another host finished applying this staged commit: the instance's etag is not known here (re-read next).
    if (outcome.etag === undefined) this.cache.drop(instanceId);
    else this.remember(instanceId, next);
    if (plan.staleHistory.length > 0) this.cleanup(instanceId, plan.staleHistory);
    this.o.committed({
      instanceId,
      instance: next.instance,
      activities: [...plan.created.activities, ...runHere],
      timers: plan.created.timers,
      canceledTimers: plan.canceledTimers,
      outbox: plan.created.outbox,
      settled: settledLocal,
      terminal: plan.terminal,
    });
    // Nothing left pending (the usual case): no second round, and for an ended instance no read of what it left.
    return next.messages.length > 0 ? "committed" : "done";
  }

  /**
   * A work item that failed `maxAttempts` times: its instance ends — Failed with the reason (FailureDetails as
   * the extension reports them), or Terminated when a terminate was waiting — and everything pending of it is
   * deleted, in one commit (staged when large). Never throws: the hub moves on either way.
   */
  private async poison(instanceId: string, error: unknown, local: LocalEvent[]): Promise<void> {
    this.counters.poisoned++;
    const message = errorMessage(error);
    const reason = `The durable task hub gave up on instance '${instanceId}' after ${this.o.maxAttempts} failed attempts: ${message}`;
    this.o.log("error", reason);
    try {
      const snap = await this.load(instanceId);
      const pending = [...snap.messages.filter((m) => !m.virtual), ...snap.activities, ...snap.timers].map(
        (d) => d.id,
      );
      const inst = snap.instance;
      if (!inst || isTerminal(inst.status)) {
        await this.o.backend.deleteDocuments(instanceId, pending);
        this.cache.drop(instanceId);
        this.o.committed({ ...this.emptyWork(instanceId, snap, local), terminal: true });
        return;
      }
      const ending = poisonEnding(inst, snap, reason, error, new Date(this.o.clock.now()));
      const outcome = await this.commitResult(instanceId, snap, ending, pending, local);
      if (outcome === "lost")
        this.o.log("error", `Instance '${instanceId}': ending it as poison lost a race.`);
    } catch (e) {
      this.o.log("error", `Instance '${instanceId}': ending it as poison failed: ${String(e)}`);
    }
  }
}
