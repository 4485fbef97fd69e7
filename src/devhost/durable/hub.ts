import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { BulkOperationType, type Container } from "@azure/cosmos";
import { type Clock, systemClock } from "../../shared/changefeed/clock.js";
import { type ChangeFeedProcessor, createChangeFeedProcessor } from "../../shared/changefeed/index.js";
import type { ChangeFeedContext } from "../../shared/changefeed/processing/worker.js";
import { ActivityWorker } from "./activities.js";
import { type CommittedWork, OrchestrationDispatcher } from "./dispatcher.js";
import {
  type ActivityDoc,
  type AnyDoc,
  asJson,
  INSTANCE_ID,
  type InstanceDoc,
  type MessageDoc,
  type OutboxDoc,
  snapshotOf,
  type TimerDoc,
} from "./documents.js";
import { applyMessages, isTerminal } from "./engine.js";
import { TaskHubError, validateInstanceId } from "./errors.js";
import { checkPayload } from "./limits.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import { historyView, instancesQuery, runtimeStatusOf } from "./status-view.js";
import { HubStore, statusOf } from "./store.js";
import { TimerService } from "./timers.js";
import {
  type ActivityInvoker,
  type ApplyMessages,
  type HistoryEvent,
  HistoryEventType,
  type InstanceFilter,
  type InstanceMessage,
  type InstanceStatus,
  type OrchestrationState,
  type OrchestratorInvoker,
  type TaskHubClient,
} from "./types.js";

export { TaskHubError, validateInstanceId } from "./errors.js";
export { historyView, instancesQuery, runtimeStatusOf } from "./status-view.js";

/**
 * A Cosmos DB storage backend for the Durable Task protocol (docs/durable-design.md): the wiring of the store
 * (store.ts), the orchestration dispatcher (dispatcher.ts), the activity worker (activities.ts) and the timers
 * (timers.ts), with the change feed of the hub's container as the durable path between hosts, and the client
 * operations (TaskHubClient). Whoever writes work runs it at once on its own host; the feed and a periodic scan
 * catch what a crashed or other host left.
 */

export type LogLevel = "trace" | "debug" | "information" | "warning" | "error";

export interface CosmosTaskHubOptions {
  /** The task hub's container (partition key `/pk`). */
  container: Container;
  /** The lease container of its change feed processor (`durable.<hub>.` prefix). */
  leaseContainer: Container;
  hubName: string;
  invokeOrchestrator: OrchestratorInvoker;
  invokeActivity: ActivityInvoker;
  log?: (level: LogLevel, message: string) => void;
  /** Change feed poll delay when nothing is new (ms). */
  feedPollDelayMs?: number;
  /** How often work another host left (timers coming due, expired activity claims, outbox, stages) is looked for (ms). */
  timerScanIntervalMs?: number;
  maxConcurrentActivities?: number;
  maxConcurrentOrchestrations?: number;
  maxPayloadBytes?: number;
  maxWorkItemAttempts?: number;
  activityLockMs?: number;
  waitPollMs?: number;
  /** Lease timing of the dispatch processor (ms). */
  leaseAcquireIntervalMs?: number;
  leaseExpirationIntervalMs?: number;
  leaseRenewIntervalMs?: number;
  instanceName?: string;
  /** Durable time: episode timestamps, timers, activity claims (tests pass a FakeClock). */
  clock?: Clock;
  /** Replaces the engine (tests). */
  applyMessages?: ApplyMessages;
}

const d = DURABLE_HUB_SETTINGS;
/** Instances whose newest lastUpdatedTime a host remembers for waiting clients. */
const LAST_UPDATED_REMEMBERED = 10_000;
export const TaskHubDefaults = {
  feedPollDelayMs: d.feedPollDelayMs.default,
  timerScanIntervalMs: d.timerScanIntervalMs.default,
  maxConcurrentActivities: d.maxConcurrentActivities.default,
  maxConcurrentOrchestrations: d.maxConcurrentOrchestrations.default,
  maxPayloadBytes: d.maxPayloadBytes.default,
  maxWorkItemAttempts: d.maxWorkItemAttempts.default,
  activityLockMs: d.activityLockMs.default,
  waitPollMs: d.waitPollMs.default,
} as const;

export class CosmosTaskHub implements TaskHubClient {
  readonly hubName: string;
  private readonly o: CosmosTaskHubOptions;
  private readonly store: HubStore;
  private readonly clock: Clock;
  private readonly owner: string;
  private readonly limits: { maxPayloadBytes: number };
  readonly dispatcher: OrchestrationDispatcher;
  private readonly activities: ActivityWorker;
  private readonly timers: TimerService;
  private processor: ChangeFeedProcessor<AnyDoc> | undefined;
  private readonly waiters = new Map<string, Set<() => void>>();
  /** The newest lastUpdatedTime this host committed or saw per instance (waitForChange's `since`). */
  private readonly lastUpdated = new Map<string, string>();
  private readonly background = new Set<Promise<unknown>>();
  private scanLoop: AbortController | undefined;
  private readonly watchedClaims = new Set<string>();
  /** Until start(), a hub is a client only: it writes, another host runs the work. */
  private stopped = true;
  /** Set by stop() and abandon(): waiting clients return. */
  private closed = false;

  constructor(options: CosmosTaskHubOptions) {
    this.o = options;
    this.hubName = options.hubName;
    this.clock = options.clock ?? systemClock;
    this.store = new HubStore(options.container, options.hubName);
    this.owner = `${options.instanceName ?? hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    const v = <K extends keyof typeof TaskHubDefaults>(k: K): number =>
      (options as unknown as Record<string, number | undefined>)[k] ?? TaskHubDefaults[k];
    this.limits = { maxPayloadBytes: v("maxPayloadBytes") };
    const log = (level: LogLevel, message: string) => this.log(level, message);
    this.dispatcher = new OrchestrationDispatcher({
      store: this.store,
      hub: this.hubName,
      clock: this.clock,
      owner: this.owner,
      apply: options.applyMessages ?? applyMessages,
      invoke: options.invokeOrchestrator,
      maxConcurrent: v("maxConcurrentOrchestrations"),
      maxAttempts: v("maxWorkItemAttempts"),
      maxPayloadBytes: v("maxPayloadBytes"),
      activityLockMs: v("activityLockMs"),
      committed: (w) => this.afterCommit(w),
      log,
    });
    this.activities = new ActivityWorker({
      store: this.store,
      clock: this.clock,
      owner: this.owner,
      lockMs: v("activityLockMs"),
      maxConcurrent: v("maxConcurrentActivities"),
      maxPayloadBytes: v("maxPayloadBytes"),
      invoke: options.invokeActivity,
      completed: (doc, event) => this.activityCompleted(doc, event),
      log,
    });
    // Timers due within two scans are held in memory; the scan brings the later ones as they come near.
    this.timers = new TimerService(this.clock, 2 * v("timerScanIntervalMs"), (doc) => this.timerDue(doc));
  }

  private log(level: LogLevel, message: string) {
    this.o.log?.(level, message);
  }

  /** Runs a promise in the background, logging its failure (tracked so stop() can wait for it). */
  private detach(what: string, p: Promise<unknown>) {
    const tracked = p.catch((e: unknown) =>
      this.log("warning", `${what}: ${e instanceof Error ? e.message : String(e)}`),
    );
    this.background.add(tracked);
    void tracked.finally(() => this.background.delete(tracked));
  }

  /** Starts dispatch: the change feed processor (from the beginning of the feed) and the pending-work scan. */
  async start(): Promise<void> {
    this.stopped = false;
    this.closed = false;
    const o = this.o;
    this.processor = createChangeFeedProcessor<AnyDoc>(
      {
        monitoredContainer: o.container,
        leaseContainer: o.leaseContainer,
        leaseContainerPrefix: `durable.${this.hubName}.`,
        startFromBeginning: true,
        feedPollDelay: o.feedPollDelayMs ?? TaskHubDefaults.feedPollDelayMs,
        // The feed is the backstop (a host runs what it writes at once): read it in fuller, fewer pages.
        minReadInterval: o.feedPollDelayMs ?? TaskHubDefaults.feedPollDelayMs,
        ...(o.instanceName ? { instanceName: o.instanceName } : {}),
        ...(o.leaseAcquireIntervalMs ? { leaseAcquireInterval: o.leaseAcquireIntervalMs } : {}),
        ...(o.leaseExpirationIntervalMs ? { leaseExpirationInterval: o.leaseExpirationIntervalMs } : {}),
        ...(o.leaseRenewIntervalMs ? { leaseRenewInterval: o.leaseRenewIntervalMs } : {}),
      },
      (docs, context) => this.dispatch(docs, context),
    );
    this.processor.on("error", (e: unknown) =>
      this.log("warning", `Durable task hub dispatch: ${String(e)}`),
    );
    this.processor.on("acquired", (token) => this.log("debug", `Dispatch lease ${token} acquired.`));
    this.processor.on("lost", (token, reason) =>
      this.log(
        "information",
        `Dispatch lease ${token} lost (${reason}): its instances' work goes to the new owner.`,
      ),
    );
    await this.processor.start();
    const scan = new AbortController();
    this.scanLoop = scan;
    const every = o.timerScanIntervalMs ?? TaskHubDefaults.timerScanIntervalMs;
    this.detach("Claim renewal", this.renewClaims(scan.signal));
    this.detach(
      "Pending-work scan",
      (async () => {
        while (!scan.signal.aborted) {
          await this.scan().catch((e: unknown) =>
            this.log("warning", `Pending-work scan failed: ${String(e)}`),
          );
          await systemClock.sleep(every, scan.signal);
        }
      })(),
    );
  }

  /** Stops dispatch: running activities hand their results on, the processor hands its leases off. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.closed = true;
    this.scanLoop?.abort();
    this.timers.stop();
    await this.activities.stop();
    await Promise.allSettled([...this.background]);
    this.dispatcher.stop();
    await this.processor?.stop({ abortSignal: AbortSignal.timeout(5_000) });
  }

  /** Stops without handing anything off (a crash, for tests). */
  async abandon(): Promise<void> {
    this.stopped = true;
    this.closed = true;
    this.scanLoop?.abort();
    this.timers.stop();
    this.dispatcher.stop();
    void this.activities.stop();
    await this.processor?.abandon();
  }

  /** Runs the instance's pending work now (tests; the feed and this host's writes do it otherwise). */
  processInstance(instanceId: string): Promise<void> {
    return this.dispatcher.schedule(instanceId);
  }

  // ---- dispatch --------------------------------------------------------------------------------------------

  /**
   * A change feed page: messages become work items (awaited — the page is checkpointed once they are stored, and
   * a work item ends within its attempts, so a poisoned instance never holds the feed); activities, timers and
   * outbox deliveries are handed over and not awaited. A page whose lease was lost stops before committing.
   */
  private async dispatch(docs: AnyDoc[], context: ChangeFeedContext): Promise<void> {
    const work: Promise<void>[] = [];
    for (const doc of docs) {
      if (doc.hub !== this.hubName) continue;
      // This host may commit for the instance while this page's lease holds (dispatcher.own).
      this.dispatcher.own(doc.pk.slice(this.hubName.length + 1), context.signal);
      if (doc.kind === "message") {
        work.push(this.dispatcher.schedule(doc.instanceId, { message: doc, signal: context.signal }));
      } else if (doc.kind === "instance") {
        if (doc.stage || doc.start)
          work.push(this.dispatcher.schedule(doc.instanceId, { signal: context.signal }));
        else {
          this.dispatcher.forget(doc.instanceId, doc._etag);
          this.notify(doc.instanceId, doc.lastUpdatedTime);
          if (doc.claim) this.watchClaim(doc.instanceId, doc.claim);
        }
      } else if (doc.kind === "activity") {
        this.detach(
          `Activity '${doc.item.name}' of '${doc.item.instanceId}'`,
          this.activities.offerStored(doc),
        );
      } else if (doc.kind === "timer") {
        this.timers.offer(doc);
      } else if (doc.kind === "outbox") {
        this.detach(`Delivering ${doc.id}`, this.deliver(doc));
      }
    }
    await Promise.all(work);
  }

  /** What a commit scheduled starts here at once. */
  private afterCommit(w: CommittedWork): void {
    for (const l of w.settled)
      if (l.sourceKind === "activity") this.activities.settled(this.store.pk(w.instanceId), l.sourceId);
    if (this.stopped) return;
    for (const a of w.activities) this.activities.offerClaimed(a);
    for (const t of w.timers) this.timers.offer(t);
    for (const id of w.canceledTimers) this.timers.cancel(this.store.pk(w.instanceId), id);
    if (w.terminal) this.timers.cancelPartition(this.store.pk(w.instanceId));
    for (const o of w.outbox) this.detach(`Delivering ${o.id}`, this.deliver(o));
    if (w.instance) this.notify(w.instanceId, w.instance.lastUpdatedTime);
  }

  private activityCompleted(doc: ActivityDoc, event: HistoryEvent): void {
    const item = doc.item;
    this.detach(
      `Instance '${item.instanceId}' after activity '${item.name}'`,
      this.dispatcher.schedule(item.instanceId, {
        local: {
          message: {
            key: `task-${item.executionId}-${item.taskScheduledId}`,
            instanceId: item.instanceId,
            executionId: item.executionId,
            event,
          },
          sourceId: doc.id,
          sourceKind: "activity",
          stored: doc.virtual !== true,
        },
      }),
    );
  }

  private timerDue(doc: TimerDoc): void {
    this.detach(
      `Timer ${doc.id} of '${doc.instanceId}'`,
      this.dispatcher.schedule(doc.instanceId, {
        local: {
          message: {
            key: `timer-${doc.executionId}-${doc.timerId}`,
            instanceId: doc.instanceId,
            executionId: doc.executionId,
            event: {
              EventType: HistoryEventType.TimerFired,
              EventId: -1,
              IsPlayed: false,
              Timestamp: new Date(this.clock.now()).toISOString(),
              TimerId: doc.timerId,
              FireAt: doc.fireAt,
            },
          },
          sourceId: doc.id,
          sourceKind: "timer",
          stored: true,
        },
      }),
    );
  }

  /**
   * Another host's claim on an instance's activities is looked at again when it expires: a live holder has renewed
   * it by then; a dead one's is taken over here (dispatcher claimRound) and its activities run here.
   */
  private watchClaim(instanceId: string, claim: { owner: string; until: number }): void {
    if (this.stopped || claim.owner === this.owner || this.watchedClaims.has(instanceId)) return;
    this.watchedClaims.add(instanceId);
    const wait = Math.max(0, claim.until - this.clock.now()) + 1;
    this.detach(
      `Claim of '${instanceId}'`,
      this.clock.sleep(wait, this.scanLoop?.signal).then(() => {
        this.watchedClaims.delete(instanceId);
        if (!this.stopped) return this.dispatcher.schedule(instanceId, { claim: true });
      }),
    );
  }

  /** Renews this host's claims while their activities run here (every half DURABLE_ACTIVITY_LOCK_MS). */
  private async renewClaims(signal: AbortSignal): Promise<void> {
    const every = (this.o.activityLockMs ?? TaskHubDefaults.activityLockMs) / 2;
    while (!signal.aborted) {
      // Real time: a cadence, not durable time (a test's fake clock jumping days must not spin this loop).
      await systemClock.sleep(every, signal);
      if (signal.aborted) return;
      for (const id of this.activities.claimedInstances())
        this.detach(`Renewing the claim of '${id}'`, this.dispatcher.schedule(id, { claim: true }));
    }
  }

  /** A message for another instance: written into its partition (idempotent by key), then run there. */
  private async deliver(doc: OutboxDoc): Promise<void> {
    const target = this.dispatcher.newMessageDoc(doc.message);
    try {
      await this.o.container.items.create(target);
    } catch (e) {
      if (statusOf(e) !== 409) throw e;
    }
    await this.store.deleteIds(doc.pk, [doc.id]);
    if (!this.stopped)
      this.detach(
        `Instance '${target.instanceId}'`,
        this.dispatcher.schedule(target.instanceId, { message: target }),
      );
  }

  /** Work a crashed host (or a checkpointed page) left: timers coming due, expired claims, outbox, stages. */
  private async scan(): Promise<void> {
    const every = this.o.timerScanIntervalMs ?? TaskHubDefaults.timerScanIntervalMs;
    const now = this.clock.now();
    const found = await this.store.scanPending(now, now + 2 * every);
    for (const t of found.timers) this.timers.offer(t);
    for (const a of found.activities) await this.activities.offerStored(a);
    for (const o of found.outbox) this.detach(`Delivering ${o.id}`, this.deliver(o as OutboxDoc));
    for (const i of found.claims) this.watchClaim(i.instanceId, i.claim);
    for (const i of found.staged)
      this.detach(`Instance '${i.instanceId}'`, this.dispatcher.schedule(i.instanceId));
  }

  // ---- client ----------------------------------------------------------------------------------------------

  /** Wakes the instance's waiters; `lastUpdatedTime` is the newest this host knows of it. */
  private notify(instanceId: string, lastUpdatedTime?: string) {
    const known = this.lastUpdated.get(instanceId);
    // ISO 8601 times of one format compare as strings; the feed may bring an older copy than a commit here.
    if (lastUpdatedTime !== undefined && (known === undefined || lastUpdatedTime > known)) {
      this.lastUpdated.delete(instanceId);
      this.lastUpdated.set(instanceId, lastUpdatedTime);
      if (this.lastUpdated.size > LAST_UPDATED_REMEMBERED)
        this.lastUpdated.delete(this.lastUpdated.keys().next().value as string);
    }
    for (const w of this.waiters.get(instanceId) ?? []) w();
  }

  private async readInstance(instanceId: string): Promise<InstanceDoc | undefined> {
    return this.store.readInstance(instanceId);
  }

  async startNew(name: string, options: { instanceId?: string; input?: string | null }) {
    const instanceId = validateInstanceId(options.instanceId ?? randomUUID().replaceAll("-", ""));
    checkPayload(options.input, "The orchestration input", this.limits.maxPayloadBytes);
    const executionId = randomUUID().replaceAll("-", "");
    const at = new Date(this.clock.now()).toISOString();
    const pk = this.store.pk(instanceId);
    const pending: InstanceDoc = {
      id: INSTANCE_ID,
      pk,
      kind: "instance",
      hub: this.hubName,
      instanceId,
      executionId,
      name,
      input: options.input ?? null,
      status: "Pending",
      output: null,
      customStatus: null,
      createdTime: at,
      lastUpdatedTime: at,
      engine: {},
      historyChunks: 0,
    };
    // The start rides on the instance document (one write); its work item applies it and clears it.
    pending.start = {
      key: `start-${executionId}`,
      instanceId,
      event: { EventType: HistoryEventType.ExecutionStarted, EventId: -1, IsPlayed: false, Timestamp: at },
      start: { name, input: options.input ?? null, executionId },
    };
    let r = await this.store.batch(pk, [
      { operationType: BulkOperationType.Create, resourceBody: asJson(pending) },
    ]);
    const created = r.ok;
    if (!r.ok && r.status === 409) {
      // It exists: a finished instance is restarted (its old history is garbage, deleted by the next work item).
      const current = await this.readInstance(instanceId);
      if (current && !isTerminal(current.status)) {
        throw new TaskHubError(
          `An orchestration instance with the id '${instanceId}' already exists and is ${current.status}.`,
          409,
          "InstanceExists",
        );
      }
      r = current
        ? await this.store.batch(pk, [
            {
              operationType: BulkOperationType.Replace,
              id: INSTANCE_ID,
              resourceBody: asJson(pending),
              ifMatch: current._etag ?? "",
            },
          ])
        : r;
    }
    if (!r.ok) {
      throw new TaskHubError(
        `The orchestration instance '${instanceId}' was created or changed concurrently; not started.`,
        409,
        "InstanceExists",
      );
    }
    if (!this.stopped) {
      // What this host just wrote is the instance (a new one has nothing else): its first work item reads nothing.
      if (created) this.dispatcher.prime(instanceId, snapshotOf([{ ...pending, _etag: r.etag }]));
      else this.dispatcher.forget(instanceId);
      this.detach(`Instance '${instanceId}'`, this.dispatcher.schedule(instanceId));
    }
    this.notify(instanceId);
    return { instanceId };
  }

  private toStatus(inst: InstanceDoc, history?: unknown[], showInput = true): InstanceStatus {
    const parse = (t: string | null) => (t === null || t === undefined ? null : JSON.parse(t));
    return {
      name: inst.name,
      instanceId: inst.instanceId,
      runtimeStatus: runtimeStatusOf(inst.status),
      input: showInput ? parse(inst.input) : null,
      customStatus: parse(inst.customStatus),
      output: parse(inst.output),
      createdTime: inst.createdTime,
      lastUpdatedTime: inst.lastUpdatedTime,
      ...(history ? { historyEvents: history } : {}),
    };
  }

  async getStatus(
    instanceId: string,
    options: { showHistory?: boolean; showHistoryOutput?: boolean; showInput?: boolean } = {},
  ): Promise<InstanceStatus | undefined> {
    validateInstanceId(instanceId);
    if (options.showHistory) {
      const snap = await this.store.readPartition(instanceId);
      if (!snap.instance) return undefined;
      return this.toStatus(
        snap.instance,
        historyView(snap.history, options.showHistoryOutput === true),
        options.showInput !== false,
      );
    }
    const inst = await this.readInstance(instanceId);
    return inst ? this.toStatus(inst, undefined, options.showInput !== false) : undefined;
  }

  async list(filter: InstanceFilter): Promise<{ instances: InstanceStatus[]; continuationToken?: string }> {
    const iterator = this.o.container.items.query<InstanceDoc>(instancesQuery(this.hubName, filter), {
      maxItemCount: filter.top ?? 100,
      continuationToken: filter.continuationToken,
    });
    const page = await iterator.fetchNext();
    return {
      instances: page.resources.map((doc) => this.toStatus(doc, undefined, filter.showInput !== false)),
      ...(page.continuationToken ? { continuationToken: page.continuationToken } : {}),
    };
  }

  private async send(
    instanceId: string,
    event: HistoryEvent,
    keyPrefix: string,
    allowed: (status: OrchestrationState["status"]) => boolean,
  ): Promise<"ok" | "notFound" | "notRunning"> {
    validateInstanceId(instanceId);
    const inst = await this.readInstance(instanceId);
    if (!inst) return "notFound";
    if (!allowed(inst.status)) return "notRunning";
    const message: InstanceMessage = { key: `${keyPrefix}-${randomUUID()}`, instanceId, event };
    const doc: MessageDoc = this.dispatcher.newMessageDoc(message);
    await this.o.container.items.create(doc);
    if (!this.stopped)
      this.detach(`Instance '${instanceId}'`, this.dispatcher.schedule(instanceId, { message: doc }));
    return "ok";
  }

  private event(type: HistoryEvent["EventType"], fields: Record<string, unknown>): HistoryEvent {
    return {
      EventType: type,
      EventId: -1,
      IsPlayed: false,
      Timestamp: new Date(this.clock.now()).toISOString(),
      ...fields,
    };
  }

  raiseEvent(instanceId: string, eventName: string, input: string | null) {
    checkPayload(input, `The data of event '${eventName}'`, this.limits.maxPayloadBytes);
    return this.send(
      instanceId,
      this.event(HistoryEventType.EventRaised, { Name: eventName, Input: input }),
      "event",
      (s) => !isTerminal(s),
    );
  }

  terminate(instanceId: string, reason: string | null) {
    const input = reason === null ? null : JSON.stringify(reason);
    checkPayload(input, "The termination reason", this.limits.maxPayloadBytes);
    return this.send(
      instanceId,
      this.event(HistoryEventType.ExecutionTerminated, { Input: input }),
      "terminate",
      (s) => !isTerminal(s),
    );
  }

  suspend(instanceId: string, reason: string | null) {
    checkPayload(
      reason === null ? null : JSON.stringify(reason),
      "The suspend reason",
      this.limits.maxPayloadBytes,
    );
    return this.send(
      instanceId,
      this.event(HistoryEventType.ExecutionSuspended, { Reason: reason }),
      "suspend",
      (s) => s === "Running" || s === "Pending" || s === "Suspended",
    );
  }

  resume(instanceId: string, reason: string | null) {
    checkPayload(
      reason === null ? null : JSON.stringify(reason),
      "The resume reason",
      this.limits.maxPayloadBytes,
    );
    return this.send(
      instanceId,
      this.event(HistoryEventType.ExecutionResumed, { Reason: reason }),
      "resume",
      (s) => s === "Suspended" || s === "Running",
    );
  }

  /**
   * Deletes a finished instance and everything of it, in steps of at most 100 operations (the instance document
   * last, If-Match; a repeat continues where a failed one stopped); 0 when it does not exist or is still running.
   */
  async purge(instanceId: string): Promise<number> {
    validateInstanceId(instanceId);
    const pk = this.store.pk(instanceId);
    for (let attempt = 0; attempt < 5; attempt++) {
      const snap = await this.store.readPartition(instanceId);
      const inst = snap.instance;
      if (!inst || !isTerminal(inst.status)) return 0;
      await this.store.deleteIds(
        pk,
        [...snap.ids].filter((id) => id !== INSTANCE_ID),
      );
      const r = await this.o.container
        .item(INSTANCE_ID, pk)
        .delete({ accessCondition: { type: "IfMatch", condition: inst._etag ?? "" } })
        .then(
          () => ({ ok: true as const }),
          (e: unknown) => ({ ok: false as const, status: statusOf(e) }),
        );
      if (!r.ok && r.status !== 404 && r.status !== 412)
        throw new Error(`Purging '${instanceId}' failed with ${r.status}.`);
      if (r.ok || r.status === 404) {
        this.dispatcher.forget(instanceId);
        this.timers.cancelPartition(pk);
        this.notify(instanceId);
        return r.ok ? 1 : 0;
      }
    }
    throw new TaskHubError(
      `The instance '${instanceId}' kept changing while it was purged; try again.`,
      409,
      "Conflict",
    );
  }

  async purgeMany(filter: InstanceFilter): Promise<number> {
    let purged = 0;
    let continuationToken: string | undefined;
    do {
      const page = await this.list({ ...filter, continuationToken, top: 100 });
      for (const s of page.instances) purged += await this.purge(s.instanceId);
      continuationToken = page.continuationToken;
    } while (continuationToken);
    return purged;
  }

  /**
   * Resolves when the instance may have changed (TaskHubClient.waitForChange): at once when this host knows a newer
   * `lastUpdatedTime` than `since`, on this host's commits and the feed's copies of the instance, else after
   * DURABLE_WAIT_POLL_MS (another host's progress) or the timeout. Reads nothing; leaves nothing behind.
   */
  async waitForChange(
    instanceId: string,
    timeoutMs: number,
    signal?: AbortSignal,
    since?: string,
  ): Promise<void> {
    const known = this.lastUpdated.get(instanceId);
    if (since !== undefined && known !== undefined && known > since) return;
    if (signal?.aborted || this.closed) return;
    const poll = this.o.waitPollMs ?? TaskHubDefaults.waitPollMs;
    const woken = new AbortController();
    const wake = () => woken.abort();
    const set = this.waiters.get(instanceId) ?? new Set<() => void>();
    this.waiters.set(instanceId, set);
    set.add(wake);
    signal?.addEventListener("abort", wake, { once: true });
    try {
      await systemClock.sleep(Math.min(poll, Math.max(0, timeoutMs)), woken.signal);
    } finally {
      set.delete(wake);
      if (set.size === 0) this.waiters.delete(instanceId);
      signal?.removeEventListener("abort", wake);
    }
  }

  /** Live waiters (tests: nothing is left behind). */
  get waiterCount(): number {
    let n = 0;
    for (const s of this.waiters.values()) n += s.size;
    return n;
  }
}
