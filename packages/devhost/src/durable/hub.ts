import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { type Clock, systemClock } from "@cosmos-feed/core/clock";
import { errorMessage } from "../errorMessage.js";
import { ActivityWorker } from "./activities.js";
import type { DispatchContext, DispatchFeed, TaskHubBackend } from "./backend.js";
import { TaskHubClientOperations } from "./client-operations.js";
import { type CommittedWork, OrchestrationDispatcher } from "./dispatcher.js";
import type { ActivityDoc, AnyDoc, MessageDoc, OutboxDoc, PartitionSnapshot, TimerDoc } from "./documents.js";
import { partitionKeyOf } from "./documents.js";
import { applyMessages } from "./engine.js";
import { withEntities } from "./entity-engine.js";
import { withHttpActivity } from "./http-activity.js";
import { type LogLevel, TaskHubDefaults, type TaskHubOptions } from "./hub-options.js";
import { timerFiredMessage } from "./protocol.js";
import { TimerService } from "./timers.js";
import type { EntityFilter, HistoryEvent, InstanceFilter, TaskHubClient } from "./types.js";

export { TaskHubError, validateInstanceId } from "./errors.js";
export { type LogLevel, TaskHubDefaults, type TaskHubOptions } from "./hub-options.js";
export { historyView, runtimeStatusOf } from "./status-view.js";

/**
 * The Durable Task protocol's task hub (docs/durable-design.md): the wiring of a storage backend (backend.ts: Cosmos
 * DB or memory), the orchestration dispatcher (dispatcher.ts), the activity worker (activities.ts) and the timers
 * (timers.ts), with the backend's dispatch feed as the durable path between hosts, and the client operations
 * (TaskHubClient). Whoever writes work runs it at once on its own host; the feed and a periodic scan catch what a
 * crashed or other host left.
 */

/**
 * The dev host's durable task hub, composed as durabletask-go's task hub is: the client operations
 * (client-operations.ts), the orchestration dispatcher, the activity worker and the timers over one backend, and the
 * dispatch of orchestrations, activities, entities and timers on the backend's dispatch feed. It is a
 * `TaskHubClient` by handing each client call to its client operations.
 */
export class TaskHub implements TaskHubClient {
  /** The task hub's name (host.json `extensions.durableTask.hubName`). */
  readonly hubName: string;
  /**
   * The client operations (start, status, events, purge, waits): what this hub's TaskHubClient calls do.
   * @internal The hub's parts: stripped from the package's .d.ts (`stripInternal`); use the hub's own methods.
   */
  readonly client: TaskHubClientOperations;
  private readonly o: TaskHubOptions;
  /** Where the hub's documents are (tests and tools read instances through it as the hub does). */
  readonly backend: TaskHubBackend;
  private readonly clock: Clock;
  private readonly owner: string;
  /**
   * Runs orchestration and entity work items.
   * @internal The hub's parts: stripped from the package's .d.ts.
   */
  readonly dispatcher: OrchestrationDispatcher;
  private readonly activities: ActivityWorker;
  private readonly timers: TimerService;
  private feed: DispatchFeed | undefined;
  private readonly background = new Set<Promise<unknown>>();
  private scanLoop: AbortController | undefined;
  private readonly watchedClaims = new Set<string>();
  /** Until start(), a hub is a client only: it writes, another host runs the work. */
  private stopped = true;

  /** A hub over `options.backend`: a client only until {@link TaskHub.start} starts its dispatch. */
  constructor(options: TaskHubOptions) {
    const setting = <K extends keyof typeof TaskHubDefaults>(k: K): number =>
      (options as unknown as Record<string, number | undefined>)[k] ?? TaskHubDefaults[k];
    this.hubName = options.hubName;
    this.backend = options.backend;
    this.clock = options.clock ?? systemClock;
    this.client = new TaskHubClientOperations({
      hubName: options.hubName,
      backend: options.backend,
      clock: this.clock,
      limits: {
        maxPayloadBytes: setting("maxPayloadBytes"),
        ...(options.defaultVersion !== undefined ? { defaultVersion: options.defaultVersion } : {}),
      },
      waitPollMs: setting("waitPollMs"),
      hooks: {
        startHere: (pending) =>
          this.stopped
            ? Promise.resolve(undefined)
            : this.dispatcher.startHere(pending, setting("startEpisodeWaitMs")),
        started: (id, snapshot) => this.started(id, snapshot),
        messageWritten: (id, doc) => this.messageWritten(id, doc),
        purged: (id) => this.purged(id),
        newMessageDoc: (message) => this.dispatcher.newMessageDoc(message),
      },
    });
    this.o = options;
    this.owner = `${options.instanceName ?? hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    const v = <K extends keyof typeof TaskHubDefaults>(k: K): number =>
      (options as unknown as Record<string, number | undefined>)[k] ?? TaskHubDefaults[k];
    const log = (level: LogLevel, message: string) => this.log(level, message);
    this.dispatcher = new OrchestrationDispatcher({
      backend: this.backend,
      hub: this.hubName,
      clock: this.clock,
      owner: this.owner,
      heldLeases: () => this.feed?.ownedLeaseTokens() ?? [],
      apply: withEntities(options.applyMessages ?? applyMessages, options.invokeEntity),
      invoke: options.invokeOrchestrator,
      maxConcurrent: v("maxConcurrentOrchestrations"),
      maxAttempts: v("maxWorkItemAttempts"),
      maxPayloadBytes: v("maxPayloadBytes"),
      ...(options.defaultVersion !== undefined ? { defaultVersion: options.defaultVersion } : {}),
      activityLockMs: v("activityLockMs"),
      committed: (w) => this.afterCommit(w),
      log,
    });
    this.activities = new ActivityWorker({
      backend: this.backend,
      clock: this.clock,
      owner: this.owner,
      lockMs: v("activityLockMs"),
      maxConcurrent: v("maxConcurrentActivities"),
      maxPayloadBytes: v("maxPayloadBytes"),
      invoke: withHttpActivity(options.invokeActivity, {
        timeoutMs: v("httpTimeoutMs"),
        maxPayloadBytes: v("maxPayloadBytes"),
        ...(options.getHttpToken ? { getToken: options.getHttpToken } : {}),
      }),
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
    const tracked = p.catch((e: unknown) => this.log("warning", `${what}: ${errorMessage(e)}`));
    this.background.add(tracked);
    void tracked.finally(() => this.background.delete(tracked));
  }

  /** Starts dispatch: the backend's dispatch feed (from its beginning) and the pending-work scan. */
  async start(): Promise<void> {
    this.stopped = false;
    this.client.open();
    const o = this.o;
    this.feed = this.backend.openDispatch((docs, context) => this.dispatch(docs, context), {
      pollDelayMs: o.feedPollDelayMs ?? TaskHubDefaults.feedPollDelayMs,
      ...(o.instanceName ? { instanceName: o.instanceName } : {}),
      ...(o.leaseAcquireIntervalMs ? { leaseAcquireIntervalMs: o.leaseAcquireIntervalMs } : {}),
      ...(o.leaseExpirationIntervalMs ? { leaseExpirationIntervalMs: o.leaseExpirationIntervalMs } : {}),
      ...(o.leaseRenewIntervalMs ? { leaseRenewIntervalMs: o.leaseRenewIntervalMs } : {}),
      error: (e) => this.log("warning", `Durable task hub dispatch: ${String(e)}`),
      leaseAcquired: (token) => this.log("debug", `Dispatch lease ${token} acquired.`),
      leaseLost: (token, reason) => {
        this.dispatcher.leaseLost();
        if (reason !== "released")
          this.log(
            "information",
            `Dispatch lease ${token} lost (${reason}): its instances' work goes to the new owner.`,
          );
      },
    });
    await this.feed.start();
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

  /**
   * Where its dispatch feed keeps its leases — the lease prefix, this host's owner name once dispatch runs, the
   * expiration — so that the dev host dashboard lists them with the triggers' leases; undefined for a backend whose
   * feed has no leases (memory).
   */
  get dispatchLeases():
    | { prefix: string; owner: string | undefined; leaseExpirationIntervalMs: number }
    | undefined {
    const leases = this.feed?.leases;
    if (!leases) return undefined;
    return { ...leases, owner: this.stopped ? undefined : this.feed?.instanceName };
  }

  /**
   * Stops dispatch: running activities hand their results on, the dispatcher records the results it holds and
   * gives its work items in flight DURABLE_STOP_WORK_ITEMS_MS (then abandons them: redone after the restart), and
   * last the processor hands its leases off. In that order, so that no step waits for one that waits for it: the
   * processor's stop waits for its pages, and a page waits for its work items.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.client.close();
    this.scanLoop?.abort();
    this.timers.stop();
    // Running activities record their results, within the grace: a hung one must not hold the stop (its claim
    // expires and it runs again elsewhere).
    const grace = this.o.stopGraceMs ?? TaskHubDefaults.stopGraceMs;
    const settled = (async () => {
      await this.activities.stop();
      await Promise.allSettled([...this.background]);
    })();
    await Promise.race([settled, systemClock.sleep(grace)]);
    await this.dispatcher.stop(this.o.stopWorkItemsMs ?? TaskHubDefaults.stopWorkItemsMs);
    await this.feed?.stop({ abortSignal: AbortSignal.timeout(grace) });
  }

  /** Stops without handing anything off (a crash, for tests). */
  async abandon(): Promise<void> {
    this.stopped = true;
    this.client.close();
    this.scanLoop?.abort();
    this.timers.stop();
    this.dispatcher.abandon();
    void this.activities.stop();
    await this.feed?.abandon();
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
  private async dispatch(docs: AnyDoc[], context: DispatchContext): Promise<void> {
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
          if (this.dispatcher.forget(doc.instanceId, doc._etag))
            work.push(this.dispatcher.schedule(doc.instanceId, { signal: context.signal }));
          this.client.notify(doc.instanceId, doc.lastUpdatedTime);
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
      if (l.sourceKind === "activity") this.activities.settled(this.pk(w.instanceId), l.sourceId);
    if (this.stopped) return;
    for (const a of w.activities) this.activities.offerClaimed(a);
    for (const t of w.timers) this.timers.offer(t);
    for (const id of w.canceledTimers) this.timers.cancel(this.pk(w.instanceId), id);
    if (w.terminal) this.timers.cancelPartition(this.pk(w.instanceId));
    for (const o of w.outbox) this.detach(`Delivering ${o.id}`, this.deliver(o));
    if (w.instance) this.client.notify(w.instanceId, w.instance.lastUpdatedTime);
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
          message: timerFiredMessage(doc, new Date(this.clock.now()).toISOString()),
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
    await this.backend.deliverOutbox(doc, target);
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
    const found = await this.backend.scanPending(now, now + 2 * every);
    for (const t of found.timers) this.timers.offer(t);
    for (const a of found.activities) await this.activities.offerStored(a);
    for (const o of found.outbox) this.detach(`Delivering ${o.id}`, this.deliver(o));
    for (const i of found.claims) this.watchClaim(i.instanceId, i.claim);
    for (const i of found.staged)
      this.detach(`Instance '${i.instanceId}'`, this.dispatcher.schedule(i.instanceId));
  }

  // ---- the client operations call back here (ClientHooks) --------------------------------------------------

  /** Hands a started instance to the dispatcher. */
  private started(instanceId: string, snapshot: PartitionSnapshot | undefined): void {
    if (this.stopped) return;
    if (snapshot) this.dispatcher.prime(instanceId, snapshot);
    else this.dispatcher.forget(instanceId);
    // Read afresh (no snapshot): with nothing to apply, the claim round takes up activities its commit claimed
    // for this host (a start whose first episode was stored after the start gave up on it).
    this.detach(
      `Instance '${instanceId}'`,
      this.dispatcher.schedule(instanceId, snapshot ? {} : { claim: true }),
    );
  }

  /** Schedules the instance a message was written for. */
  private messageWritten(instanceId: string, doc: MessageDoc): void {
    if (!this.stopped)
      this.detach(`Instance '${instanceId}'`, this.dispatcher.schedule(instanceId, { message: doc }));
  }

  /** Forgets a purged instance and cancels its timers. */
  private purged(instanceId: string): void {
    this.dispatcher.forget(instanceId);
    this.timers.cancelPartition(this.pk(instanceId));
  }

  private pk(instanceId: string): string {
    return partitionKeyOf(this.hubName, instanceId);
  }

  // ---- TaskHubClient: the client operations ------------------------------------------------------------------

  /** {@inheritDoc TaskHubClient.startNew} */
  startNew(name: string, options: { instanceId?: string; input?: string | null; version?: string }) {
    return this.client.startNew(name, options);
  }
  /** {@inheritDoc TaskHubClient.getStatus} */
  getStatus(
    instanceId: string,
    options?: { showHistory?: boolean; showHistoryOutput?: boolean; showInput?: boolean },
  ) {
    return this.client.getStatus(instanceId, options);
  }
  /** {@inheritDoc TaskHubClient.list} */
  list(filter: InstanceFilter) {
    return this.client.list(filter);
  }
  /** {@inheritDoc TaskHubClient.raiseEvent} */
  raiseEvent(instanceId: string, eventName: string, input: string | null) {
    return this.client.raiseEvent(instanceId, eventName, input);
  }
  /** {@inheritDoc TaskHubClient.terminate} */
  terminate(instanceId: string, reason: string | null) {
    return this.client.terminate(instanceId, reason);
  }
  /** {@inheritDoc TaskHubClient.suspend} */
  suspend(instanceId: string, reason: string | null) {
    return this.client.suspend(instanceId, reason);
  }
  /** {@inheritDoc TaskHubClient.resume} */
  resume(instanceId: string, reason: string | null) {
    return this.client.resume(instanceId, reason);
  }
  /** {@inheritDoc TaskHubClient.purge} */
  purge(instanceId: string) {
    return this.client.purge(instanceId);
  }
  /** {@inheritDoc TaskHubClient.purgeMany} */
  purgeMany(filter: InstanceFilter) {
    return this.client.purgeMany(filter);
  }
  /** {@inheritDoc TaskHubClient.signalEntity} */
  signalEntity(name: string, key: string, operation: string, input: string | null) {
    return this.client.signalEntity(name, key, operation, input);
  }
  /** {@inheritDoc TaskHubClient.readEntity} */
  readEntity(name: string, key: string): Promise<{ exists: boolean; state: string | undefined } | undefined> {
    return this.client.readEntity(name, key);
  }
  /** {@inheritDoc TaskHubClient.listEntities} */
  listEntities(filter: EntityFilter) {
    return this.client.listEntities(filter);
  }
  /** {@inheritDoc TaskHubClient.cleanEntityStorage} */
  cleanEntityStorage(options: { removeEmptyEntities: boolean; releaseOrphanedLocks: boolean }) {
    return this.client.cleanEntityStorage(options);
  }
  /** {@inheritDoc TaskHubClient.waitForChange} */
  waitForChange(instanceId: string, timeoutMs: number, signal?: AbortSignal, since?: string) {
    return this.client.waitForChange(instanceId, timeoutMs, signal, since);
  }
  /** Live waiters (tests: nothing is left behind). */
  get waiterCount(): number {
    return this.client.waiterCount;
  }
}
