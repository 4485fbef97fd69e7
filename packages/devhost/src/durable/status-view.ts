import { parseEntitySchedulerId } from "./entity-batch.js";
import { type EntityStatus, type HistoryEvent, HistoryEventType, type RuntimeStatus } from "./types.js";

/** How the task hub's state reads to clients: runtime statuses, the instance list query, the history view. */

/**
 * The runtime status the HTTP API answers for an instance document's status: a ContinuedAsNew instance is Running
 * (its new execution has started), as the extension reports it.
 */
export function runtimeStatusOf(status: RuntimeStatus): RuntimeStatus {
  return status === "ContinuedAsNew" ? "Running" : status;
}

/** What the entity listing reads of one entity (its instance document's id, last update and, fetched, its state). */
export interface EntityRow {
  /** The entity's instance id (`@name@key`). */
  instanceId: string;
  /** When it last changed (ISO 8601): the entity's last operation time. */
  lastUpdatedTime: string;
  /** The entity engine's bookkeeping: whether it exists, and its state (JSON text). */
  engine?: { entity?: { exists?: boolean; state?: string | null } };
}

/**
 * An entity as the extension lists it (DurableEntityStatus): `{entityId: {name, key}, lastOperationTime, state}`,
 * the state parsed from its JSON text (the text itself when it is not JSON), null when not fetched.
 */
export function entityStatusOf(row: EntityRow): EntityStatus {
  const id = parseEntitySchedulerId(row.instanceId) ?? { name: row.instanceId, key: "" };
  const text = row.engine?.entity?.state;
  let state: unknown = null;
  if (typeof text === "string") {
    try {
      state = JSON.parse(text);
    } catch {
      state = text;
    }
  }
  return { entityId: { name: id.name, key: id.key }, lastOperationTime: row.lastUpdatedTime, state };
}

/**
 * An entity's instance as the extension's instance status API shows it (its entity scheduler is an orchestration
 * there): named after the entity, always Running, its input the scheduler state (`{exists, state}`, the state as
 * JSON text; `lockedBy` while a critical section holds it) and its custom status the EntityStatus
 * (`{entityExists, lockedBy}`, false and absent fields left out as the extension's serializer leaves defaults out).
 */
export function entityInstanceView(stored: {
  exists: boolean;
  state: string | undefined;
  lockedBy?: string;
}): {
  runtimeStatus: RuntimeStatus;
  input: Record<string, unknown>;
  customStatus: Record<string, unknown>;
} {
  const lock = stored.lockedBy === undefined ? {} : { lockedBy: stored.lockedBy };
  return {
    runtimeStatus: "Running",
    input: {
      ...(stored.exists ? { exists: true } : {}),
      ...(stored.state === undefined ? {} : { state: stored.state }),
      ...lock,
    },
    customStatus: { ...(stored.exists ? { entityExists: true } : {}), ...lock },
  };
}

/** The history as the extension's HTTP API shows it (showHistory): event type names, outputs only when asked. */
export function historyView(history: HistoryEvent[], showOutput: boolean): unknown[] {
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
