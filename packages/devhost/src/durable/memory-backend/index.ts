import { type Clock, systemClock } from "@cosmos-feed/core/clock";
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
  type AnyDoc,
  INSTANCE_ID,
  type InstanceDoc,
  type MessageDoc,
  type OutboxDoc,
  type PartitionSnapshot,
  partitionKeyOf,
  snapshotOf,
} from "../documents.js";
import type { EntityRow } from "../status-view.js";
import type { EntityFilter, InstanceFilter } from "../types.js";
import { DispatchLease, MemoryFeed } from "./dispatch.js";
import { FeedLog } from "./feed-log.js";
import { MemoryPartitions } from "./partitions.js";
import { entityPage, entityRecordPage, instancePage } from "./queries.js";

export { MEMORY_LEASE } from "./dispatch.js";
export { InvalidContinuationTokenError } from "./queries.js";

/** Options of a `MemoryBackend`. */
export interface MemoryBackendOptions {
  /** The task hub's name (host.json `extensions.durableTask.hubName`). */
  hubName: string;
  /** The clock of the documents' `_ts` and of the dispatch feed (tests pass a FakeClock); the system's by default. */
  clock?: Clock;
}

/**
 * The task hub's backend in process memory (backend.ts, `TaskHubBackend`): the documents of docs/durable-design.md
 * "Storage" (documents.ts: the same kinds, ids, partitions and snapshots) in maps, with the Cosmos DB backend's
 * semantics — every race decided by the instance document's `_etag`, a lost race an outcome — so that the engine
 * runs unchanged on either, and one conformance suite (test/durable/backend-conformance.ts) holds for both.
 *
 * Design choices:
 * - **No staged commits.** Cosmos DB stages a commit past one transactional batch (100 operations, 2 MB) because
 *   it has no larger atomic write; here every verb runs without awaiting anything between its check and its
 *   writes, so a commit of any size is atomic as it stands. Stage documents never exist, nothing is swept
 *   (`getOrchestrationWorkItem` is the partition's snapshot, `swept` 0), and the scan finds no stages.
 * - **One lease.** The Cosmos DB feed has a lease per physical range, to share the work between hosts in other
 *   processes. Feeds of one memory backend share a process (tests running several hosts on one hub), where
 *   spreading pages buys nothing: one lease (`memory-0`) keeps the contract a host relies on — a page is
 *   checkpointed once handled under the lease, a page cut short is read again by the lease's next holder, the
 *   page's signal fires when the lease moves — with none of the balancing. The earliest started feed that has not
 *   stopped holds it; when it stops (or is abandoned: no lease expiry to wait for in one process) the next one
 *   goes on from the checkpoint. The lease starts at the beginning of the log, as the Cosmos DB hub starts its
 *   processor; the log holds the latest version of each live document (a deleted one is gone from it, as from a
 *   latest-version change feed), so it grows with what is stored, not with what was ever written.
 * - **Copies both ways.** Callers mutate the snapshots and documents they get, and keep the ones they give: what
 *   is stored is copied in as JSON (as Cosmos DB stores it) and what is returned is a structured clone.
 * - A commit's document of another partition is refused (TaskHubStorageError 400), as a Cosmos DB transactional
 *   batch refuses it: the engine's bug shows here as it would there.
 */
export class MemoryBackend implements TaskHubBackend {
  /** {@inheritDoc TaskHubBackend.hubName} */
  readonly hubName: string;
  /** "memory". */
  readonly describe = "memory";
  private readonly clock: Clock;
  private readonly log = new FeedLog();
  private readonly lease = new DispatchLease();
  private readonly store: MemoryPartitions;

  /** An empty backend: no documents, no feed started. */
  constructor(options: MemoryBackendOptions) {
    this.hubName = options.hubName;
    this.clock = options.clock ?? systemClock;
    this.store = new MemoryPartitions(this.clock, this.log);
  }

  private pk(instanceId: string): string {
    return partitionKeyOf(this.hubName, instanceId);
  }

  private instanceAt(pk: string): InstanceDoc | undefined {
    const d = this.store.get(pk, INSTANCE_ID);
    return d?.kind === "instance" ? d : undefined;
  }

  /** The hub's instance documents (stored objects: copy what leaves). */
  private instances(): InstanceDoc[] {
    const out: InstanceDoc[] = [];
    for (const d of this.store.all()) if (d.kind === "instance" && d.hub === this.hubName) out.push(d);
    return out;
  }

  // ---- instances ---------------------------------------------------------------------------------------------

  /** {@inheritDoc TaskHubBackend.createInstance} */
  async createInstance(doc: InstanceDoc): Promise<CreateOutcome> {
    const existing = this.instanceAt(doc.pk);
    if (existing) return { created: false, existing: structuredClone(existing) };
    return { created: true, etag: this.store.put(doc)._etag };
  }

  /** {@inheritDoc TaskHubBackend.replaceInstance} */
  async replaceInstance(
    doc: InstanceDoc,
    ifMatch: string,
  ): Promise<{ replaced: true; etag: string } | { replaced: false }> {
    if (this.instanceAt(doc.pk)?._etag !== ifMatch) return { replaced: false };
    return { replaced: true, etag: this.store.put(doc)._etag };
  }

  /** {@inheritDoc TaskHubBackend.readInstance} */
  async readInstance(instanceId: string): Promise<InstanceDoc | undefined> {
    const d = this.instanceAt(this.pk(instanceId));
    return d && structuredClone(d);
  }

  /** {@inheritDoc TaskHubBackend.readInstanceState} */
  async readInstanceState(instanceId: string): Promise<PartitionSnapshot> {
    return snapshotOf(structuredClone(this.store.docs(this.pk(instanceId))));
  }

  /** {@inheritDoc TaskHubBackend.queryInstances} */
  async queryInstances(filter: InstanceFilter): Promise<Page<InstanceDoc>> {
    return instancePage(this.instances(), filter);
  }

  /** {@inheritDoc TaskHubBackend.deleteInstance} */
  async deleteInstance(snapshot: PartitionSnapshot): Promise<"purged" | "gone" | "changed"> {
    const seen = snapshot.instance;
    if (!seen) return "gone";
    const current = this.instanceAt(seen.pk);
    if (!current) return "gone";
    if (current._etag !== seen._etag) return "changed";
    this.store.removePartition(seen.pk);
    return "purged";
  }

  // ---- messages ----------------------------------------------------------------------------------------------

  /** {@inheritDoc TaskHubBackend.addMessage} */
  async addMessage(doc: MessageDoc): Promise<"added" | "exists"> {
    if (this.store.get(doc.pk, doc.id)) return "exists";
    this.store.put(doc);
    return "added";
  }

  /** {@inheritDoc TaskHubBackend.deliverOutbox} */
  async deliverOutbox(outbox: OutboxDoc, message: MessageDoc): Promise<void> {
    if (!this.store.get(message.pk, message.id)) this.store.put(message);
    this.store.remove(outbox.pk, outbox.id);
  }

  // ---- orchestration work items ------------------------------------------------------------------------------

  /** {@inheritDoc TaskHubBackend.getOrchestrationWorkItem} */
  async getOrchestrationWorkItem(
    instanceId: string,
  ): Promise<{ snapshot: PartitionSnapshot; swept: number }> {
    return { snapshot: await this.readInstanceState(instanceId), swept: 0 };
  }

  /** {@inheritDoc TaskHubBackend.completeOrchestrationWorkItem} */
  async completeOrchestrationWorkItem(commit: WorkItemCommit): Promise<CommitOutcome> {
    const pk = this.pk(commit.instanceId);
    const docs: AnyDoc[] = [...(commit.instance ? [commit.instance.body] : []), ...commit.upserts];
    const foreign = docs.find((d) => d.pk !== pk);
    if (foreign) {
      throw new TaskHubStorageError(
        `Durable task hub: a commit of instance '${commit.instanceId}' holds document '${foreign.id}' of partition '${foreign.pk}'.`,
        400,
      );
    }
    let etag = "";
    if (commit.instance) {
      const { body, ifMatch } = commit.instance;
      const current = this.instanceAt(pk);
      if (ifMatch === undefined && current) return { committed: false, status: 409 };
      if (ifMatch !== undefined && !current) return { committed: false, status: 404 };
      if (ifMatch !== undefined && current?._etag !== ifMatch) return { committed: false, status: 412 };
      etag = this.store.put(body)._etag;
    }
    // Nothing awaited since the check: the whole commit lands before anyone else reads or writes.
    for (const d of commit.upserts) this.store.put(d);
    for (const id of commit.deletes) this.store.remove(pk, id);
    return { committed: true, etag };
  }

  /** {@inheritDoc TaskHubBackend.abandonOrchestrationWorkItem} */
  async abandonOrchestrationWorkItem(
    instanceId: string,
    results: HandedOverResult[],
  ): Promise<HandedOverResult[]> {
    const pk = this.pk(instanceId);
    const stored: HandedOverResult[] = [];
    for (const r of results) {
      if (this.store.get(r.message.pk, r.message.id)) {
        // Handed over already: only its source is left to end.
        if (r.sourceId !== undefined) this.store.remove(pk, r.sourceId);
        continue;
      }
      // The source is gone: its result was recorded already.
      if (r.sourceId !== undefined && !this.store.get(pk, r.sourceId)) continue;
      this.store.put(r.message);
      if (r.sourceId !== undefined) this.store.remove(pk, r.sourceId);
      stored.push(r);
    }
    return stored;
  }

  /** {@inheritDoc TaskHubBackend.deleteDocuments} */
  async deleteDocuments(instanceId: string, ids: string[]): Promise<void> {
    const pk = this.pk(instanceId);
    for (const id of ids) this.store.remove(pk, id);
  }

  // ---- activity work items -----------------------------------------------------------------------------------

  /** {@inheritDoc TaskHubBackend.claimActivityWorkItem} */
  async claimActivityWorkItem(
    doc: ActivityDoc,
    owner: string,
    until: number,
  ): Promise<ActivityDoc | undefined> {
    const current = this.store.get(doc.pk, doc.id);
    if (current?.kind !== "activity" || current._etag !== doc._etag) return undefined;
    const { _etag, _ts, ...body } = doc;
    return structuredClone(this.store.put({ ...body, lockedBy: owner, lockedUntil: until }));
  }

  // ---- entities ----------------------------------------------------------------------------------------------

  /** {@inheritDoc TaskHubBackend.queryEntities} */
  async queryEntities(filter: EntityFilter): Promise<Page<EntityRow>> {
    return entityPage(this.instances(), filter);
  }

  /** {@inheritDoc TaskHubBackend.queryEntityRecords} */
  async queryEntityRecords(
    continuationToken: string | undefined,
    pageSize: number,
  ): Promise<Page<EntityRecord>> {
    return entityRecordPage(this.instances(), continuationToken, pageSize);
  }

  // ---- recovery and dispatch ---------------------------------------------------------------------------------

  /** {@inheritDoc TaskHubBackend.scanPending} */
  async scanPending(now: number, horizon: number): Promise<PendingWork> {
    // A start written a minute ago and not applied yet (its feed page was checkpointed before a crash).
    const settled = Math.floor(this.clock.now() / 1000) - 60;
    const out: PendingWork = { timers: [], activities: [], outbox: [], staged: [], claims: [] };
    for (const d of this.store.all()) {
      if (d.hub !== this.hubName) continue;
      if (d.kind === "timer") {
        if (d.fireAtMs === undefined || d.fireAtMs <= horizon) out.timers.push(structuredClone(d));
      } else if (d.kind === "activity") {
        if (d.lockedUntil === undefined || d.lockedUntil < now) out.activities.push(structuredClone(d));
      } else if (d.kind === "outbox") out.outbox.push(structuredClone(d));
      else if (d.kind === "instance") {
        if (d.stage || (d.start?.key !== undefined && d._ts < settled)) out.staged.push(structuredClone(d));
        if (d.claim && d.claim.until < now) out.claims.push(structuredClone({ ...d, claim: d.claim }));
      }
    }
    return out;
  }

  /** {@inheritDoc TaskHubBackend.openDispatch} */
  openDispatch(handler: DispatchHandler, options: DispatchOptions): DispatchFeed {
    return new MemoryFeed(this.log, this.lease, handler, options);
  }
}
