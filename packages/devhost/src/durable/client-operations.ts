import { randomUUID } from "node:crypto";
import type { Clock } from "@cosmos-feed/core/clock";
import type { TaskHubBackend } from "./backend.js";
import {
  INSTANCE_ID,
  type InstanceDoc,
  type MessageDoc,
  type PartitionSnapshot,
  partitionKeyOf,
  snapshotOf,
} from "./documents.js";
import { isTerminal } from "./engine.js";
import { entitySchedulerId } from "./entity-batch.js";
import { entityOperationMessage, entityStoredOf, isEntityId } from "./entity-engine.js";
import { cleanEntityStorage, listEntities } from "./entity-queries.js";
import { TaskHubError, validateInstanceId } from "./errors.js";
import { checkPayload } from "./limits.js";
import { entityInstanceView, historyView, runtimeStatusOf } from "./status-view.js";
import {
  type CleanEntityStorageResult,
  type EngineLimits,
  type EntityFilter,
  type EntityStatus,
  type HistoryEvent,
  HistoryEventType,
  type InstanceFilter,
  type InstanceMessage,
  type InstanceStatus,
  type OrchestrationState,
  type TaskHubClient,
} from "./types.js";

/** Instances whose newest lastUpdatedTime a host remembers for waiting clients. */
const LAST_UPDATED_REMEMBERED = 10_000;

/**
 * What the client operations tell the hub that runs on this host (hub.ts): a hub that is not started ignores them
 * and is a client only.
 */
export interface ClientHooks {
  /**
   * A hub running here runs a new instance's first episode before anything is stored and creates the instance with
   * it (dispatcher startHere): "created", "exists", or undefined (the start is to be written alone).
   */
  startHere(pending: InstanceDoc): Promise<"created" | "exists" | undefined>;
  /** A start or restart was written (`snapshot`: what a new instance is, nothing else having been written). */
  started(instanceId: string, snapshot: PartitionSnapshot | undefined): void;
  /** A message for the instance was written. */
  messageWritten(instanceId: string, doc: MessageDoc): void;
  /** The instance and everything of it are gone. */
  purged(instanceId: string): void;
  /** A message document for `message`, numbered by the dispatcher (its `seq` orders the instance's messages). */
  newMessageDoc(message: InstanceMessage): MessageDoc;
}

export interface ClientOperationsOptions {
  hubName: string;
  backend: TaskHubBackend;
  clock: Clock;
  limits: EngineLimits;
  /** How often a waiting client reads again for another host's progress (DURABLE_WAIT_POLL_MS). */
  waitPollMs: number;
  hooks: ClientHooks;
}

/**
 * The task hub's client operations (TaskHubClient: start, status, list, raise event, terminate, suspend, resume,
 * purge, wait): what the HTTP API and the durableClient binding call. They write through the backend; the hub
 * (hub.ts) runs the work they write on its own host through its hooks, and tells them of the instances it commits
 * or sees change (`notify`), which is what wakes waiting clients.
 */
export class TaskHubClientOperations implements TaskHubClient {
  /** Waiting clients per instance. */
  private readonly waiters = new Map<string, Set<() => void>>();
  /** The newest lastUpdatedTime this host committed or saw per instance (waitForChange's `since`). */
  private readonly lastUpdated = new Map<string, string>();
  /** Set by close(): waiting clients return at once. */
  private closed = false;
  readonly hubName: string;
  private readonly backend: TaskHubBackend;
  private readonly clock: Clock;
  private readonly limits: EngineLimits;
  private readonly hooks: ClientHooks;

  constructor(private readonly o: ClientOperationsOptions) {
    this.hubName = o.hubName;
    this.backend = o.backend;
    this.clock = o.clock;
    this.limits = o.limits;
    this.hooks = o.hooks;
  }

  /** The hub stops: waits return at once (one waiting now returns at its next poll). */
  close(): void {
    this.closed = true;
  }

  /** The hub starts (again): waits wait. */
  open(): void {
    this.closed = false;
  }

  /** Wakes the instance's waiters; `lastUpdatedTime` is the newest this host knows of it. */
  notify(instanceId: string, lastUpdatedTime?: string): void {
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
    return this.backend.readInstance(instanceId);
  }

  private pk(instanceId: string): string {
    return partitionKeyOf(this.hubName, instanceId);
  }

  async startNew(name: string, options: { instanceId?: string; input?: string | null; version?: string }) {
    const version = options.version || this.limits.defaultVersion;
    const instanceId = validateInstanceId(options.instanceId ?? randomUUID().replaceAll("-", ""));
    checkPayload(options.input, "The orchestration input", this.limits.maxPayloadBytes);
    const executionId = randomUUID().replaceAll("-", "");
    const at = new Date(this.clock.now()).toISOString();
    const pk = this.pk(instanceId);
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
      start: { name, input: options.input ?? null, executionId, ...(version ? { version } : {}) },
    };
    // A hub running here creates the instance with its first episode (one write); else the start is written alone.
    if ((await this.hooks.startHere(pending)) === "created") {
      this.notify(instanceId);
      return { instanceId };
    }
    const created = await this.backend.createInstance(pending);
    let etag = created.created ? created.etag : undefined;
    if (!created.created) {
      const current = created.existing;
      if (current?.executionId === executionId) {
        // This very start, stored with its first episode by a commit that landed after startHere gave up on it.
        this.hooks.started(instanceId, undefined);
        this.notify(instanceId);
        return { instanceId };
      }
      // It exists: a finished instance is restarted (its old history is garbage, deleted by the next work item).
      if (current && !isTerminal(current.status)) {
        throw new TaskHubError(
          `An orchestration instance with the id '${instanceId}' already exists and is ${current.status}.`,
          409,
          "InstanceExists",
        );
      }
      const replaced = current ? await this.backend.replaceInstance(pending, current._etag ?? "") : undefined;
      if (!replaced?.replaced) {
        throw new TaskHubError(
          `The orchestration instance '${instanceId}' was created or changed concurrently; not started.`,
          409,
          "InstanceExists",
        );
      }
      etag = replaced.etag;
    }
    // What this host just wrote is the instance (a new one has nothing else): its first work item reads nothing.
    this.hooks.started(instanceId, created.created ? snapshotOf([{ ...pending, _etag: etag }]) : undefined);
    this.notify(instanceId);
    return { instanceId };
  }

  private toStatus(inst: InstanceDoc, history?: unknown[], showInput = true): InstanceStatus {
    const parse = (t: string | null) => (t === null || t === undefined ? null : JSON.parse(t));
    if (isEntityId(inst.instanceId)) {
      // An entity shows as the extension shows its entity scheduler: Running, the scheduler state as input.
      const lockedBy = (inst.engine?.entity as { lockedBy?: unknown } | undefined)?.lockedBy;
      const view = entityInstanceView({
        ...entityStoredOf(inst),
        ...(typeof lockedBy === "string" ? { lockedBy } : {}),
      });
      return {
        name: inst.name,
        instanceId: inst.instanceId,
        runtimeStatus: view.runtimeStatus,
        input: showInput ? view.input : null,
        customStatus: view.customStatus,
        output: null,
        createdTime: inst.createdTime,
        lastUpdatedTime: inst.lastUpdatedTime,
        ...(history ? { historyEvents: history } : {}),
      };
    }
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
      const snap = await this.backend.readInstanceState(instanceId);
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
    const page = await this.backend.queryInstances(filter);
    return {
      instances: page.items.map((doc) => this.toStatus(doc, undefined, filter.showInput !== false)),
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
    const doc: MessageDoc = this.hooks.newMessageDoc(message);
    await this.backend.addMessage(doc);
    this.hooks.messageWritten(instanceId, doc);
    return "ok";
  }

  async signalEntity(name: string, key: string, operation: string, input: string | null): Promise<void> {
    const instanceId = validateInstanceId(entitySchedulerId(name, key));
    checkPayload(input, `The input of entity operation '${operation}'`, this.limits.maxPayloadBytes);
    const at = new Date(this.clock.now()).toISOString();
    const message = entityOperationMessage(
      instanceId,
      { id: randomUUID(), op: operation, signal: true, ...(input === null ? {} : { input }) },
      at,
    );
    const doc: MessageDoc = this.hooks.newMessageDoc(message);
    await this.backend.addMessage(doc);
    this.hooks.messageWritten(instanceId, doc);
  }

  async readEntity(name: string, key: string) {
    const inst = await this.readInstance(validateInstanceId(entitySchedulerId(name, key)));
    return inst ? entityStoredOf(inst) : undefined;
  }

  listEntities(filter: EntityFilter): Promise<{ entities: EntityStatus[]; continuationToken?: string }> {
    return listEntities(this.backend, filter);
  }

  cleanEntityStorage(options: {
    removeEmptyEntities: boolean;
    releaseOrphanedLocks: boolean;
  }): Promise<CleanEntityStorageResult> {
    return cleanEntityStorage(
      {
        backend: this.backend,
        now: () => new Date(this.clock.now()),
        send: async (message) => {
          const doc = this.hooks.newMessageDoc(message);
          await this.backend.addMessage(doc);
          this.hooks.messageWritten(message.instanceId, doc);
        },
        removed: (instanceId) => {
          this.hooks.purged(instanceId);
          this.notify(instanceId);
        },
      },
      options,
    );
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
    for (let attempt = 0; attempt < 5; attempt++) {
      const snap = await this.backend.readInstanceState(instanceId);
      const inst = snap.instance;
      if (!inst || !isTerminal(inst.status)) return 0;
      const outcome = await this.backend.deleteInstance(snap);
      if (outcome !== "changed") {
        this.hooks.purged(instanceId);
        this.notify(instanceId);
        return outcome === "purged" ? 1 : 0;
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
    const poll = this.o.waitPollMs;
    const set = this.waiters.get(instanceId) ?? new Set<() => void>();
    this.waiters.set(instanceId, set);
    // A plain timer and callback (real time, as the poll is): an AbortController per wait made an exception
    // object at every wake-up.
    let wake = () => {};
    const woken = new Promise<void>((resolve) => {
      const timer = setTimeout(() => wake(), Math.min(poll, Math.max(0, timeoutMs)));
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    set.add(wake);
    signal?.addEventListener("abort", wake, { once: true });
    try {
      await woken;
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
