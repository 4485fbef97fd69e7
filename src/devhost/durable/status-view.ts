import { type HistoryEvent, HistoryEventType, type InstanceFilter, type RuntimeStatus } from "./types.js";

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
