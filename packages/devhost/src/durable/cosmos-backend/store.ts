import { BulkOperationType, type Container, ErrorResponse, type OperationInput } from "@azure/cosmos";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { type CommitOutcome, type PendingWork, TaskHubStorageError } from "../backend.js";
import {
  type ActivityDoc,
  type AnyDoc,
  INSTANCE_ID,
  type InstanceDoc,
  type PartitionSnapshot,
  partitionKeyOf,
  type StageDoc,
  snapshotOf,
  type WorkDoc,
} from "../documents.js";
import { DURABLE_LIMITS } from "../limits.js";
import { asJson, type CommitInput, planCommit } from "./commit-plan.js";

/**
 * The Cosmos DB backend's requests (docs/durable-design.md, "Storage"): batches, commits in one batch or in steps,
 * bounded deletes, activity claims, the pending-work scan. Every write stays within the service's limits by
 * construction (commit-plan.ts; deletes and cleanups in steps of at most 100 operations). Only backend.ts uses it.
 */

/** True for an error the Cosmos DB SDK threw for a refusal of the service (the HTTP API words those its own way). */
export const isCosmosError = (e: unknown): boolean => e instanceof ErrorResponse;

/** Bulk requests retried after 429 (the SDK retries point operations itself, a bulk request's it reports). */
const BULK_THROTTLE_RETRIES = 20;

/**
 * Runs bulk operations, retrying those refused with 429 (and a whole request refused with it) after the wait
 * Cosmos DB asks for; returns the other results.
 */
async function bulkWithRetry(container: Container, ops: OperationInput[]): Promise<{ statusCode: number }[]> {
  const done: { statusCode: number }[] = [];
  let pending = ops;
  for (let attempt = 0; pending.length > 0; attempt++) {
    let wait = 0;
    try {
      // Only each operation's status is read: no documents back (see HubStore.batch).
      const results = await container.items.bulk(pending, undefined, {
        contentResponseOnWriteEnabled: false,
      });
      const again: OperationInput[] = [];
      results.forEach((r, i) => {
        if (r.statusCode === 429 && attempt < BULK_THROTTLE_RETRIES) {
          again.push(pending[i] as OperationInput);
          wait = Math.max(wait, 100 * 2 ** Math.min(attempt, 4));
        } else done.push(r);
      });
      pending = again;
    } catch (e) {
      const throttled = statusOf(e) === 429 || /Request rate is large/.test(String((e as Error)?.message));
      if (!throttled || attempt >= BULK_THROTTLE_RETRIES) throw e;
      wait = (e as { retryAfterInMs?: number }).retryAfterInMs ?? 100 * 2 ** Math.min(attempt, 4);
    }
    if (pending.length > 0) await new Promise((r) => setTimeout(r, Math.min(wait, 5_000)));
  }
  return done;
}

export class HubStore {
  constructor(
    readonly container: Container,
    readonly hub: string,
  ) {}

  pk(instanceId: string): string {
    return partitionKeyOf(this.hub, instanceId);
  }

  /** Everything of one instance: one single-partition query. */
  async readPartition(instanceId: string): Promise<PartitionSnapshot> {
    const pk = this.pk(instanceId);
    const { resources } = await this.container.items
      .query<AnyDoc>(
        { query: "SELECT * FROM c WHERE c.pk = @pk", parameters: [{ name: "@pk", value: pk }] },
        { partitionKey: pk },
      )
      .fetchAll();
    return snapshotOf(resources);
  }

  async readInstance(instanceId: string): Promise<InstanceDoc | undefined> {
    const res = await this.container.item(INSTANCE_ID, this.pk(instanceId)).read<InstanceDoc>();
    return res.statusCode === 404 ? undefined : res.resource;
  }

  /**
   * One transactional batch; the failed operation's status (not 424), or the new etag of operation `etagOf`. It
   * asks for no documents back (`Prefer: return=minimal`, the .NET SDK's EnableContentResponseOnWrite = false):
   * every answer keeps its status and etag, which is all a commit reads, and neither side serializes the bodies
   * again (the charge is the same).
   */
  async batch(
    pk: string,
    ops: OperationInput[],
    etagOf = 0,
  ): Promise<{ ok: true; etag: string } | { ok: false; status: number }> {
    const res = await this.container.items.batch(ops, pk, { contentResponseOnWriteEnabled: false });
    const results = res.result ?? [];
    const failed = results.find((r) => r.statusCode >= 400 && r.statusCode !== 424);
    if (failed) return { ok: false, status: failed.statusCode };
    return { ok: true, etag: results[etagOf]?.eTag ?? "" };
  }

  /**
   * Commits an instance's work (commit-plan.ts). A lost race (412, 409, 404 in the deciding batch) is an outcome,
   * not an error; anything else throws.
   */
  async commit(input: CommitInput): Promise<CommitOutcome> {
    const plan = planCommit(input);
    const pk = this.pk(input.instanceId);
    if (plan.kind === "unguarded") {
      await this.applyIdempotently(pk, plan.upserts, plan.deletes);
      return { committed: true, etag: "" };
    }
    if (plan.kind === "single") {
      const r = await this.batch(pk, plan.ops);
      if (r.ok) return { committed: true, etag: r.etag };
      return this.lostOrThrow(r.status, input.instanceId);
    }
    for (const s of plan.stages) await this.container.items.upsert(s);
    const decided = await this.batch(pk, plan.deciding);
    if (!decided.ok) {
      await this.deleteIds(
        pk,
        plan.stages.map((s) => s.id),
      ).catch(() => undefined);
      return this.lostOrThrow(decided.status, input.instanceId);
    }
    const etag = await this.applyStage(pk, decided.etag, plan.stages);
    return { committed: true, etag };
  }

  private lostOrThrow(status: number, instanceId: string): CommitOutcome {
    if (status === 412 || status === 409 || status === 404) return { committed: false, status };
    throw new TaskHubStorageError(
      `Durable task hub: a commit of instance '${instanceId}' failed with ${status}.`,
      status,
    );
  }

  /**
   * Applies a decided stage, and makes the commit visible: each part's upserts in one transactional batch that
   * first checks that the instance still carries this stage (a Read If-Match `etag`, the marked document's) — so
   * a host finishing a stage late, after another finished it and the instance moved on, never writes back what a
   * later commit deleted — then its deletes (404 tolerated: what a commit consumed never comes back under the same
   * id) and its stage document; last one batch replaces the instance document by the final one (If-Match) and
   * deletes the part that held it. Returns the instance's new etag, or undefined when another host finished it.
   */
  async applyStage(
    pk: string,
    etag: string,
    stages: StageDoc[],
    legacyFinal?: InstanceDoc,
  ): Promise<string | undefined> {
    const parts = [...stages].sort((a, b) => a.part - b.part);
    const last = parts.find((s) => s.final !== undefined);
    const final = last?.final ?? legacyFinal;
    if (!final) throw new Error(`Durable task hub: the staged commit of '${pk}' has no final part.`);
    for (const s of parts) {
      if (s === last) continue;
      if (s.upserts.length > 0) {
        const guarded = await this.batch(pk, [
          // Read's If-Match is honoured in a transactional batch; the SDK's type omits the field.
          { operationType: BulkOperationType.Read, id: INSTANCE_ID, ifMatch: etag } as OperationInput,
          ...s.upserts.map(
            (d) => ({ operationType: BulkOperationType.Upsert, resourceBody: asJson(d) }) as OperationInput,
          ),
        ]);
        if (!guarded.ok) return this.finishedElsewhere(guarded.status, pk);
      }
      await this.deleteIds(pk, s.deletes);
      await this.deleteIds(pk, [s.id]);
    }
    const r = await this.batch(pk, [
      {
        operationType: BulkOperationType.Replace,
        id: INSTANCE_ID,
        resourceBody: asJson(final),
        ifMatch: etag,
      },
      ...(last ? [{ operationType: BulkOperationType.Delete, id: last.id } as const] : []),
    ]);
    return r.ok ? r.etag : this.finishedElsewhere(r.status, pk);
  }

  /** A stage's guard or final batch refused: another host finished it (the instance moved on), else an error. */
  private finishedElsewhere(status: number, pk: string): undefined {
    if (status === 412 || status === 404) return undefined;
    throw new TaskHubStorageError(
      `Durable task hub: finishing a staged commit of '${pk}' failed with ${status}.`,
      status,
    );
  }

  /**
   * Finishes an interrupted stage found in a snapshot (the instance carries the mark); the instance's new etag, or
   * undefined when someone else finished it first. A part missing from the snapshot was applied already.
   */
  async resumeStage(snapshot: PartitionSnapshot): Promise<string | undefined> {
    const inst = snapshot.instance;
    if (!inst?.stage) return inst?._etag;
    const mark = inst.stage;
    const stages = snapshot.stages.filter((s) => s.token === mark.token);
    let legacyFinal: InstanceDoc | undefined;
    if (mark.finalPart === undefined) {
      // A mark written before stages had a final part: the marked document is the final one.
      legacyFinal = { ...inst };
      delete legacyFinal.stage;
      delete legacyFinal._etag;
      delete legacyFinal._ts;
    } else if (!stages.some((s) => s.part === mark.finalPart)) {
      // The final part goes only with the mark: a snapshot that has the mark and not the part is behind.
      throw new Error(
        `Durable task hub: the snapshot of '${inst.pk}' lacks its stage's final part; re-read.`,
      );
    }
    return this.applyStage(inst.pk, inst._etag ?? "", stages, legacyFinal);
  }

  /**
   * Deletes the stage documents of staged commits that never decided (a host died between writing its parts and
   * its deciding batch): every stage document in `snapshot` whose token the instance does not carry. One guarded
   * batch per ≤ 99 documents, final parts first, each checking that the instance is still the one the snapshot
   * read (a Read If-Match): a commit that decided since then changed it, and the sweep deletes nothing. A commit
   * that has not decided yet loses when it tries (its deciding batch reads its final part: 404), so no instance is
   * ever marked with a stage whose parts are gone. Returns how many documents were deleted; the rest (a guard
   * refused, or a later batch) are left for the next read of the partition.
   */
  async sweepAbandonedStages(snapshot: PartitionSnapshot): Promise<number> {
    const inst = snapshot.instance;
    if (!inst?._etag) return 0;
    const live = inst.stage?.token;
    const abandoned = snapshot.stages
      .filter((s) => s.token !== live)
      .sort((a, b) => Number(b.final !== undefined) - Number(a.final !== undefined));
    let deleted = 0;
    const perBatch = DURABLE_LIMITS.batchOperations - 1;
    for (let i = 0; i < abandoned.length; i += perBatch) {
      const ids = abandoned.slice(i, i + perBatch).map((s) => s.id);
      const r = await this.batch(inst.pk, [
        // Read's If-Match is honoured in a transactional batch; the SDK's type omits the field.
        { operationType: BulkOperationType.Read, id: INSTANCE_ID, ifMatch: inst._etag } as OperationInput,
        ...ids.map((id) => ({ operationType: BulkOperationType.Delete, id }) as OperationInput),
      ]);
      if (!r.ok) break;
      deleted += ids.length;
    }
    return deleted;
  }

  /** Upserts and deletes (404 tolerated), at most 100 operations per request; not atomic, safe to repeat. */
  async applyIdempotently(pk: string, upserts: WorkDoc[], deletes: string[]): Promise<void> {
    for (let i = 0; i < upserts.length; i += DURABLE_LIMITS.batchOperations) {
      const ops = upserts.slice(i, i + DURABLE_LIMITS.batchOperations).map(
        (d) =>
          ({
            operationType: BulkOperationType.Upsert,
            resourceBody: asJson(d),
            partitionKey: pk,
          }) as OperationInput,
      );
      const results = await bulkWithRetry(this.container, ops);
      const failed = results.find((r) => r.statusCode >= 400);
      if (failed)
        throw new TaskHubStorageError(
          `Durable task hub: writing documents failed with ${failed.statusCode}.`,
          failed.statusCode,
        );
    }
    await this.deleteIds(pk, deletes);
  }

  /** Deletes documents (a missing one is fine), in bulk requests of at most 100. */
  async deleteIds(pk: string, ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += DURABLE_LIMITS.batchOperations) {
      const ops = ids
        .slice(i, i + DURABLE_LIMITS.batchOperations)
        .map((id) => ({ operationType: BulkOperationType.Delete, id, partitionKey: pk }) as OperationInput);
      const results = await bulkWithRetry(this.container, ops);
      const failed = results.find((r) => r.statusCode >= 400 && r.statusCode !== 404);
      if (failed)
        throw new TaskHubStorageError(
          `Durable task hub: deleting documents failed with ${failed.statusCode}.`,
          failed.statusCode,
        );
    }
  }

  /** Claims an activity work item for `host` until `until` (If-Match); false when someone else changed it. */
  async claimActivity(doc: ActivityDoc, host: string, until: number): Promise<ActivityDoc | undefined> {
    const body: ActivityDoc = { ...doc, lockedBy: host, lockedUntil: until };
    delete body._etag;
    delete body._ts;
    try {
      const res = await this.container
        .item(doc.id, doc.pk)
        .replace(body, { accessCondition: { type: "IfMatch", condition: doc._etag ?? "" } });
      return res.resource ? { ...body, _etag: res.etag } : undefined;
    } catch (e) {
      const s = statusOf(e);
      if (s === 412 || s === 404) return undefined;
      throw e;
    }
  }

  /** Work another host may have left: due timers, unclaimed or expired activities, outbox, stages, starts. */
  async scanPending(now: number, horizon: number): Promise<PendingWork> {
    const { resources } = await this.container.items
      .query<AnyDoc>({
        query:
          "SELECT * FROM c WHERE c.hub = @hub AND ((c.kind = 'timer' AND (NOT IS_DEFINED(c.fireAtMs) OR c.fireAtMs <= @horizon)) OR " +
          "(c.kind = 'activity' AND (NOT IS_DEFINED(c.lockedUntil) OR c.lockedUntil < @now)) OR " +
          "c.kind = 'outbox' OR (c.kind = 'instance' AND (IS_DEFINED(c.stage) OR c.claim.until < @now OR " +
          "(IS_DEFINED(c.start.key) AND c._ts < @settled))))",
        parameters: [
          { name: "@hub", value: this.hub },
          { name: "@horizon", value: horizon },
          { name: "@now", value: now },
          // A start written a minute ago and not applied yet (its feed page was checkpointed before a crash).
          { name: "@settled", value: Math.floor(Date.now() / 1000) - 60 },
        ],
      })
      .fetchAll();
    const out: PendingWork = { timers: [], activities: [], outbox: [], staged: [], claims: [] };
    for (const d of resources) {
      if (d.kind === "timer") out.timers.push(d);
      else if (d.kind === "activity") out.activities.push(d);
      else if (d.kind === "outbox") out.outbox.push(d);
      else if (d.kind === "instance") {
        if (d.stage || d.start) out.staged.push(d);
        if (d.claim && d.claim.until < now) out.claims.push({ ...d, claim: d.claim });
      }
    }
    return out;
  }
}
