import type { InstanceDoc } from "../documents.js";
import type { EntityFilter, InstanceFilter } from "../types.js";

/**
 * The Cosmos DB backend's queries over the task hub's documents (SQL). The memory backend selects the same with
 * the same rules (memory-backend); the conformance suite holds both to them.
 */

/**
 * The instance document's fields a listing (TaskHubBackend.queryInstances) returns: all but the history tail, which
 * would be most of a short orchestration's document (a query is charged per KiB it returns).
 */
export const LISTED_INSTANCE_FIELDS = [
  "id",
  "pk",
  "kind",
  "hub",
  "_etag",
  "_ts",
  "instanceId",
  "executionId",
  "name",
  "input",
  "status",
  "output",
  "customStatus",
  "createdTime",
  "lastUpdatedTime",
  "parent",
  "engine",
  "historyChunks",
  "stage",
  "start",
  "claim",
] as const satisfies readonly (keyof InstanceDoc)[];

/** Fails to compile when InstanceDoc gains a field the list above neither names nor leaves out on purpose. */
type Unlisted = Exclude<
  keyof InstanceDoc,
  (typeof LISTED_INSTANCE_FIELDS)[number] | "historyTail" | "historyTailBytes"
>;
const everyFieldListed: [Unlisted] extends [never] ? true : never = true;
void everyFieldListed;

/**
 * The query over a hub's instance documents (kind "instance"): all of them, or those the filter's time range,
 * statuses and id prefix select; `fields` projects (`c.<field>`) instead of `SELECT *`. The backend's `queryInstances`
 * and the dev host dashboard's instance listing read instances with it; map each document's `status` with runtimeStatusOf.
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
