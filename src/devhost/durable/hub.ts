import { randomUUID } from "node:crypto";
import { BulkOperationType, type Container, type JSONObject, type OperationInput } from "@azure/cosmos";
import { type ChangeFeedProcessor, createChangeFeedProcessor } from "../../shared/changefeed/index.js";
import { applyMessage, isTerminal } from "./engine.js";
import { TaskHubError, validateInstanceId } from "./errors.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import {
  type ActivityInvoker,
  type ActivityWorkItem,
  type ApplyMessage,
  type HistoryEvent,
  HistoryEventType,
  type InstanceFilter,
  type InstanceMessage,
  type InstanceStatus,
  type OrchestrationState,
  type OrchestratorInvoker,
  type OutboundWork,
  type RuntimeStatus,
  type TaskHubClient,
} from "./types.js";

/**
 * A Cosmos DB storage backend for the Durable Task protocol (docs/durable-design.md): one container, everything of
 * an instance in its own logical partition (`pk` = "<hub>|<instanceId>"), an episode committed with one
 * transactional batch (instance doc If-Match, history chunk, consumed messages deleted, activity/timer/outbox docs
 * created), and dispatch through the container's change feed by the project's processor — several hosts share the
 * work (a partition's lease owner runs its episodes), a crash re-delivers what was not checkpointed.
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
  /** Change feed poll delay when nothing is new (ms); the hub wakes its own processor after each write. */
  feedPollDelayMs?: number;
  /** How often pending durable timers are looked for (ms): those of a crashed host or a checkpointed page. */
  timerScanIntervalMs?: number;
  /** Activities this host runs at a time (DURABLE_MAX_CONCURRENT_ACTIVITIES). */
  maxConcurrentActivities?: number;
  /** Lease timing of the dispatch processor (ms). */
  leaseAcquireIntervalMs?: number;
  leaseExpirationIntervalMs?: number;
  leaseRenewIntervalMs?: number;
  instanceName?: string;
  /** Replaces the engine (tests). */
  applyMessage?: ApplyMessage;
}

export const TaskHubDefaults = {
  feedPollDelayMs: DURABLE_HUB_SETTINGS.feedPollDelayMs.default,
  timerScanIntervalMs: DURABLE_HUB_SETTINGS.timerScanIntervalMs.default,
  maxConcurrentActivities: DURABLE_HUB_SETTINGS.maxConcurrentActivities.default,
} as const;

export { TaskHubError, validateInstanceId } from "./errors.js";

/**
 * The runtime status the HTTP API answers for an instance document's status: a ContinuedAsNew instance is Running
 * (its new execution has started), as the extension reports it.
 */
export function runtimeStatusOf(status: RuntimeStatus): RuntimeStatus {
  return status === "ContinuedAsNew" ? "Running" : status;
}

/**
 * The query over a hub's instance documents (kind "instance"): all of them, or those the filter's time range,
 * statuses and id prefix select; `fields` projects (`c.<field>`) instead of `SELECT *`. The task hub's `list` and
 * the dev host dashboard read instances with it; map each document's `status` with runtimeStatusOf.
 */
export function instancesQuery(
  hubName: string,
  filter: Pick<
    InstanceFilter,
    "createdTimeFrom" | "createdTimeTo" | "runtimeStatus" | "instanceIdPrefix"
  > = {},
  fields?: readonly string[],
): { query: string; parameters: { name: string; value: string | string[] }[] } {
  const where = ["c.kind = 'instance'", "c.hub = @hub"];
  const parameters: { name: string; value: string | string[] }[] = [{ name: "@hub", value: hubName }];
  if (filter.createdTimeFrom) {
    where.push("c.createdTime >= @from");
    parameters.push({ name: "@from", value: filter.createdTimeFrom });
  }
  if (filter.createdTimeTo) {
    where.push("c.createdTime <= @to");
    parameters.push({ name: "@to", value: filter.createdTimeTo });
  }
  if (filter.runtimeStatus?.length) {
    where.push("ARRAY_CONTAINS(@statuses, c.status)");
    parameters.push({ name: "@statuses", value: filter.runtimeStatus });
  }
  if (filter.instanceIdPrefix) {
    where.push("STARTSWITH(c.instanceId, @prefix)");
    parameters.push({ name: "@prefix", value: filter.instanceIdPrefix });
  }
  const select = fields ? fields.map((f) => `c.${f}`).join(", ") : "*";
  return { query: `SELECT ${select} FROM c WHERE ${where.join(" AND ")}`, parameters };
}

interface Doc {
  id: string;
  pk: string;
  kind: "instance" | "history" | "message" | "activity" | "timer" | "outbox";
  hub: string;
  _etag?: string;
}
interface InstanceDoc extends Doc, Omit<OrchestrationState, "history"> {
  kind: "instance";
  historyChunks: number;
}
interface HistoryDoc extends Doc {
  kind: "history";
  executionId: string;
  chunk: number;
  events: HistoryEvent[];
}
interface MessageDoc extends Doc {
  kind: "message";
  instanceId: string;
  seq: number;
  message: InstanceMessage;
}
interface ActivityDoc extends Doc {
  kind: "activity";
  item: ActivityWorkItem;
}
interface TimerDoc extends Doc {
  kind: "timer";
  instanceId: string;
  executionId: string;
  timerId: number;
  fireAt: string;
}
interface OutboxDoc extends Doc {
  kind: "outbox";
  message: InstanceMessage;
}
type AnyDoc = InstanceDoc | HistoryDoc | MessageDoc | ActivityDoc | TimerDoc | OutboxDoc;

/** Messages an episode consumes at most (keeps a commit within one transactional batch's 100 operations). */
const MAX_MESSAGES_PER_EPISODE = 40;
const BATCH_LIMIT = 100;
/**
 * Activities whose result this host recorded, remembered (newest) so that a change feed page still holding their
 * work item does not run them again: a page is dispatched right after it is read, far fewer completions apart.
 */
const FINISHED_ACTIVITIES_REMEMBERED = 10_000;

/** Our documents as the SDK's batch body type (they are plain JSON). */
const asJson = (d: object) => d as unknown as JSONObject;

const statusOf = (e: unknown) =>
  (e as { code?: number; statusCode?: number })?.code ?? (e as { statusCode?: number })?.statusCode;

export class CosmosTaskHub implements TaskHubClient {
  readonly hubName: string;
  private readonly c: Container;
  private readonly o: CosmosTaskHubOptions;
  private readonly apply: ApplyMessage;
  private processor: ChangeFeedProcessor<AnyDoc> | undefined;
  private readonly chains = new Map<string, Promise<void>>();
  /** Activities running on this host (started by its own commit or by its feed), by `<pk>/<id>`. */
  private readonly runningActivities = new Map<string, Promise<void>>();
  /** Activities whose result this host recorded (insertion order: the oldest are forgotten first). */
  private readonly finishedActivities = new Set<string>();
  private readonly armed = new Map<string, NodeJS.Timeout>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private activitySlots: number;
  private readonly slotWaiters: (() => void)[] = [];
  private scanTimer: NodeJS.Timeout | undefined;
  private seq = 0;
  private stopped = false;

  constructor(options: CosmosTaskHubOptions) {
    this.o = options;
    this.c = options.container;
    this.hubName = options.hubName;
    this.apply = options.applyMessage ?? applyMessage;
    this.activitySlots = options.maxConcurrentActivities ?? TaskHubDefaults.maxConcurrentActivities;
  }

  private log(level: LogLevel, message: string) {
    this.o.log?.(level, message);
  }

  private pk(instanceId: string): string {
    return `${this.hubName}|${instanceId}`;
  }

  /** Starts dispatch: the change feed processor (from the beginning of the feed) and the timer scan. */
  async start(): Promise<void> {
    this.stopped = false;
    const o = this.o;
    this.processor = createChangeFeedProcessor<AnyDoc>(
      {
        monitoredContainer: this.c,
        leaseContainer: o.leaseContainer,
        leaseContainerPrefix: `durable.${this.hubName}.`,
        startFromBeginning: true,
        feedPollDelay: o.feedPollDelayMs ?? TaskHubDefaults.feedPollDelayMs,
        ...(o.instanceName ? { instanceName: o.instanceName } : {}),
        ...(o.leaseAcquireIntervalMs ? { leaseAcquireInterval: o.leaseAcquireIntervalMs } : {}),
        ...(o.leaseExpirationIntervalMs ? { leaseExpirationInterval: o.leaseExpirationIntervalMs } : {}),
        ...(o.leaseRenewIntervalMs ? { leaseRenewInterval: o.leaseRenewIntervalMs } : {}),
        maxCheckpointDelay: 0,
      },
      (docs) => this.dispatch(docs),
    );
    this.processor.on("error", (e: unknown) =>
      this.log("warning", `Durable task hub dispatch: ${String(e)}`),
    );
    await this.processor.start();
    await this.scanTimers().catch((e: unknown) => this.log("warning", `Timer scan failed: ${String(e)}`));
    const every = o.timerScanIntervalMs ?? TaskHubDefaults.timerScanIntervalMs;
    const scan = () => {
      this.scanTimer = setTimeout(() => {
        void this.scanTimers()
          .catch((e: unknown) => this.log("warning", `Timer scan failed: ${String(e)}`))
          .finally(() => {
            if (!this.stopped) scan();
          });
      }, every);
      this.scanTimer.unref();
    };
    scan();
  }

  /** Stops dispatch: the processor hands its leases off; armed timers are dropped (their docs stay). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearTimeout(this.scanTimer);
    for (const t of this.armed.values()) clearTimeout(t);
    this.armed.clear();
    await this.processor?.stop({ abortSignal: AbortSignal.timeout(5_000) });
    // Activities this host started on its own (not awaited by a feed page) record their results before it stops.
    await Promise.allSettled([...this.runningActivities.values()]);
    await Promise.allSettled([...this.chains.values()]);
  }

  /** Stops without handing anything off (a crash, for tests). */
  async abandon(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearTimeout(this.scanTimer);
    for (const t of this.armed.values()) clearTimeout(t);
    await this.processor?.abandon();
  }

  private wake() {
    this.processor?.wake();
  }

  // ---- dispatch -------------------------------------------------------------------------------------------

  private async dispatch(docs: AnyDoc[]): Promise<void> {
    const instances = new Set<string>();
    const work: Promise<void>[] = [];
    for (const d of docs) {
      if (d.hub !== this.hubName) continue;
      if (d.kind === "message") instances.add(d.instanceId);
      else if (d.kind === "activity") work.push(this.activityFromFeed(d));
      else if (d.kind === "timer") this.arm(d);
      else if (d.kind === "outbox") work.push(this.deliver(d));
    }
    for (const id of instances) work.push(this.processInstance(id));
    // The page is checkpointed only once its effects are stored: a failure here makes the processor retry it.
    await Promise.all(work);
  }

  /** Runs episodes for `instanceId` until it has no message left that can apply (serialized per instance). */
  processInstance(instanceId: string): Promise<void> {
    const previous = this.chains.get(instanceId) ?? Promise.resolve();
    const run = previous.then(() => this.drain(instanceId));
    const tail = run.catch(() => undefined);
    this.chains.set(instanceId, tail);
    void tail.then(() => {
      if (this.chains.get(instanceId) === tail) this.chains.delete(instanceId);
    });
    return run;
  }

  private async readPartition(instanceId: string): Promise<AnyDoc[]> {
    const { resources } = await this.c.items
      .query<AnyDoc>(
        {
          query: "SELECT * FROM c WHERE c.pk = @pk",
          parameters: [{ name: "@pk", value: this.pk(instanceId) }],
        },
        { partitionKey: this.pk(instanceId) },
      )
      .fetchAll();
    return resources;
  }

  private static stateOf(docs: AnyDoc[]): { inst?: InstanceDoc; state?: OrchestrationState } {
    const inst = docs.find((d): d is InstanceDoc => d.kind === "instance");
    if (!inst) return {};
    const history = docs
      .filter((d): d is HistoryDoc => d.kind === "history" && d.executionId === inst.executionId)
      .sort((a, b) => a.chunk - b.chunk)
      .flatMap((d) => d.events);
    const { id: _id, pk: _pk, kind: _kind, hub: _hub, historyChunks: _c, ...rest } = inst;
    const state = { ...(rest as unknown as OrchestrationState), history };
    for (const k of Object.keys(state))
      if (k.startsWith("_")) delete (state as unknown as Record<string, unknown>)[k];
    return { inst, state };
  }

  private async drain(instanceId: string): Promise<void> {
    for (let round = 0; round < 1000 && !this.stopped; round++) {
      const docs = await this.readPartition(instanceId);
      const messages = docs
        .filter((d): d is MessageDoc => d.kind === "message")
        .sort((a, b) => a.seq - b.seq || a.id.localeCompare(b.id));
      if (messages.length === 0) return;
      const { inst, state: stored } = CosmosTaskHub.stateOf(docs);
      let state = stored;
      const consumed: MessageDoc[] = [];
      const work: OutboundWork[] = [];
      let remaining = messages.slice(0, MAX_MESSAGES_PER_EPISODE);
      let progress = true;
      while (progress && remaining.length > 0) {
        progress = false;
        const left: MessageDoc[] = [];
        for (const m of remaining) {
          const r = await this.apply(state, m.message, new Date(), this.o.invokeOrchestrator);
          if (!r.consumed) {
            left.push(m);
            continue;
          }
          progress = true;
          consumed.push(m);
          if (r.dropped)
            this.log("debug", `Instance '${instanceId}': message ${m.message.key} dropped: ${r.dropped}.`);
          if (r.state) state = r.state;
          work.push(...r.work);
        }
        remaining = left;
      }
      if (consumed.length === 0) return;
      const committed = await this.commit(instanceId, docs, inst, state, consumed, work);
      if (!committed) continue; // another host ran it: re-read
      this.notify(instanceId);
      this.wake();
      // Work for this host now, without waiting for the change feed (the feed is the durable path): each hop
      // through the feed costs a poll plus the slowest item of its page, several hops per orchestration.
      for (const w of work) {
        if (w.kind === "timer") this.arm(this.timerDoc(w));
        else if (w.kind === "activity") this.startActivityHere(this.activityDoc(instanceId, w.item));
      }
      if (
        messages.length <= consumed.length + (remaining.length > 0 ? remaining.length : 0) &&
        remaining.length > 0
      ) {
        return; // what is left cannot apply yet (suspended): the next message or resume brings it back
      }
    }
  }

  private timerDoc(w: Extract<OutboundWork, { kind: "timer" }>): TimerDoc {
    return {
      id: `timer-${w.executionId}-${w.timerId}`,
      pk: this.pk(w.instanceId),
      kind: "timer",
      hub: this.hubName,
      instanceId: w.instanceId,
      executionId: w.executionId,
      timerId: w.timerId,
      fireAt: w.fireAt,
    };
  }

  private activityDoc(instanceId: string, item: ActivityWorkItem): ActivityDoc {
    return {
      id: `activity-${item.executionId}-${item.taskScheduledId}`,
      pk: this.pk(instanceId),
      kind: "activity",
      hub: this.hubName,
      item,
    };
  }

  private messageDoc(message: InstanceMessage): MessageDoc {
    return {
      id: `msg-${message.key}`,
      pk: this.pk(message.instanceId),
      kind: "message",
      hub: this.hubName,
      instanceId: message.instanceId,
      seq: Date.now() * 1000 + (this.seq++ % 1000),
      message,
    };
  }

  /** Commits one episode; false when the instance changed meanwhile (another host). */
  private async commit(
    instanceId: string,
    docs: AnyDoc[],
    inst: InstanceDoc | undefined,
    state: OrchestrationState | undefined,
    consumed: MessageDoc[],
    work: OutboundWork[],
  ): Promise<boolean> {
    const pk = this.pk(instanceId);
    const creates: AnyDoc[] = [];
    const deletes: string[] = consumed.map((m) => m.id);
    let instanceOp: OperationInput | undefined;
    if (state) {
      const sameExecution = inst !== undefined && inst.executionId === state.executionId;
      const storedEvents = sameExecution ? (CosmosTaskHub.stateOf(docs).state?.history.length ?? 0) : 0;
      const chunk = sameExecution ? inst.historyChunks : 0;
      const events = state.history.slice(storedEvents);
      if (!sameExecution && inst) {
        for (const d of docs) if (d.kind === "history") deletes.push(d.id);
      }
      const { history: _h, ...rest } = state;
      const body: InstanceDoc = {
        ...rest,
        id: "instance",
        pk,
        kind: "instance",
        hub: this.hubName,
        historyChunks: chunk + (events.length > 0 ? 1 : 0),
      };
      if (events.length > 0) {
        creates.push({
          id: `history-${state.executionId}-${String(chunk).padStart(6, "0")}`,
          pk,
          kind: "history",
          hub: this.hubName,
          executionId: state.executionId,
          chunk,
          events,
        });
      }
      instanceOp = inst
        ? {
            operationType: BulkOperationType.Replace,
            id: "instance",
            resourceBody: asJson(body),
            ifMatch: inst._etag,
          }
        : { operationType: BulkOperationType.Create, resourceBody: asJson(body) };
    }
    const existing = new Set(docs.map((d) => d.id));
    for (const w of work) {
      if (w.kind === "activity") creates.push(this.activityDoc(instanceId, w.item));
      else if (w.kind === "timer") creates.push(this.timerDoc(w));
      else if (w.kind === "cancelTimer") {
        const id = `timer-${w.executionId}-${w.timerId}`;
        if (existing.has(id)) deletes.push(id);
        const armed = this.armed.get(`${pk}/${id}`);
        if (armed) clearTimeout(armed);
      } else if (w.message.instanceId === instanceId) creates.push(this.messageDoc(w.message));
      else {
        creates.push({
          id: `outbox-${randomUUID()}`,
          pk,
          kind: "outbox",
          hub: this.hubName,
          message: w.message,
        });
      }
    }
    const ops: OperationInput[] = [
      ...creates.map(
        (d) => ({ operationType: BulkOperationType.Upsert, resourceBody: asJson(d) }) as OperationInput,
      ),
      ...deletes.map((id) => ({ operationType: BulkOperationType.Delete, id }) as OperationInput),
    ];
    // The instance doc last: its If-Match commits the episode. Earlier batches (large fan-outs) only upsert
    // documents keyed by id, so a lost race re-running the episode writes the same documents again.
    const finalOps: OperationInput[] = [];
    while (ops.length > 0 && finalOps.length + ops.length > BATCH_LIMIT - 1) {
      const head = ops.splice(0, BATCH_LIMIT);
      if (head.some((op) => op.operationType === BulkOperationType.Delete)) {
        // Deletes go with the final batch; put them back and flush the upserts before them.
        const upserts = head.filter((op) => op.operationType !== BulkOperationType.Delete);
        ops.unshift(...head.filter((op) => op.operationType === BulkOperationType.Delete));
        if (upserts.length === 0) break;
        await this.batch(pk, upserts);
      } else await this.batch(pk, head);
    }
    finalOps.push(...ops);
    if (instanceOp) finalOps.push(instanceOp);
    if (finalOps.length === 0) return true;
    const res = await this.c.items.batch(finalOps, pk);
    const failed = (res.result ?? []).find((r) => r.statusCode >= 400 && r.statusCode !== 424);
    if (!failed) return true;
    if (failed.statusCode === 412 || failed.statusCode === 409 || failed.statusCode === 404) {
      this.log(
        "debug",
        `Instance '${instanceId}': episode commit lost a race (${failed.statusCode}); re-reading.`,
      );
      return false;
    }
    throw new Error(
      `Durable task hub: committing an episode of '${instanceId}' failed with ${failed.statusCode}.`,
    );
  }

  private async batch(pk: string, ops: OperationInput[]): Promise<void> {
    const res = await this.c.items.batch(ops, pk);
    const failed = (res.result ?? []).find((r) => r.statusCode >= 400);
    if (failed) throw new Error(`Durable task hub: a batch on '${pk}' failed with ${failed.statusCode}.`);
  }

  // ---- activities, timers, outbox ---------------------------------------------------------------------------

  private async slot(): Promise<() => void> {
    if (this.activitySlots > 0) this.activitySlots--;
    else await new Promise<void>((r) => this.slotWaiters.push(r));
    return () => {
      const next = this.slotWaiters.shift();
      if (next) next();
      else this.activitySlots++;
    };
  }

  /**
   * An activity the change feed delivers: run it, unless this host already runs it (then its page waits for that
   * run, so the page is checkpointed only once the result is stored; a failed run fails the page, which the
   * processor retries) or already recorded its result (the page was read before the work item was deleted).
   */
  private activityFromFeed(doc: ActivityDoc): Promise<void> {
    const key = `${doc.pk}/${doc.id}`;
    const what = `Activity '${doc.item.name}' of '${doc.item.instanceId}' (${doc.id})`;
    if (this.finishedActivities.has(key)) {
      this.log("debug", `${what} was recorded here already: the change feed's copy is skipped.`);
      return Promise.resolve();
    }
    const running = this.runningActivities.get(key);
    if (!running) return this.runActivity(doc);
    this.log("debug", `${what} runs here already: the change feed's page waits for it.`);
    return running;
  }

  /**
   * An activity the episode this host just committed scheduled: started now rather than one feed hop later. The
   * feed stays the durable path: if this host dies first, the feed (here or on another host) runs the work item.
   */
  private startActivityHere(doc: ActivityDoc): void {
    const key = `${doc.pk}/${doc.id}`;
    if (this.stopped || this.finishedActivities.has(key) || this.runningActivities.has(key)) return;
    this.runActivity(doc).catch((e: unknown) =>
      this.log("warning", `Activity '${doc.item.name}' of '${doc.item.instanceId}': ${String(e)}`),
    );
  }

  /** Runs an activity once per host at a time (registered before the first await), within the activity slots. */
  private runActivity(doc: ActivityDoc): Promise<void> {
    const key = `${doc.pk}/${doc.id}`;
    const run = this.invokeAndRecord(doc).finally(() => this.runningActivities.delete(key));
    this.runningActivities.set(key, run);
    return run;
  }

  private async invokeAndRecord(doc: ActivityDoc): Promise<void> {
    const key = `${doc.pk}/${doc.id}`;
    const release = await this.slot();
    try {
      const item = doc.item;
      const outcome = await this.o.invokeActivity(item);
      const base = {
        EventId: -1,
        IsPlayed: false,
        Timestamp: new Date().toISOString(),
        TaskScheduledId: item.taskScheduledId,
      };
      const event: HistoryEvent =
        "result" in outcome
          ? { ...base, EventType: HistoryEventType.TaskCompleted, Result: outcome.result ?? "null" }
          : {
              ...base,
              EventType: HistoryEventType.TaskFailed,
              Reason: outcome.failure.ErrorMessage,
              Details: outcome.failure.StackTrace ?? "",
              FailureDetails: outcome.failure,
            };
      const message = this.messageDoc({
        key: `task-${item.executionId}-${item.taskScheduledId}`,
        instanceId: item.instanceId,
        executionId: item.executionId,
        event,
      });
      // The completion and the work item's removal together: recorded once, whoever ran it.
      const res = await this.c.items.batch(
        [
          { operationType: BulkOperationType.Create, resourceBody: asJson(message) },
          { operationType: BulkOperationType.Delete, id: doc.id },
        ],
        doc.pk,
      );
      const failed = (res.result ?? []).find((r) => r.statusCode >= 400 && r.statusCode !== 424);
      if (failed && failed.statusCode !== 404 && failed.statusCode !== 409) {
        throw new Error(
          `Durable task hub: recording activity '${item.name}' failed with ${failed.statusCode}.`,
        );
      }
      if (failed?.statusCode === 409) {
        // Another run recorded it first; the work item may remain.
        await this.c
          .item(doc.id, doc.pk)
          .delete()
          .catch(() => undefined);
      }
      this.finishedActivities.add(key);
      if (this.finishedActivities.size > FINISHED_ACTIVITIES_REMEMBERED) {
        this.finishedActivities.delete(this.finishedActivities.values().next().value as string);
      }
      this.wake();
      // The next episode now, not one feed hop later (processInstance is serialized per instance; the feed's
      // later delivery of the result finds no message left and returns after one read).
      if (!this.stopped) {
        this.processInstance(item.instanceId).catch((e: unknown) =>
          this.log("warning", `Instance '${item.instanceId}' after activity '${item.name}': ${String(e)}`),
        );
      }
    } finally {
      release();
    }
  }

  private arm(doc: TimerDoc): void {
    const key = `${doc.pk}/${doc.id}`;
    if (this.armed.has(key) || this.stopped) return;
    const delay = Math.max(0, Date.parse(doc.fireAt) - Date.now());
    const timer = setTimeout(
      () => {
        void this.fire(doc)
          .catch((e: unknown) =>
            this.log("warning", `Timer ${doc.id} of '${doc.instanceId}' failed to fire: ${String(e)}`),
          )
          .finally(() => this.armed.delete(key));
      },
      Math.min(delay, 2 ** 31 - 1),
    );
    timer.unref();
    this.armed.set(key, timer);
  }

  private async fire(doc: TimerDoc): Promise<void> {
    const message = this.messageDoc({
      key: `timer-${doc.executionId}-${doc.timerId}`,
      instanceId: doc.instanceId,
      executionId: doc.executionId,
      event: {
        EventType: HistoryEventType.TimerFired,
        EventId: -1,
        IsPlayed: false,
        Timestamp: new Date().toISOString(),
        TimerId: doc.timerId,
        FireAt: doc.fireAt,
      },
    });
    await this.c.items.batch(
      [
        { operationType: BulkOperationType.Create, resourceBody: asJson(message) },
        { operationType: BulkOperationType.Delete, id: doc.id },
      ],
      doc.pk,
    );
    this.wake();
  }

  /** Arms every pending timer of the hub (those whose change feed page was checkpointed before a crash). */
  private async scanTimers(): Promise<void> {
    const { resources } = await this.c.items
      .query<TimerDoc>({
        query: "SELECT * FROM c WHERE c.kind = 'timer' AND c.hub = @hub",
        parameters: [{ name: "@hub", value: this.hubName }],
      })
      .fetchAll();
    for (const t of resources) this.arm(t);
  }

  private async deliver(doc: OutboxDoc): Promise<void> {
    try {
      await this.c.items.create(this.messageDoc(doc.message));
    } catch (e) {
      if (statusOf(e) !== 409) throw e;
    }
    await this.c
      .item(doc.id, doc.pk)
      .delete()
      .catch((e: unknown) => {
        if (statusOf(e) !== 404) throw e;
      });
    this.wake();
  }

  // ---- client ----------------------------------------------------------------------------------------------

  private notify(instanceId: string) {
    for (const w of this.waiters.get(instanceId) ?? []) w();
  }

  private async readInstance(instanceId: string): Promise<InstanceDoc | undefined> {
    const res = await this.c.item("instance", this.pk(instanceId)).read<InstanceDoc>();
    return res.statusCode === 404 ? undefined : res.resource;
  }

  async startNew(name: string, options: { instanceId?: string; input?: string | null }) {
    const instanceId = validateInstanceId(options.instanceId ?? randomUUID().replaceAll("-", ""));
    const current = await this.readInstance(instanceId);
    if (current && !isTerminal(current.status)) {
      throw new TaskHubError(
        `An orchestration instance with the id '${instanceId}' already exists and is ${current.status}.`,
        409,
        "InstanceExists",
      );
    }
    const executionId = randomUUID().replaceAll("-", "");
    const at = new Date().toISOString();
    const pk = this.pk(instanceId);
    const pending: InstanceDoc = {
      id: "instance",
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
    const start = this.messageDoc({
      key: `start-${executionId}`,
      instanceId,
      event: { EventType: HistoryEventType.ExecutionStarted, EventId: -1, IsPlayed: false, Timestamp: at },
      start: { name, input: options.input ?? null, executionId },
    });
    const ops: OperationInput[] = [
      current
        ? {
            operationType: BulkOperationType.Replace,
            id: "instance",
            resourceBody: asJson(pending),
            ifMatch: current._etag,
          }
        : { operationType: BulkOperationType.Create, resourceBody: asJson(pending) },
      { operationType: BulkOperationType.Create, resourceBody: asJson(start) },
    ];
    // A restart drops the old execution's history.
    if (current) {
      const docs = await this.readPartition(instanceId);
      for (const d of docs)
        if (d.kind === "history") ops.push({ operationType: BulkOperationType.Delete, id: d.id });
    }
    const res = await this.c.items.batch(ops, pk);
    const failed = (res.result ?? []).find((r) => r.statusCode >= 400 && r.statusCode !== 424);
    if (failed) {
      throw new TaskHubError(
        `The orchestration instance '${instanceId}' was created or changed concurrently; not started.`,
        409,
        "InstanceExists",
      );
    }
    this.notify(instanceId);
    this.wake();
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
      const { inst, state } = CosmosTaskHub.stateOf(await this.readPartition(instanceId));
      if (!inst || !state) return undefined;
      return this.toStatus(
        inst,
        historyView(state.history, options.showHistoryOutput === true),
        options.showInput !== false,
      );
    }
    const inst = await this.readInstance(instanceId);
    return inst ? this.toStatus(inst, undefined, options.showInput !== false) : undefined;
  }

  async list(filter: InstanceFilter): Promise<{ instances: InstanceStatus[]; continuationToken?: string }> {
    const iterator = this.c.items.query<InstanceDoc>(instancesQuery(this.hubName, filter), {
      maxItemCount: filter.top ?? 100,
      continuationToken: filter.continuationToken,
    });
    const page = await iterator.fetchNext();
    return {
      instances: page.resources.map((d) => this.toStatus(d, undefined, filter.showInput !== false)),
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
    await this.c.items.create(this.messageDoc({ key: `${keyPrefix}-${randomUUID()}`, instanceId, event }));
    this.wake();
    return "ok";
  }

  raiseEvent(instanceId: string, eventName: string, input: string | null) {
    const at = new Date().toISOString();
    return this.send(
      instanceId,
      {
        EventType: HistoryEventType.EventRaised,
        EventId: -1,
        IsPlayed: false,
        Timestamp: at,
        Name: eventName,
        Input: input,
      },
      "event",
      (s) => !isTerminal(s),
    );
  }

  terminate(instanceId: string, reason: string | null) {
    const at = new Date().toISOString();
    return this.send(
      instanceId,
      {
        EventType: HistoryEventType.ExecutionTerminated,
        EventId: -1,
        IsPlayed: false,
        Timestamp: at,
        Input: reason === null ? null : JSON.stringify(reason),
      },
      "terminate",
      (s) => !isTerminal(s),
    );
  }

  suspend(instanceId: string, reason: string | null) {
    const at = new Date().toISOString();
    return this.send(
      instanceId,
      {
        EventType: HistoryEventType.ExecutionSuspended,
        EventId: -1,
        IsPlayed: false,
        Timestamp: at,
        Reason: reason,
      },
      "suspend",
      (s) => s === "Running" || s === "Pending" || s === "Suspended",
    );
  }

  resume(instanceId: string, reason: string | null) {
    const at = new Date().toISOString();
    return this.send(
      instanceId,
      {
        EventType: HistoryEventType.ExecutionResumed,
        EventId: -1,
        IsPlayed: false,
        Timestamp: at,
        Reason: reason,
      },
      "resume",
      (s) => s === "Suspended" || s === "Running",
    );
  }

  /** Deletes a finished instance and everything of it; 0 when it does not exist or is still running. */
  async purge(instanceId: string): Promise<number> {
    validateInstanceId(instanceId);
    const docs = await this.readPartition(instanceId);
    const inst = docs.find((d): d is InstanceDoc => d.kind === "instance");
    if (!inst || !isTerminal(inst.status)) return 0;
    const pk = this.pk(instanceId);
    const ids = docs.filter((d) => d.kind !== "instance").map((d) => d.id);
    for (let i = 0; i < ids.length; i += BATCH_LIMIT - 1) {
      await this.batch(
        pk,
        ids.slice(i, i + BATCH_LIMIT - 1).map((id) => ({ operationType: BulkOperationType.Delete, id })),
      );
    }
    await this.c
      .item("instance", pk)
      .delete({ accessCondition: { type: "IfMatch", condition: inst._etag ?? "" } });
    this.notify(instanceId);
    return 1;
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

  async waitForChange(instanceId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const before = (await this.readInstance(instanceId))?._etag;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !signal?.aborted) {
      await new Promise<void>((resolve) => {
        const set = this.waiters.get(instanceId) ?? new Set();
        this.waiters.set(instanceId, set);
        const done = () => {
          clearTimeout(t);
          set.delete(done);
          resolve();
        };
        // Another host's commit is only seen by reading: poll, and wake early on this host's own commits.
        const t = setTimeout(done, Math.min(100, Math.max(0, deadline - Date.now())));
        set.add(done);
      });
      if ((await this.readInstance(instanceId))?._etag !== before) return;
    }
  }
}

/** The history as the extension's HTTP API shows it (showHistory): event type names, outputs only when asked. */
function historyView(history: HistoryEvent[], showOutput: boolean): unknown[] {
  const names = Object.fromEntries(Object.entries(HistoryEventType).map(([k, v]) => [v, k]));
  return history
    .filter(
      (e) =>
        e.EventType !== HistoryEventType.OrchestratorStarted &&
        e.EventType !== HistoryEventType.OrchestratorCompleted,
    )
    .map((e) => {
      const { EventType, EventId, IsPlayed: _p, Timestamp, Result, Input, ...rest } = e;
      return {
        EventType: names[EventType] ?? String(EventType),
        ...(EventId >= 0 ? { EventId } : {}),
        Timestamp,
        ...rest,
        ...(showOutput && Result !== undefined ? { Result } : {}),
        ...(Input !== undefined && EventType === HistoryEventType.ExecutionStarted ? { Input } : {}),
      };
    });
}
