import { NotFoundError } from "@cosmos-feed/core/cosmos/errors";
import { readItem, type Stored, updateItem } from "@cosmos-feed/core/cosmos/occ";
import type { AppContext } from "./context.js";
import {
  isTerminalOperation,
  type OperationDocument,
  type OperationKind,
  type ResourceDocument,
  resourcePath,
} from "./model.js";

// Operations live in the resources container, in their resource's partition (the subscription), so the write
// that accepts a mutation — the new operation, the resource naming it, and the superseded operation marked
// Canceled — is one transactional batch: no crash, and no change the latest-version feed coalesces away, can
// leave an acknowledged operation without an owner that drives it to a terminal state.

/** Operation document ids: `op:<uuid>`. Resource ids are names, which never contain ':' — no collision. */
export function operationDocId(operationId: string): string {
  return `op:${operationId}`;
}

/** A new operation, Accepted; it expires `ttlSeconds` after its last write (the container has TTL on). */
export function newOperation(
  operationId: string,
  sub: string,
  resourceName: string,
  kind: OperationKind,
  now: string,
  ttlSeconds: number,
): OperationDocument {
  return {
    id: operationDocId(operationId),
    docType: "operation",
    operationId,
    subscriptionId: sub,
    resourceName,
    resourceId: resourcePath(sub, resourceName),
    kind,
    status: "Accepted",
    startTime: now,
    lastUpdatedTime: now,
    ttl: ttlSeconds,
  };
}

/**
 * The operation ended: its terminal status, end time, and why (for Failed and Canceled); `by`, the newer operation
 * that replaced a Canceled one.
 */
export function finished(
  op: OperationDocument,
  status: "Succeeded" | "Failed" | "Canceled",
  at: string,
  error?: { code: string; message: string },
  by?: string,
): OperationDocument {
  return {
    ...op,
    status,
    lastUpdatedTime: at,
    endTime: at,
    ...(op.orchestration ? { orchestration: { ...op.orchestration, step: "done" } } : {}),
    ...(error ? { error } : {}),
    ...(by ? { supersededBy: by } : {}),
  };
}

/** The operation Canceled because `by` (of `kind`, when known) replaced it before it finished. */
export function canceledBy(
  op: OperationDocument,
  at: string,
  by: string,
  kind?: OperationKind,
): OperationDocument {
  return finished(op, "Canceled", at, supersededBy(by, kind), by);
}

/** Why an operation was canceled by a newer one (`kind` when known). */
export function supersededBy(
  operationId: string,
  kind?: OperationKind,
): {
  code: string;
  message: string;
} {
  return {
    code: "Superseded",
    message: `Operation ${operationId}${kind ? ` (${kind})` : ""} replaced this one before it finished.`,
  };
}

export function readOperation(
  ctx: AppContext,
  sub: string,
  operationId: string,
  signal?: AbortSignal,
): Promise<Stored<OperationDocument> | undefined> {
  return readItem<OperationDocument>(ctx.containers.resources, operationDocId(operationId), sub, { signal });
}

/** The operation a resource names, while it is not finished (what a newer mutation must cancel). */
export async function pendingOperationOf(
  ctx: AppContext,
  resource: ResourceDocument | undefined,
): Promise<Stored<OperationDocument> | undefined> {
  if (!resource?.operationId) return undefined;
  const op = await readOperation(ctx, resource.subscriptionId, resource.operationId);
  return op && !isTerminalOperation(op.status) ? op : undefined;
}

/**
 * Read → change → replace If-Match of one operation (`mutate` returns undefined to leave it); `options.current`,
 * an operation the caller just read, saves the first read. The operation as stored after it; a missing one
 * (expired) is left alone: undefined.
 */
export async function updateOperation(
  ctx: AppContext,
  sub: string,
  operationId: string,
  mutate: (op: Stored<OperationDocument>) => OperationDocument | undefined,
  options: { current?: Stored<OperationDocument> } = {},
): Promise<Stored<OperationDocument> | undefined> {
  try {
    return await updateItem<OperationDocument>(
      ctx.containers.resources,
      operationDocId(operationId),
      sub,
      mutate,
      options,
    );
  } catch (e) {
    if (e instanceof NotFoundError) return undefined;
    throw e;
  }
}

/** Ends an unfinished operation with `status` (a finished or missing one is left as it is). */
export async function endOperation(
  ctx: AppContext,
  sub: string,
  operationId: string,
  status: "Succeeded" | "Failed" | "Canceled",
  error?: { code: string; message: string },
  by?: string,
): Promise<void> {
  await updateOperation(ctx, sub, operationId, (op) =>
    isTerminalOperation(op.status) ? undefined : finished(op, status, new Date().toISOString(), error, by),
  );
}
