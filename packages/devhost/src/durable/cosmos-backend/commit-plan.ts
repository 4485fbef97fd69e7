import { BulkOperationType, type JSONObject, type OperationInput } from "@azure/cosmos";
import type { WorkItemCommit } from "../backend.js";
import {
  docBytes,
  type InstanceDoc,
  partitionKeyOf,
  type StageDoc,
  stageId,
  type WorkDoc,
} from "../documents.js";
import { DURABLE_LIMITS } from "../limits.js";

/**
 * How one commit of an instance is written within Cosmos DB's limits, by construction (docs/durable-design.md,
 * "Commits"). Pure: the store runs the plan.
 * - **single**: everything in one transactional batch (≤ 100 operations, ≤ DURABLE_LIMITS.batchBytes): the instance
 *   document's If-Match decides the race and the writes land together, or nothing does.
 * - **staged**: too big for one batch. First the writes are stored as inert `stage` documents (nothing dispatches
 *   them), the last of them holding the instance document the commit ends with; then one batch marks the instance
 *   document (If-Match) with the stage, leaving it as it was otherwise — that decides the race before anything
 *   visible is written, and readers keep seeing the instance as it was (its status, output and history: chunks past
 *   its `historyChunks` are not read) until the commit is whole; then each part is applied idempotently and its
 *   stage document deleted; last one batch replaces the instance document by the final one (If-Match) and deletes
 *   the part that held it. Whoever touches the instance next finishes an interrupted stage first, so a crash
 *   anywhere resumes. A losing host's stage documents are deleted.
 */

/** A work item's commit (backend.ts). */
export type CommitInput = WorkItemCommit;

/** Our documents as the SDK's batch body type (they are plain JSON). */
export const asJson = (d: object): JSONObject => d as unknown as JSONObject;

export type CommitPlan =
  | { kind: "single"; ops: OperationInput[] }
  | {
      kind: "staged";
      /** The parts, in order; the last holds `final` (and nothing else). */
      stages: StageDoc[];
      /** The deciding batch: the instance document as it was, with its `stage` mark. */
      deciding: OperationInput[];
      /** The instance document once every part is applied (the mark cleared). */
      final: InstanceDoc;
    }
  /** No instance document to decide a race (messages of an instance that does not exist are dropped). */
  | { kind: "unguarded"; upserts: WorkDoc[]; deletes: string[] };

function instanceOp(instance: NonNullable<CommitInput["instance"]>, body: InstanceDoc): OperationInput {
  return instance.ifMatch === undefined
    ? { operationType: BulkOperationType.Create, resourceBody: asJson(body) }
    : {
        operationType: BulkOperationType.Replace,
        id: body.id,
        resourceBody: asJson(body),
        ifMatch: instance.ifMatch,
      };
}

export function planCommit(input: CommitInput): CommitPlan {
  if (!input.instance) return { kind: "unguarded", upserts: input.upserts, deletes: input.deletes };
  const body = input.instance.body;
  const opCount = 1 + input.upserts.length + input.deletes.length;
  const bytes =
    docBytes(body) + input.upserts.reduce((n, d) => n + docBytes(d), 0) + input.deletes.length * 64;
  if (opCount <= DURABLE_LIMITS.batchOperations && bytes <= DURABLE_LIMITS.batchBytes) {
    return {
      kind: "single",
      ops: [
        instanceOp(input.instance, body),
        ...input.upserts.map(
          (d) => ({ operationType: BulkOperationType.Upsert, resourceBody: asJson(d) }) as OperationInput,
        ),
        ...input.deletes.map((id) => ({ operationType: BulkOperationType.Delete, id }) as OperationInput),
      ],
    };
  }
  const pk = partitionKeyOf(input.hub, input.instanceId);
  const stages: StageDoc[] = [];
  let current: StageDoc | undefined;
  let currentBytes = 0;
  const room = DURABLE_LIMITS.batchBytes - 1_000;
  const next = () => {
    current = {
      id: stageId(input.token, stages.length),
      pk,
      kind: "stage",
      hub: input.hub,
      token: input.token,
      part: stages.length,
      upserts: [],
      deletes: [],
    };
    currentBytes = docBytes(current);
    stages.push(current);
    return current;
  };
  // A part's writes go in one transactional batch with a guard (a read of the instance): one operation less.
  const fits = (s: StageDoc, size: number) =>
    s.upserts.length + s.deletes.length < DURABLE_LIMITS.batchOperations - 1 && currentBytes + size <= room;
  // History first, then deletes, then new work: a reader never sees work whose history is not stored.
  for (const d of input.upserts) {
    const size = docBytes(d);
    let s = current ?? next();
    if (!fits(s, size)) s = next();
    s.upserts.push(d);
    currentBytes += size;
  }
  for (const id of input.deletes) {
    let s = current ?? next();
    if (!fits(s, 64)) s = next();
    s.deletes.push(id);
    currentBytes += 64;
  }
  const final = { ...body };
  delete final.stage;
  const finalPart: StageDoc = {
    id: stageId(input.token, stages.length),
    pk,
    kind: "stage",
    hub: input.hub,
    token: input.token,
    part: stages.length,
    upserts: [],
    deletes: [],
    final,
  };
  stages.push(finalPart);
  const marked: InstanceDoc = {
    ...visibleBefore(input.instance),
    stage: { token: input.token, parts: stages.length, finalPart: finalPart.part },
  };
  // The deciding batch also reads the final part: a sweep of abandoned stages (HubStore.sweepAbandonedStages)
  // deletes final parts first, so a commit whose parts were swept before it decided loses (404) instead of marking
  // the instance with a stage that can never be finished.
  const deciding: OperationInput[] = [
    instanceOp(input.instance, marked),
    { operationType: BulkOperationType.Read, id: finalPart.id },
  ];
  return { kind: "staged", stages, deciding, final };
}

/**
 * What readers see while a staged commit is applied: the instance document as it was (system properties and any
 * older mark dropped), or for a new instance the final one as Pending, with no output and no history yet.
 */
function visibleBefore(instance: NonNullable<CommitInput["instance"]>): InstanceDoc {
  if (instance.before) {
    const was = { ...instance.before };
    for (const k of Object.keys(was))
      if (k.startsWith("_")) delete (was as unknown as Record<string, unknown>)[k];
    delete was.stage;
    return was;
  }
  const pending: InstanceDoc = {
    ...instance.body,
    status: "Pending",
    output: null,
    customStatus: null,
    historyChunks: 0,
  };
  delete pending.claim;
  delete pending.start;
  delete pending.historyTail;
  delete pending.historyTailBytes;
  delete pending.stage;
  return pending;
}
