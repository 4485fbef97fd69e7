import { BulkOperationType, type OperationInput } from "@azure/cosmos";
import {
  asJson,
  docBytes,
  type HistoryDoc,
  historyId,
  type InstanceDoc,
  partitionKeyOf,
  type StageDoc,
  stageId,
  type WorkDoc,
} from "./documents.js";
import { DURABLE_LIMITS } from "./limits.js";
import type { HistoryEvent } from "./types.js";

/**
 * How one commit of an instance is written within Cosmos DB's limits, by construction (docs/durable-design.md,
 * "Commits"). Pure: the store runs the plan.
 * - **single**: everything in one transactional batch (≤ 100 operations, ≤ DURABLE_LIMITS.batchBytes): the instance
 *   document's If-Match decides the race and the writes land together, or nothing does.
 * - **staged**: too big for one batch. First the writes are stored as inert `stage` documents (nothing dispatches
 *   them), then one batch writes the instance document (If-Match) naming the stage — that decides the race before
 *   anything visible is written — then each part is applied idempotently (upserts, deletes that tolerate 404) and
 *   its stage document deleted, and the instance's `stage` mark is cleared. Whoever touches the instance next
 *   finishes an interrupted stage first, so a crash anywhere resumes. A losing host's stage documents are deleted.
 */

export interface CommitInput {
  hub: string;
  instanceId: string;
  /** The instance document to write: replace If-Match `ifMatch`, or create when `ifMatch` is undefined. */
  instance?: { body: InstanceDoc; ifMatch?: string };
  upserts: WorkDoc[];
  deletes: string[];
  /** Names the stage documents if the commit is staged (unique per attempt). */
  token: string;
}

export type CommitPlan =
  | { kind: "single"; ops: OperationInput[] }
  | {
      kind: "staged";
      stages: StageDoc[];
      /** The deciding batch: the instance document with its `stage` mark. */
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
  const fits = (s: StageDoc, size: number) =>
    s.upserts.length + s.deletes.length < DURABLE_LIMITS.batchOperations && currentBytes + size <= room;
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
  const marked: InstanceDoc = { ...body, stage: { token: input.token, parts: stages.length } };
  return { kind: "staged", stages, deciding: [instanceOp(input.instance, marked)], final };
}

/**
 * An execution's new history events as chunk documents, numbered from `firstChunk`: each at most
 * DURABLE_LIMITS.chunkEvents events and DURABLE_LIMITS.chunkBytes bytes (an event larger than that alone).
 */
export function historyChunks(
  hub: string,
  instanceId: string,
  executionId: string,
  firstChunk: number,
  events: HistoryEvent[],
): HistoryDoc[] {
  const pk = partitionKeyOf(hub, instanceId);
  const out: HistoryDoc[] = [];
  let current: HistoryDoc | undefined;
  let bytes = 0;
  for (const e of events) {
    const size = docBytes(e);
    if (
      !current ||
      current.events.length >= DURABLE_LIMITS.chunkEvents ||
      (bytes + size > DURABLE_LIMITS.chunkBytes && current.events.length > 0)
    ) {
      const chunk = firstChunk + out.length;
      current = {
        id: historyId(executionId, chunk),
        pk,
        kind: "history",
        hub,
        executionId,
        chunk,
        events: [],
      };
      bytes = 0;
      out.push(current);
    }
    current.events.push(e);
    bytes += size;
  }
  return out;
}
