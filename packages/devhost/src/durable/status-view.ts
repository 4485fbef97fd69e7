import { parseEntitySchedulerId } from "./entity-batch.js";
import {
  type EntityFilter,
  type EntityStatus,
  type HistoryEvent,
  HistoryEventType,
  type InstanceFilter,
  type RuntimeStatus,
} from "./types.js";

/** How the task hub's state reads to clients: runtime statuses, the instance list query, the history view. */

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
  // Entities (`@name@key`) are instances of the hub too; orchestration queries leave them out, as the extension's.
  const where = ["c.kind = 'instance'", "c.hub = @hub", "NOT STARTSWITH(c.instanceId, '@')"];
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

/**
 * The query over a hub's entities (instances `@name@key`) that have a state — the extension's ListEntitiesAsync
 * leaves out entities without one (deleted, or never given one) unless asked for them, and so does this, in the
 * query itself so that no page comes back empty while more follow. `name` selects one entity name (the id prefix
 * `@name@`, the name in lower case as ids hold it); the time range is the last operation's (lastUpdatedTime).
 * With `fetchState` the state is projected too; without it only what the listing shows.
 */
export function entitiesQuery(
  hubName: string,
  filter: Pick<EntityFilter, "name" | "lastOperationTimeFrom" | "lastOperationTimeTo" | "fetchState">,
): { query: string; parameters: { name: string; value: string }[] } {
  const where = [
    "c.kind = 'instance'",
    "c.hub = @hub",
    "STARTSWITH(c.instanceId, @prefix)",
    "c.engine.entity.exists = true",
  ];
  const parameters = [
    { name: "@hub", value: hubName },
    { name: "@prefix", value: filter.name === undefined ? "@" : `@${filter.name.toLowerCase()}@` },
  ];
  if (filter.lastOperationTimeFrom) {
    where.push("c.lastUpdatedTime >= @from");
    parameters.push({ name: "@from", value: filter.lastOperationTimeFrom });
  }
  if (filter.lastOperationTimeTo) {
    where.push("c.lastUpdatedTime <= @to");
    parameters.push({ name: "@to", value: filter.lastOperationTimeTo });
  }
  const fields = ["c.instanceId", "c.lastUpdatedTime", ...(filter.fetchState ? ["c.engine"] : [])];
  return { query: `SELECT ${fields.join(", ")} FROM c WHERE ${where.join(" AND ")}`, parameters };
}

/** What entitiesQuery returns of one entity. */
export interface EntityRow {
  instanceId: string;
  lastUpdatedTime: string;
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
