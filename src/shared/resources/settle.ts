import { type BatchWrite, commitBatch } from "@cosmos-feed/core/cosmos/batch";
import { NotFoundError, PreconditionFailedError } from "@cosmos-feed/core/cosmos/errors";
import { readItem, type Stored } from "@cosmos-feed/core/cosmos/occ";
import { defaultOccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";
import type { AppContext } from "./context.js";
import { isTerminalOperation, type OperationDocument, type ResourceDocument } from "./model.js";
import { canceledBy, finished, readOperation } from "./operations.js";
import type { ProvisioningInput } from "./provisioning.js";

// How a provisioning step ends its operation: with its resource's last change, in one transactional batch.

/** The resource's last change when its operation ends: its terminal state (If-Match the resource read). */
export const toState =
  (state: "Succeeded" | "Failed") =>
  (r: Stored<ResourceDocument>): BatchWrite => ({
    kind: "replace",
    id: r.id,
    body: { ...r, provisioningState: state },
    etag: r._etag,
  });

/**
 * Ends the operation with `status` in one transactional batch with its resource's last change (`change`), while
 * the operation is still the resource's latest: the resource's terminal state and its operation's can never
 * disagree, whatever crashes between. A superseded operation is Canceled instead, and one whose resource is gone
 * ends with `status` (a retried delete whose first attempt committed). A lost race re-reads (bounded).
 */
export async function settle(
  ctx: AppContext,
  input: ProvisioningInput,
  status: "Succeeded" | "Failed",
  change: (resource: Stored<ResourceDocument>) => BatchWrite,
  options: {
    error?: { code: string; message: string };
    /** Marks the operation before it ends (undefined: as it is), e.g. with the step that ends it. */
    mark?: (op: Stored<OperationDocument>) => OperationDocument | undefined;
  } = {},
): Promise<{
  outcome: "settled" | "superseded" | "gone" | "finished";
  /** The operation as it ended (or had ended before); undefined when it is gone. */
  operation?: OperationDocument;
}> {
  const { resources } = ctx.containers;
  const { error, mark } = options;
  return defaultOccRetryPolicy.run(
    async () => {
      // Both reads at once: neither depends on the other.
      const [stored, resource] = await Promise.all([
        readOperation(ctx, input.subscriptionId, input.operationId),
        readItem<ResourceDocument>(resources, input.resourceId, input.subscriptionId),
      ]);
      if (!stored || isTerminalOperation(stored.status)) return { outcome: "finished", operation: stored };
      const op = mark?.(stored) ?? stored;
      const at = new Date().toISOString();
      if (!resource || resource.operationId !== input.operationId) {
        const ending = resource ? canceledBy(op, at, resource.operationId) : finished(op, status, at, error);
        await commitBatch(resources, input.subscriptionId, [
          { kind: "replace", id: stored.id, body: ending, etag: stored._etag },
        ]);
        return { outcome: resource ? "superseded" : "gone", operation: ending };
      }
      const ending = finished(op, status, at, error);
      await commitBatch(resources, input.subscriptionId, [
        change(resource),
        { kind: "replace", id: stored.id, body: ending, etag: stored._etag },
      ]);
      return { outcome: "settled", operation: ending };
    },
    { isRetryable: (e) => e instanceof PreconditionFailedError || e instanceof NotFoundError },
  );
}
