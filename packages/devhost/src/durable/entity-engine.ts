import {
  type EntityStored,
  type EntityTriggerInput,
  entityTriggerInput,
  parseEntitySchedulerId,
  readEntityReply,
} from "./entity-batch.js";
import {
  type LockRequestWire,
  lockGrantMessage,
  lockRequestMessage,
  ORPHANED_LOCK_RELEASE_ID,
  RELEASE_EVENT,
  REMEMBERED_LOCK_REQUESTS,
  readLockRequest,
  readRelease,
} from "./entity-locks.js";
import {
  orderOf,
  previousPosition,
  pruneSenders,
  recordApplied,
  type SendersApplied,
} from "./entity-order.js";
import { derivedId, historyEvent, toJsonText } from "./protocol.js";
import {
  type ApplyMessages,
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type OrchestratorAction,
  type OutboundWork,
  type WorkItemResult,
} from "./types.js";

/**
 * Durable entities on the task hub, as the extension's entity scheduler runs them: an entity is an instance whose id
 * is `@name@key`; an operation is a message to it (EventRaised "op" carrying the extension's RequestMessage:
 * `{id, op, signal, input, parent, parentExecution}`); a callEntity's answer is an EventRaised named after the
 * request id carrying `{result, exceptionType?}` (what durable-functions' ResponseMessage reads). A work item applies
 * the entity's pending operations in arrival order, one invocation each (entity-batch.ts: a throwing operation
 * fails alone, the state as it was), and commits the new state with the answers and signals, as any work item. An
 * orchestration's operations apply once each and in the order it sent them (entity-order.ts). Critical sections
 * (entity-locks.ts): a lock request takes the lock when its turn comes; while locked, only the holder's messages run
 * and the others wait, pending, in arrival order, until the holder's release.
 */

/** What an entity function's one run came to: the reply it returned, or what it threw. */
export type EntityOutcome = { returned: unknown } | { thrown: unknown };

/** Runs the entity function once with the trigger's data: what it returned, or what it threw. Never throws. */
export type EntityInvoker = (entityName: string, input: EntityTriggerInput) => Promise<EntityOutcome>;

export interface RequestWire {
  id: string;
  op: string;
  signal: boolean;
  input?: string;
  parent?: string;
  parentExecution?: string;
  /** The sending orchestration's position of this request and of its previous one to this entity (entity-order.ts). */
  pos?: number;
  prev?: number;
}

export const isEntityId = (instanceId: string): boolean => parseEntitySchedulerId(instanceId) !== undefined;

/** Who holds an entity's lock (SchedulerState.LockedBy) and under which lock request. */
export interface EntityLock {
  by: string;
  id: string;
}

/** The lock an entity's stored state records, if it is locked. */
export function entityLockOf(
  state: { engine?: Record<string, unknown> } | undefined,
): EntityLock | undefined {
  const e = state?.engine?.entity as { lockedBy?: unknown; lockId?: unknown } | undefined;
  return typeof e?.lockedBy === "string" && typeof e.lockId === "string"
    ? { by: e.lockedBy, id: e.lockId }
    : undefined;
}

/** The lock requests an entity took lately (their ids, newest last): one delivered again is dropped. */
const locksTakenOf = (state: { engine?: Record<string, unknown> } | undefined): string[] => {
  const taken = (state?.engine?.entity as { locksTaken?: unknown } | undefined)?.locksTaken;
  return Array.isArray(taken) ? taken.filter((t): t is string => typeof t === "string") : [];
};

/** The stored part of an entity (kept in the instance's `engine` field). */
export function entityStoredOf(state: { engine?: Record<string, unknown> } | undefined): EntityStored {
  const e = state?.engine?.entity as EntityStored | undefined;
  return e ? { exists: e.exists, state: e.state ?? undefined } : { exists: false, state: undefined };
}

/** The senders an entity remembers (entity-order.ts). */
const sendersOf = (state: { engine?: Record<string, unknown> } | undefined): SendersApplied => ({
  ...((state?.engine?.entity as { senders?: SendersApplied } | undefined)?.senders ?? {}),
});

/** An operation request to an entity, from an orchestration (callEntity, signalEntity) or a client (signal). */
export function entityOperationMessage(target: string, request: RequestWire, at: string): InstanceMessage {
  return {
    key: `entity-op-${request.id}`,
    instanceId: target,
    event: historyEvent(HistoryEventType.EventRaised, at, {
      Name: "op",
      Input: JSON.stringify(request),
    }),
  };
}

/**
 * An orchestration's CallEntity or SignalEntity action with sequence id `id`: its EventSent history event (the SDK
 * reads the request id from it to match the answer) and the message to the entity. `episode`: the events this
 * episode scheduled before it (its previous request to the same entity may be among them).
 */
export function entityActionWork(
  state: OrchestrationState,
  a: OrchestratorAction,
  id: number,
  signal: boolean,
  at: string,
  episode: HistoryEvent[] = [],
): { event: HistoryEvent; work: OutboundWork } {
  const target = String(a.instanceId);
  const prev = previousPosition(target, state.history, episode);
  const request: RequestWire = {
    id: derivedId(state.executionId, "entity", id),
    op: String(a.operation),
    signal,
    ...(a.input === undefined ? {} : { input: toJsonText(a.input) as string }),
    parent: state.instanceId,
    parentExecution: state.executionId,
    pos: id,
    ...(prev === undefined ? {} : { prev }),
  };
  return {
    event: historyEvent(
      HistoryEventType.EventSent,
      at,
      { InstanceId: target, Name: "op", Input: JSON.stringify(request) },
      id,
    ),
    work: { kind: "message", message: entityOperationMessage(target, request, at) },
  };
}

/** The work item of an entity: its pending operations in arrival order, one invocation each. */
export function applyEntityMessages(invoke: EntityInvoker): ApplyMessages {
  return async (current, messages, now, _invokeOrchestrator, limits) => {
    const at = now.toISOString();
    const instanceId = messages[0]?.instanceId ?? current?.instanceId ?? "";
    const self = parseEntitySchedulerId(instanceId) ?? { name: "", key: "" };
    const out: WorkItemResult = {
      state: current,
      newEvents: [],
      work: [],
      consumed: [],
      dropped: [],
      invocations: 0,
    };
    /** Runs one operation on the state as it is: its answer to a caller, its signals; the state it leaves. */
    const applyOne = async (request: RequestWire, before: EntityStored) => {
      const op = { name: request.op, input: request.input, isSignal: request.signal };
      out.invocations++;
      const outcome = await invoke(self.name, entityTriggerInput(self, before, op));
      const r = readEntityReply(instanceId, op, before, outcome, limits.maxPayloadBytes);
      if (!request.signal && request.parent) {
        const response = r.result.isError
          ? { result: JSON.stringify(r.result.message), exceptionType: "Error" }
          : r.result.value === undefined
            ? {}
            : { result: r.result.value };
        out.work.push({
          kind: "message",
          message: {
            key: `entity-response-${request.id}`,
            instanceId: request.parent,
            ...(request.parentExecution ? { executionId: request.parentExecution } : {}),
            event: historyEvent(HistoryEventType.EventRaised, at, {
              Name: request.id,
              Input: JSON.stringify(response),
            }),
          },
        });
      }
      r.signals.forEach((s, n) => {
        const signalRequest: RequestWire = {
          id: derivedId(instanceId, request.id, "signal", n),
          op: s.name,
          signal: true,
          ...(s.input === undefined ? {} : { input: s.input }),
          parent: instanceId,
        };
        out.work.push({ kind: "message", message: entityOperationMessage(s.target, signalRequest, at) });
      });
      return r.next;
    };
    let stored = entityStoredOf(current);
    let senders = sendersOf(current);
    let lock = entityLockOf(current);
    let locksTaken = locksTakenOf(current);
    let lockChanged = false;
    const nowMs = now.getTime();
    // Pending messages in arrival order. What must wait — for a lock's release, or for its sender's previous request
    // (entity-order.ts) — stays in `queue`, unconsumed; after anything that may let it run (a release, an applied
    // request), the queue is looked at again from the start.
    const queue = [...messages];
    let i = 0;
    while (i < queue.length) {
      const m = queue[i] as InstanceMessage;
      const read = readEntityMessage(m);
      if (read.kind === "release" || read.kind === "bad") {
        queue.splice(i, 1);
        out.consumed.push(m.key);
        if (read.kind === "bad") {
          out.dropped.push({ key: m.key, reason: "not an entity operation" });
          continue;
        }
        const r = read.release;
        if (
          lock &&
          lock.by === r.parent &&
          (r.id === undefined || r.id === lock.id || r.id === ORPHANED_LOCK_RELEASE_ID)
        ) {
          lock = undefined;
          lockChanged = true;
          i = 0; // what waited for the lock runs now, in arrival order
        } else out.dropped.push({ key: m.key, reason: "a release of a lock this entity does not hold" });
        continue;
      }
      // While locked only the holder's operations run. Any lock request waits for the release — the holder's too:
      // its next section's request may overtake its release, or an old request come again (delivered twice).
      if (lock && (read.kind === "lock" || read.request.parent !== lock.by)) {
        i++;
        continue;
      }
      if (read.kind === "lock") {
        queue.splice(i, 1);
        out.consumed.push(m.key);
        if (locksTaken.includes(read.request.id)) {
          // Delivered again after it was taken (and maybe released): taking it again would lock for no one.
          out.dropped.push({ key: m.key, reason: `lock request ${read.request.id} was taken already` });
          continue;
        }
        // Its turn: this entity is locked by the requester; the request goes on to the next, or is granted.
        const next: LockRequestWire = { ...read.request, pos: read.request.pos + 1 };
        lock = { by: next.parent, id: next.id };
        locksTaken = [...locksTaken, next.id].slice(-REMEMBERED_LOCK_REQUESTS);
        lockChanged = true;
        out.work.push({
          kind: "message",
          message: next.pos < next.lockset.length ? lockRequestMessage(next, at) : lockGrantMessage(next, at),
        });
        continue;
      }
      const request = read.request;
      const order = orderOf(request, senders, Date.parse(String(m.event.Timestamp)), nowMs);
      if (order === "wait") {
        i++;
        continue;
      }
      queue.splice(i, 1);
      out.consumed.push(m.key);
      if (order === "duplicate") {
        out.dropped.push({ key: m.key, reason: "an entity operation applied already (delivered again)" });
        continue;
      }
      recordApplied(request, senders, nowMs);
      stored = await applyOne(request, stored);
      i = 0; // a request waiting for this one may run now
    }
    senders = pruneSenders(senders, nowMs);
    if (out.invocations > 0 || lockChanged) {
      out.state = {
        instanceId,
        executionId: current?.executionId ?? derivedId(instanceId, "entity"),
        name: self.name,
        input: null,
        status: "Running",
        output: null,
        customStatus: null,
        createdTime: current?.createdTime ?? at,
        lastUpdatedTime: at,
        history: [],
        engine: {
          entity: {
            exists: stored.exists,
            state: stored.state ?? null,
            senders,
            ...(lock ? { lockedBy: lock.by, lockId: lock.id } : {}),
            ...(locksTaken.length > 0 ? { locksTaken } : {}),
          },
        },
      };
    }
    return out;
  };
}

type EntityMessage =
  | { kind: "op"; request: RequestWire }
  | { kind: "lock"; request: LockRequestWire }
  | { kind: "release"; release: NonNullable<ReturnType<typeof readRelease>> }
  | { kind: "bad" };

/** What a message to an entity is: an operation, a lock request (an "op" with a lock set), a release. */
function readEntityMessage(m: InstanceMessage): EntityMessage {
  const e = m.event;
  if (e.EventType !== HistoryEventType.EventRaised) return { kind: "bad" };
  let input: unknown;
  try {
    input = JSON.parse(String(e.Input));
  } catch {
    return { kind: "bad" };
  }
  if (e.Name === RELEASE_EVENT) {
    const release = readRelease(input);
    return release ? { kind: "release", release } : { kind: "bad" };
  }
  if (e.Name !== "op") return { kind: "bad" };
  const lock = readLockRequest(input);
  if (lock) return lock.pos < lock.lockset.length ? { kind: "lock", request: lock } : { kind: "bad" };
  const request = input as RequestWire | null;
  return request && typeof request === "object" && typeof request.op === "string"
    ? { kind: "op", request }
    : { kind: "bad" };
}

const noEntities: EntityInvoker = async (name) => ({
  thrown: new Error(`No entity function '${name}' (df.app.entity) is registered.`),
});

/** The hub's work-item applier: entities (`@name@key`) by their rule, orchestrations by the engine's. */
export function withEntities(apply: ApplyMessages, invoke: EntityInvoker = noEntities): ApplyMessages {
  const entities = applyEntityMessages(invoke);
  return (state, messages, now, invokeOrchestrator, limits) =>
    isEntityId(messages[0]?.instanceId ?? state?.instanceId ?? "")
      ? entities(state, messages, now, invokeOrchestrator, limits)
      : apply(state, messages, now, invokeOrchestrator, limits);
}
