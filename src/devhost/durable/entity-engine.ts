import {
  type EntityStored,
  entityTriggerInput,
  parseEntitySchedulerId,
  readEntityReply,
} from "./entity-batch.js";
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
 * fails alone, the state as it was), and commits the new state with the answers and signals, as any work item.
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
}

export const isEntityId = (instanceId: string): boolean => parseEntitySchedulerId(instanceId) !== undefined;

/** The stored part of an entity (kept in the instance's `engine` field). */
export function entityStoredOf(state: { engine?: Record<string, unknown> } | undefined): EntityStored {
  const e = state?.engine?.entity as EntityStored | undefined;
  return e ? { exists: e.exists, state: e.state ?? undefined } : { exists: false, state: undefined };
}

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
 * reads the request id from it to match the answer) and the message to the entity.
 */
export function entityActionWork(
  state: OrchestrationState,
  a: OrchestratorAction,
  id: number,
  signal: boolean,
  at: string,
): { event: HistoryEvent; work: OutboundWork } {
  const target = String(a.instanceId);
  const request: RequestWire = {
    id: derivedId(state.executionId, "entity", id),
    op: String(a.operation),
    signal,
    ...(a.input === undefined ? {} : { input: toJsonText(a.input) as string }),
    parent: state.instanceId,
    parentExecution: state.executionId,
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
    let stored = entityStoredOf(current);
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
      out.consumed.push(m.key);
      if (!request || typeof request.op !== "string") {
        out.dropped.push({ key: m.key, reason: "not an entity operation" });
        continue;
      }
      const op = { name: request.op, input: request.input, isSignal: request.signal };
      out.invocations++;
      const outcome = await invoke(self.name, entityTriggerInput(self, stored, op));
      const r = readEntityReply(instanceId, op, stored, outcome, limits.maxPayloadBytes);
      stored = r.next;
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
    }
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
        engine: { entity: { exists: stored.exists, state: stored.state ?? null } },
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
