import { CosmosFeedError } from "@cosmos-feed/core/errors";
import type { EntityRecord, Page } from "../backend.js";
import type { InstanceDoc } from "../documents.js";
import type { EntityRow } from "../status-view.js";
import type { EntityFilter, InstanceFilter } from "../types.js";

/**
 * The memory backend's queries over a hub's instance documents: the filters of status-view.ts's instancesQuery and
 * entitiesQuery, evaluated in memory, paged in instance id order. A continuation token names the last id a page
 * returned (and which list it belongs to), so a page after instances were deleted neither skips nor repeats any:
 * the next page starts after that id, whatever is gone.
 */

/** The extension's page size when a query names none. */
const DEFAULT_PAGE_SIZE = 100;

type ListName = "instances" | "entities" | "entityRecords";

/** A continuation token that is none of this backend's lists: the HTTP API answers 400 InvalidContinuationToken. */
export class InvalidContinuationTokenError extends CosmosFeedError {
  /** The HTTP status the durable API answers with: 400. */
  declare readonly statusCode: 400;
  /** The token refused (its first 100 characters are in the message). */
  constructor(token: string) {
    super(`Invalid continuation token '${token.slice(0, 100)}': not a token of this task hub's list.`, {
      statusCode: 400,
    });
  }
}

const tokenOf = (list: ListName, after: string): string =>
  Buffer.from(JSON.stringify({ list, after }), "utf8").toString("base64url");

function afterOf(list: ListName, token: string | undefined): string | undefined {
  if (token === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw new InvalidContinuationTokenError(token);
  }
  const { list: of, after } = (parsed ?? {}) as { list?: unknown; after?: unknown };
  if (of !== list || typeof after !== "string") throw new InvalidContinuationTokenError(token);
  return after;
}

/** The page of `docs` (any order) after `token`, in instance id order, mapped by `row`. */
function pageOf<T>(
  list: ListName,
  docs: InstanceDoc[],
  token: string | undefined,
  size: number | undefined,
  row: (d: InstanceDoc) => T,
): Page<T> {
  const after = afterOf(list, token);
  const top = size !== undefined && size > 0 ? size : DEFAULT_PAGE_SIZE;
  const sorted = docs
    .filter((d) => after === undefined || d.instanceId > after)
    .sort((a, b) => (a.instanceId < b.instanceId ? -1 : a.instanceId > b.instanceId ? 1 : 0));
  const page = sorted.slice(0, top);
  const last = page.at(-1);
  return {
    items: page.map(row),
    ...(sorted.length > top && last ? { continuationToken: tokenOf(list, last.instanceId) } : {}),
  };
}

const isEntity = (d: InstanceDoc): boolean => d.instanceId.startsWith("@");

/** instancesQuery's filter: orchestrations (no entities), created in the range, of the statuses, of the prefix. */
export function instancePage(instances: InstanceDoc[], filter: InstanceFilter): Page<InstanceDoc> {
  const { createdTimeFrom: from, createdTimeTo: to, runtimeStatus, instanceIdPrefix: prefix } = filter;
  const selected = instances.filter(
    (d) =>
      !isEntity(d) &&
      (!from || d.createdTime >= from) &&
      (!to || d.createdTime <= to) &&
      (!runtimeStatus?.length || runtimeStatus.includes(d.status)) &&
      (!prefix || d.instanceId.startsWith(prefix)),
  );
  // Without the history tail, as the Cosmos DB backend lists them (TaskHubBackend.queryInstances).
  return pageOf("instances", selected, filter.continuationToken, filter.top, (d) => {
    const { historyTail: _tail, historyTailBytes: _bytes, ...listed } = d;
    return structuredClone(listed);
  });
}

type EntityBookkeeping = { entity?: { exists?: boolean; state?: string | null; lockedBy?: unknown } };
const entityOf = (d: InstanceDoc) => (d.engine as EntityBookkeeping | undefined)?.entity;

/** entitiesQuery's filter: entities that have a state, of the name, whose last operation is in the range. */
export function entityPage(instances: InstanceDoc[], filter: EntityFilter): Page<EntityRow> {
  const prefix = filter.name === undefined ? "@" : `@${filter.name.toLowerCase()}@`;
  const { lastOperationTimeFrom: from, lastOperationTimeTo: to } = filter;
  const selected = instances.filter(
    (d) =>
      d.instanceId.startsWith(prefix) &&
      entityOf(d)?.exists === true &&
      (!from || d.lastUpdatedTime >= from) &&
      (!to || d.lastUpdatedTime <= to),
  );
  return pageOf("entities", selected, filter.continuationToken, filter.top, (d) => ({
    instanceId: d.instanceId,
    lastUpdatedTime: d.lastUpdatedTime,
    ...(filter.fetchState && d.engine !== undefined
      ? { engine: structuredClone(d.engine) as EntityRow["engine"] }
      : {}),
  }));
}

/** Every entity, state or not: its id and bookkeeping (the clean-up's walk). */
export function entityRecordPage(
  instances: InstanceDoc[],
  token: string | undefined,
  pageSize: number,
): Page<EntityRecord> {
  return pageOf("entityRecords", instances.filter(isEntity), token, pageSize, (d) => ({
    instanceId: d.instanceId,
    ...(d.engine !== undefined ? { engine: structuredClone(d.engine) as EntityRecord["engine"] } : {}),
  }));
}
