import {
  type ActivityClaim,
  type ActivityDoc,
  activityId,
  docBytes,
  historyChunks,
  historyId,
  type InstanceDoc,
  instanceDocOf,
  type MessageDoc,
  type OutboxDoc,
  outboxId,
  type PartitionSnapshot,
  partitionKeyOf,
  startAsMessage,
  type TimerDoc,
  timerId,
  type WorkDoc,
} from "./documents.js";
import { isTerminal } from "./engine.js";
import { DURABLE_LIMITS } from "./limits.js";
import { decodeProcessedInput } from "./protocol.js";
import {
  type ActivityWorkItem,
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type WorkItemResult,
} from "./types.js";

/**
 * What one work item's result writes (pure): the instance document, its new history chunks, the documents of the
 * work it scheduled, what it consumed or made moot — and the snapshot of the partition once that is stored, which
 * the dispatcher caches so the instance's next step reads nothing.
 */

export interface WorkItemPlan {
  body: InstanceDoc | undefined;
  upserts: WorkDoc[];
  deletes: string[];
  created: { activities: ActivityDoc[]; timers: TimerDoc[]; messages: MessageDoc[]; outbox: OutboxDoc[] };
  canceledTimers: string[];
  /** The previous execution's history chunks, once a new execution started (deleted after the commit). */
  staleHistory: string[];
  terminal: boolean;
  history: PartitionSnapshot["history"];
}

export function planWorkItem(a: {
  hub: string;
  instanceId: string;
  snap: PartitionSnapshot;
  result: WorkItemResult;
  /** The consumed message documents and the activity or timer documents the results end. */
  deletes: string[];
  /** The activities this host's commit claims, and until when. */
  owner: string;
  now: number;
  lockedUntil: number;
  newMessageDoc: (m: InstanceMessage) => MessageDoc;
}): WorkItemPlan {
  const { hub, instanceId, snap, result } = a;
  const pk = partitionKeyOf(hub, instanceId);
  const next = result.state;
  const deletes = [...a.deletes];
  const plan: WorkItemPlan = {
    body: undefined,
    upserts: [],
    deletes,
    created: { activities: [], timers: [], messages: [], outbox: [] },
    canceledTimers: [],
    staleHistory: [],
    terminal: next !== undefined && isTerminal(next.status),
    history: snap.history,
  };
  if (next) {
    const sameExecution = snap.instance !== undefined && snap.instance.executionId === next.executionId;
    const first = sameExecution ? (snap.instance?.historyChunks ?? 0) : 0;
    const events = sameExecution ? next.history.slice(snap.history.length) : next.history;
    const history = historyAfter(snap.instance, sameExecution, events);
    const chunks =
      history.flush.length > 0 ? historyChunks(hub, instanceId, next.executionId, first, history.flush) : [];
    plan.upserts.push(...chunks);
    plan.body = instanceDocOf(hub, next, first + chunks.length, undefined, history.tail);
    plan.history = next.history;
    if (!sameExecution && snap.instance) {
      const old = snap.instance;
      plan.staleHistory = Array.from({ length: old.historyChunks }, (_v, i) => historyId(old.executionId, i));
    }
  }
  const { created, body } = { created: plan.created, body: plan.body };
  for (const w of result.work) {
    if (w.kind === "activity") {
      // No document: the instance's claim covers it (set below), this host runs it.
      created.activities.push(claimedActivity(hub, w.item));
    } else if (w.kind === "timer") {
      created.timers.push({
        id: timerId(w.executionId, w.timerId),
        pk,
        kind: "timer",
        hub,
        instanceId,
        executionId: w.executionId,
        timerId: w.timerId,
        fireAt: w.fireAt,
        fireAtMs: Date.parse(w.fireAt),
      });
    } else if (w.kind === "cancelTimer") {
      const id = timerId(w.executionId, w.timerId);
      plan.canceledTimers.push(id);
      if (snap.ids.has(id) && !deletes.includes(id)) deletes.push(id);
    } else if (w.message.instanceId === instanceId) {
      // A new execution's start (continue-as-new) rides on the instance document: no document of its own.
      if (w.message.start && body && !body.start) body.start = w.message;
      else created.messages.push(a.newMessageDoc(w.message));
    } else {
      created.outbox.push({ id: outboxId(w.message.key), pk, kind: "outbox", hub, message: w.message });
    }
  }
  // A waiting start this work item did not apply stays with the instance.
  const waiting = snap.instance?.start;
  if (body && waiting && !result.consumed.includes(waiting.key)) body.start ??= waiting;
  if (body) {
    body.claim = claimAfter(
      next,
      snap.instance?.claim,
      created.activities.length > 0,
      a.owner,
      a.now,
      a.lockedUntil,
    );
    if (body.claim === undefined) delete body.claim;
  }
  plan.upserts.push(...created.timers, ...created.messages, ...created.outbox);
  if (plan.terminal) {
    // A finished orchestration's pending timers and activities are moot.
    for (const d of [...snap.timers, ...snap.activities]) if (!deletes.includes(d.id)) deletes.push(d.id);
  }
  return plan;
}

/**
 * Where a commit's new history events go (documents.ts, `historyTail`): appended to the instance document's tail
 * while the tail stays within DURABLE_LIMITS.inlineHistoryBytes; else the tail and the new events are written as
 * chunk documents and the tail is emptied. A new execution starts with no tail (the old one's is replaced with
 * its instance document).
 */
function historyAfter(
  instance: InstanceDoc | undefined,
  sameExecution: boolean,
  events: HistoryEvent[],
): { tail: { events: HistoryEvent[]; bytes: number }; flush: HistoryEvent[] } {
  const prior = sameExecution ? (instance?.historyTail ?? []) : [];
  const priorBytes = sameExecution && prior.length > 0 ? (instance?.historyTailBytes ?? docBytes(prior)) : 0;
  if (events.length === 0) return { tail: { events: prior, bytes: priorBytes }, flush: [] };
  // The events' JSON texts, as the tail holds them: the array's brackets and commas are left out.
  const bytes = docBytes(events) - 1 - events.length;
  if (priorBytes + bytes <= DURABLE_LIMITS.inlineHistoryBytes)
    return { tail: { events: [...prior, ...events], bytes: priorBytes + bytes }, flush: [] };
  return { tail: { events: [], bytes: 0 }, flush: [...prior, ...events] };
}

/** The partition as the store holds it once `plan` is committed (the instance's new etag given). */
export function snapshotAfter(snap: PartitionSnapshot, plan: WorkItemPlan, etag: string): PartitionSnapshot {
  const gone = new Set(plan.deletes);
  const instance = plan.body ? { ...plan.body, _etag: etag } : snap.instance;
  const next: PartitionSnapshot = {
    ...(instance ? { instance } : {}),
    history: plan.history,
    messages: [
      ...(instance?.start ? [startAsMessage(instance, instance.start)] : []),
      ...snap.messages.filter((m) => !m.virtual && !gone.has(m.id)),
      ...plan.created.messages,
    ],
    // Claimed activities have no documents: the snapshot lists stored ones only.
    activities: snap.activities.filter((d) => !gone.has(d.id)),
    timers: [...snap.timers.filter((d) => !gone.has(d.id)), ...plan.created.timers],
    outbox: [],
    stages: [],
    staleHistory: [],
    ids: new Set(),
  };
  for (const d of [...next.messages, ...next.activities, ...next.timers]) next.ids.add(d.id);
  return next;
}

/** An activity under its instance's claim: the in-memory work item the activity worker runs (never stored). */
export function claimedActivity(hub: string, item: ActivityWorkItem): ActivityDoc {
  return {
    id: activityId(item.executionId, item.taskScheduledId),
    pk: partitionKeyOf(hub, item.instanceId),
    kind: "activity",
    hub,
    item,
    virtual: true,
  };
}

/** The activities the current execution scheduled and has no result for (from its history). */
export function pendingActivities(state: OrchestrationState | undefined): ActivityWorkItem[] {
  if (!state) return [];
  const scheduled = new Map<number, HistoryEvent>();
  for (const e of state.history) {
    if (e.EventType === HistoryEventType.TaskScheduled) scheduled.set(e.EventId, e);
    else if (e.EventType === HistoryEventType.TaskCompleted || e.EventType === HistoryEventType.TaskFailed)
      scheduled.delete(Number(e.TaskScheduledId));
  }
  return [...scheduled.values()].map((e) => ({
    instanceId: state.instanceId,
    executionId: state.executionId,
    taskScheduledId: e.EventId,
    name: String(e.Name),
    input: decodeProcessedInput((e.Input as string | null | undefined) ?? null),
  }));
}

/**
 * The claim an instance document carries after a commit: none when nothing is pending; this host's when it
 * scheduled activities (it runs them), when the claim was its own already (renewed), or when the last one expired;
 * else the other host's claim, unchanged (it still runs them).
 */
export function claimAfter(
  state: OrchestrationState | undefined,
  prior: ActivityClaim | undefined,
  scheduledHere: boolean,
  owner: string,
  now: number,
  until: number,
): ActivityClaim | undefined {
  if (!state || isTerminal(state.status) || pendingActivities(state).length === 0) return undefined;
  if (scheduledHere || !prior || prior.owner === owner || prior.until < now) return { owner, until };
  return prior;
}
