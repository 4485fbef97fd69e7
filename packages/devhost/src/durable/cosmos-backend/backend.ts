import { BulkOperationType, type Container, type OperationInput } from "@azure/cosmos";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import {
  type CommitOutcome,
  type CreateOutcome,
  type DispatchFeed,
  type DispatchHandler,
  type DispatchOptions,
  type EntityRecord,
  type HandedOverResult,
  type Page,
  type PendingWork,
  type TaskHubBackend,
  TaskHubStorageError,
  type WorkItemCommit,
} from "../backend.js";
import {
  type ActivityDoc,
  docBytes,
  INSTANCE_ID,
  type InstanceDoc,
  type MessageDoc,
  type OutboxDoc,
  type PartitionSnapshot,
} from "../documents.js";
import { DURABLE_LIMITS } from "../limits.js";
import type { EntityRow } from "../status-view.js";
import type { EntityFilter, InstanceFilter } from "../types.js";
import { asJson } from "./commit-plan.js";
import { CosmosDispatchFeed } from "./dispatch-feed.js";
import { entitiesQuery, instancesQuery, LISTED_INSTANCE_FIELDS } from "./queries.js";
import { HubStore } from "./store.js";

/**
 * The task hub on Cosmos DB (docs/durable-design.md, "Storage"): `TaskHubBackend` over one container with partition
 * key `/pk` — every document of an instance in its logical partition, so a commit is one transactional batch (or a
 * commit in steps when larger: commit-plan.ts) — and dispatch on that container's change feed through the project's
 * change feed processor, its leases in `leaseContainer`. The only module besides its own helpers (store.ts,
 * queries.ts, dispatch-feed.ts) that sends the hub's documents to Cosmos DB.
 */

export interface CosmosBackendOptions {
  /** The task hub's container (partition key `/pk`). */
  container: Container;
  /** The lease container of its dispatch feed (`durable.<hub>.` prefix). */
  leaseContainer: Container;
  /** The task hub's name. */
  hubName: string;
}

/** Staged commits one work item's read finishes before its attempt fails (others keep committing meanwhile). */
const MAX_RESUMES = 5;

/** Results per hand-over batch: two operations each (the message, the source's deletion), ≤ 100 in all. */
export const HAND_OVER_PER_BATCH = DURABLE_LIMITS.batchOperations / 2;

export class CosmosBackend implements TaskHubBackend {
  readonly hubName: string;
  readonly describe: string;
  /** The requests themselves (tests drive a staged commit step by step through it). */
  readonly store: HubStore;

  constructor(private readonly o: CosmosBackendOptions) {
    this.hubName = o.hubName;
    this.store = new HubStore(o.container, o.hubName);
    this.describe = `Cosmos DB ${o.container.database.id}/${o.container.id}`;
  }

  private pk(instanceId: string): string {
    return this.store.pk(instanceId);
  }

  async createInstance(doc: InstanceDoc): Promise<CreateOutcome> {
    const r = await this.store.batch(doc.pk, [
      { operationType: BulkOperationType.Create, resourceBody: asJson(doc) },
    ]);
    if (r.ok) return { created: true, etag: r.etag };
    if (r.status !== 409) throw storageError(`creating instance '${doc.instanceId}'`, r.status);
    return { created: false, existing: await this.readInstance(doc.instanceId) };
  }

  async replaceInstance(
    doc: InstanceDoc,
    ifMatch: string,
  ): Promise<{ replaced: true; etag: string } | { replaced: false }> {
    const r = await this.store.batch(doc.pk, [
      { operationType: BulkOperationType.Replace, id: INSTANCE_ID, resourceBody: asJson(doc), ifMatch },
    ]);
    if (r.ok) return { replaced: true, etag: r.etag };
    if (r.status === 412 || r.status === 404) return { replaced: false };
    throw storageError(`replacing instance '${doc.instanceId}'`, r.status);
  }

  readInstance(instanceId: string): Promise<InstanceDoc | undefined> {
    return this.store.readInstance(instanceId);
  }

  readInstanceState(instanceId: string): Promise<PartitionSnapshot> {
    return this.store.readPartition(instanceId);
  }

  async queryInstances(filter: InstanceFilter): Promise<Page<InstanceDoc>> {
    const page = await this.o.container.items
      .query<InstanceDoc>(instancesQuery(this.hubName, filter, LISTED_INSTANCE_FIELDS), {
        maxItemCount: filter.top ?? 100,
        continuationToken: filter.continuationToken,
      })
      .fetchNext();
    return pageOf(page.resources, page.continuationToken);
  }

  async deleteInstance(snapshot: PartitionSnapshot): Promise<"purged" | "gone" | "changed"> {
    const inst = snapshot.instance;
    if (!inst) return "gone";
    await this.store.deleteIds(
      inst.pk,
      [...snapshot.ids].filter((id) => id !== INSTANCE_ID),
    );
    try {
      await this.o.container
        .item(INSTANCE_ID, inst.pk)
        .delete({ accessCondition: { type: "IfMatch", condition: inst._etag ?? "" } });
      return "purged";
    } catch (e) {
      const status = statusOf(e);
      if (status === 404) return "gone";
      if (status === 412) return "changed";
      throw e;
    }
  }

  async addMessage(doc: MessageDoc): Promise<"added" | "exists"> {
    try {
      await this.o.container.items.create(doc);
      return "added";
    } catch (e) {
      if (statusOf(e) === 409) return "exists";
      throw e;
    }
  }

  async deliverOutbox(outbox: OutboxDoc, message: MessageDoc): Promise<void> {
    await this.addMessage(message);
    await this.store.deleteIds(outbox.pk, [outbox.id]);
  }

  async getOrchestrationWorkItem(
    instanceId: string,
  ): Promise<{ snapshot: PartitionSnapshot; swept: number }> {
    let snap = await this.store.readPartition(instanceId);
    // A staged commit in progress (interrupted, or another host's) is finished first, and a snapshot whose instance
    // carries a mark is never used: its document is the instance as it was, and the chunks of a new execution look
    // stale next to it; a commit over the mark would abandon that stage half-applied.
    for (let resumed = 0; snap.instance?.stage; resumed++) {
      if (resumed >= MAX_RESUMES)
        throw new Error(`staged commits of '${instanceId}' kept coming; re-read later`);
      await this.store.resumeStage(snap);
      snap = await this.store.readPartition(instanceId);
    }
    // No mark is left: stage documents now are the parts of commits that never decided (their host died). The
    // snapshot keeps them (it is not re-read); nothing reads stage documents without a mark naming them.
    const swept = snap.stages.length > 0 ? await this.store.sweepAbandonedStages(snap) : 0;
    return { snapshot: snap, swept };
  }

  completeOrchestrationWorkItem(commit: WorkItemCommit): Promise<CommitOutcome> {
    return this.store.commit(commit);
  }

  /**
   * Each result as a message created in the transactional batch that deletes its source; HAND_OVER_PER_BATCH
   * results to a batch (within the batch byte limit). A batch refused as a whole (one of its messages exists already,
   * one of its sources is gone) is retried one result at a time, where each refusal has its meaning.
   */
  async abandonOrchestrationWorkItem(
    instanceId: string,
    results: HandedOverResult[],
  ): Promise<HandedOverResult[]> {
    const pk = this.pk(instanceId);
    const opsOf = (r: HandedOverResult): OperationInput[] => [
      { operationType: BulkOperationType.Create, resourceBody: asJson(r.message) },
      ...(r.sourceId !== undefined
        ? [{ operationType: BulkOperationType.Delete, id: r.sourceId } as OperationInput]
        : []),
    ];
    const stored: HandedOverResult[] = [];
    for (const group of batchesOf(results, (r) => docBytes(r.message))) {
      const whole = group.length > 1 ? await this.store.batch(pk, group.flatMap(opsOf)) : undefined;
      if (whole?.ok) {
        stored.push(...group);
        continue;
      }
      for (const r of group) {
        const one = await this.store.batch(pk, opsOf(r));
        if (one.ok) stored.push(r);
        else if (one.status === 409 && r.sourceId !== undefined) await this.store.deleteIds(pk, [r.sourceId]);
        else if (one.status !== 404 && one.status !== 409)
          throw storageError(`handing a result of '${instanceId}' over`, one.status);
      }
    }
    return stored;
  }

  deleteDocuments(instanceId: string, ids: string[]): Promise<void> {
    return this.store.deleteIds(this.pk(instanceId), ids);
  }

  claimActivityWorkItem(doc: ActivityDoc, owner: string, until: number): Promise<ActivityDoc | undefined> {
    return this.store.claimActivity(doc, owner, until);
  }

  async queryEntities(filter: EntityFilter): Promise<Page<EntityRow>> {
    const page = await this.o.container.items
      .query<EntityRow>(entitiesQuery(this.hubName, filter), {
        maxItemCount: filter.top ?? 100,
        continuationToken: filter.continuationToken,
      })
      .fetchNext();
    return pageOf(page.resources, page.continuationToken);
  }

  async queryEntityRecords(
    continuationToken: string | undefined,
    pageSize: number,
  ): Promise<Page<EntityRecord>> {
    const query = {
      query:
        "SELECT c.instanceId, c.engine FROM c WHERE c.kind = 'instance' AND c.hub = @hub AND STARTSWITH(c.instanceId, '@')",
      parameters: [{ name: "@hub", value: this.hubName }],
    };
    const page = await this.o.container.items
      .query<EntityRecord>(query, { maxItemCount: pageSize, continuationToken })
      .fetchNext();
    return pageOf(page.resources, page.continuationToken);
  }

  scanPending(now: number, horizon: number): Promise<PendingWork> {
    return this.store.scanPending(now, horizon);
  }

  openDispatch(handler: DispatchHandler, options: DispatchOptions): DispatchFeed {
    return new CosmosDispatchFeed(this.o.container, this.o.leaseContainer, this.hubName, handler, options);
  }
}

function pageOf<T>(items: T[], continuationToken: string | undefined): Page<T> {
  return { items, ...(continuationToken ? { continuationToken } : {}) };
}

function storageError(what: string, status: number): TaskHubStorageError {
  return new TaskHubStorageError(`Durable task hub: ${what} failed with ${status}.`, status);
}

/** Consecutive groups of at most HAND_OVER_PER_BATCH whose sizes add up to at most the batch byte limit. */
function batchesOf<T>(items: T[], bytes: (item: T) => number): T[][] {
  const out: T[][] = [];
  let group: T[] = [];
  let size = 0;
  for (const item of items) {
    const b = bytes(item);
    if (group.length > 0 && (group.length >= HAND_OVER_PER_BATCH || size + b > DURABLE_LIMITS.batchBytes)) {
      out.push(group);
      group = [];
      size = 0;
    }
    group.push(item);
    size += b;
  }
  if (group.length > 0) out.push(group);
  return out;
}
