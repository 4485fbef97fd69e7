import { randomUUID } from "node:crypto";
import type { EntityRecord, TaskHubBackend } from "./backend.js";
import { ORPHANED_LOCK_RELEASE_ID, RELEASE_EVENT } from "./entity-locks.js";
import { validateInstanceId } from "./errors.js";
import { historyEvent } from "./protocol.js";
import { entityStatusOf, runtimeStatusOf } from "./status-view.js";
import type {
  CleanEntityStorageResult,
  EntityFilter,
  EntityStatus,
  InstanceMessage,
  RuntimeStatus,
} from "./types.js";
import { HistoryEventType } from "./types.js";

/**
 * The durable client's entity queries over the task hub's backend (the extension's IDurableEntityClient:
 * ListEntitiesAsync, CleanEntityStorageAsync). Every read is one bounded page of one query; the clean-up walks the
 * hub's entities page by page (ENTITY_PAGE_SIZE) and acts on each entity alone, so its cost grows with the number
 * of entities and never holds more than a page.
 */

/** The extension's EntityQuery.PageSize default, and the page the clean-up walks the entities with. */
export const ENTITY_PAGE_SIZE = 100;

/** One page of the entities that have a state (status-view.ts entitiesQuery): the listing's answer. */
export async function listEntities(
  backend: TaskHubBackend,
  filter: EntityFilter,
): Promise<{ entities: EntityStatus[]; continuationToken?: string }> {
  const page = await backend.queryEntities({ ...filter, top: filter.top ?? ENTITY_PAGE_SIZE });
  return {
    entities: page.items.map((row) => {
      const s = entityStatusOf(row);
      return filter.fetchState ? s : { ...s, state: null };
    }),
    ...(page.continuationToken ? { continuationToken: page.continuationToken } : {}),
  };
}

/** The part of an entity's instance document the clean-up reads. */
type CleanRow = EntityRecord;

/** What the clean-up needs of the client: its backend and how a message and a removal reach the hub. */
export interface EntityCleanupHooks {
  backend: TaskHubBackend;
  /** Writes a message for an instance (and tells the hub on this host). */
  send(message: InstanceMessage): Promise<void>;
  /** The instance and everything of it are gone (the hub forgets what it held of it). */
  removed(instanceId: string): void;
  now(): Date;
}

/**
 * Statuses in which a lock's owner still holds it. The extension checks Running only; a suspended orchestration
 * resumes inside its critical section, so its locks are not orphaned here (docs/durable.md).
 */
const HOLDING: ReadonlySet<RuntimeStatus> = new Set(["Running", "Suspended"]);

/**
 * The extension's CleanEntityStorageAsync: for each entity, a lock whose owner is no longer running (missing,
 * or finished) is released — the extension's ReleaseMessage (`release`, `{parent, id: "fix-orphaned-lock"}`) sent
 * to the entity, which frees it as its owner's release would — and an entity with no state, no lock and no pending
 * message is deleted (its instance document If-Match, so one that changed meanwhile stays).
 */
export async function cleanEntityStorage(
  hooks: EntityCleanupHooks,
  options: { removeEmptyEntities: boolean; releaseOrphanedLocks: boolean },
): Promise<CleanEntityStorageResult> {
  const { backend } = hooks;
  const result: CleanEntityStorageResult = {
    numberOfOrphanedLocksRemoved: 0,
    numberOfEmptyEntitiesRemoved: 0,
  };
  if (!options.removeEmptyEntities && !options.releaseOrphanedLocks) return result;
  let continuationToken: string | undefined;
  do {
    const page = await backend.queryEntityRecords(continuationToken, ENTITY_PAGE_SIZE);
    for (const row of page.items) {
      const entity = row.engine?.entity;
      const lockedBy = typeof entity?.lockedBy === "string" ? entity.lockedBy : undefined;
      if (options.releaseOrphanedLocks && lockedBy !== undefined) {
        // An owner that is not even an instance id holds nothing; a failed read is an error, not an orphan.
        const owner = isInstanceId(lockedBy) ? await backend.readInstance(lockedBy) : undefined;
        if (!owner || !HOLDING.has(runtimeStatusOf(owner.status))) {
          await hooks.send(releaseMessage(row.instanceId, lockedBy, hooks.now()));
          result.numberOfOrphanedLocksRemoved++;
        }
      }
      if (options.removeEmptyEntities && entity?.exists !== true && lockedBy === undefined) {
        if (await removeIfEmpty(hooks, row.instanceId)) result.numberOfEmptyEntitiesRemoved++;
      }
    }
    continuationToken = page.continuationToken;
  } while (continuationToken);
  return result;
}

function isInstanceId(id: string): boolean {
  try {
    validateInstanceId(id);
    return true;
  } catch {
    return false;
  }
}

/** The extension's ReleaseMessage for a lock whose owner is gone (its lock request id is not known: any will do). */
function releaseMessage(entityId: string, owner: string, at: Date): InstanceMessage {
  const request = { parent: owner, id: ORPHANED_LOCK_RELEASE_ID };
  return {
    // Not derived from the owner: a document id cannot hold every character an owner's id (or a damaged one) may.
    key: `entity-release-${randomUUID()}`,
    instanceId: entityId,
    event: historyEvent(HistoryEventType.EventRaised, at.toISOString(), {
      Name: RELEASE_EVENT,
      Input: JSON.stringify(request),
    }),
  };
}

/**
 * Deletes an entity that has no state, no lock and nothing pending (re-checked on a fresh read of its partition):
 * its other documents, then its instance document If-Match. True when this call deleted it.
 */
async function removeIfEmpty(hooks: EntityCleanupHooks, instanceId: string): Promise<boolean> {
  const snap = await hooks.backend.readInstanceState(instanceId);
  const inst = snap.instance;
  const entity = (inst?.engine as CleanRow["engine"])?.entity;
  const busy =
    !inst ||
    entity?.exists === true ||
    entity?.lockedBy !== undefined ||
    inst.stage !== undefined ||
    inst.claim !== undefined ||
    snap.messages.length > 0 ||
    snap.outbox.length > 0 ||
    snap.timers.length > 0 ||
    snap.stages.length > 0;
  if (busy) return false;
  // Changed meanwhile (an operation ran) or gone already: not this call's to count.
  if ((await hooks.backend.deleteInstance(snap)) !== "purged") return false;
  hooks.removed(instanceId);
  return true;
}
