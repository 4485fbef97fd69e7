import {
  type EntityStored,
  entityTriggerInput,
  parseEntitySchedulerId,
  readEntityReply,
} from "./entity-batch.js";
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
 * orchestration's operations apply once each and in the order it sent them (entity-order.ts).
 */

/** Runs the entity function once with the trigger's data: what it returned, or what it threw. Never throws. */
export type EntityInvoker = (
  entityName: string,
  input: ReturnType<typeof entityTriggerInput>,
) => Promise<{ returned: unknown } | { thrown: unknown }>;

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
      r.signals.forEach((s, i) => {
        const signalRequest: RequestWire = {
          id: derivedId(instanceId, request.id, "signal", i),
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
    const nowMs = now.getTime();
    const pending: { m: InstanceMessage; request: RequestWire }[] = [];
    for (const m of messages) {
      const e = m.event;
      let request: RequestWire | undefined;
      try {
        request =
          e.EventType === HistoryEventType.EventRaised && e.Name === "op"
            ? (JSON.parse(String(e.Input)) as RequestWire)
            : undefined;
      } catch {
        request = undefined;
      }
      if (!request || typeof request.op !== "string") {
        out.consumed.push(m.key);
        out.dropped.push({ key: m.key, reason: "not an entity operation" });
        continue;
      }
      pending.push({ m, request });
    }
    // In arrival order; one waiting for its sender's previous request is looked at again once another applied.
    for (let progressed = true; progressed; ) {
      progressed = false;
      for (let i = 0; i < pending.length; i++) {
        const { m, request } = pending[i] as { m: InstanceMessage; request: RequestWire };
        const order = orderOf(request, senders, Date.parse(String(m.event.Timestamp)), nowMs);
        if (order === "wait") continue;
        pending.splice(i--, 1);
        progressed = true;
        out.consumed.push(m.key);
        if (order === "duplicate") {
          out.dropped.push({ key: m.key, reason: "an entity operation applied already (delivered again)" });
          continue;
        }
        recordApplied(request, senders, nowMs);
        stored = await applyOne(request, stored);
      }
    }
    senders = pruneSenders(senders, nowMs);
    if (out.invocations > 0) {
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
        engine: { entity: { exists: stored.exists, state: stored.state ?? null, senders } },
      };
    }
    return out;
  };
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
