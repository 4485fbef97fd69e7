import { forEachConcurrently } from "@cosmos-feed/core/concurrency";
import { readItem } from "@cosmos-feed/core/cosmos/occ";
import type { AppContext } from "./context.js";
import type { OperationDocument, ResourceDocument } from "./model.js";
import { endOperation, supersededBy } from "./operations.js";
import { failStep, orchestrationInstanceId, provisioningRequestFor } from "./provisioning.js";
import { type OrchestrationStarter, REACTION_CONCURRENCY, runtimeStatusOf } from "./reactions.js";

// The safety net under "every acknowledged operation ends" (docs/app.md): the reactions trigger starts an
// operation's orchestration, and the orchestration ends the operation. Either can fail for good — the host gives up
// on a trigger batch after TRIGGER_MAX_RETRY_COUNT retries and checkpoints past it; an orchestration can fail or be
// terminated (or purged) before it ended its operation. A timer finds operations that have not moved for
// OPERATION_STALL_SECONDS and, for each, does what was missed: start the orchestration that never started, or end
// the operation whose orchestration ended without it.

/** Durable runtime statuses after which an orchestration will do nothing more. */
const ENDED = new Set(["Completed", "Failed", "Terminated", "Canceled"]);

export interface ReconcileOutcome {
  /** Stalled operations found. */
  stalled: number;
  /** Orchestrations started for operations that had none (the trigger never started them). */
  started: string[];
  /** Operations failed because their orchestration ended without ending them. */
  failed: string[];
  /** Operations ended because the resource no longer names them (Canceled) or is gone. */
  ended: string[];
  /** Operations whose orchestration is still pending or running: left to it. */
  running: string[];
}

/**
 * Finds the unfinished operations whose last write is older than `stallMs` before `now` (one cross-partition query
 * on indexed paths) and reconciles each with its resource and its orchestration. Idempotent, and safe beside the
 * trigger and the orchestrations: every write is conditional, and starting an instance that exists is refused.
 */
export async function reconcileOperations(
  ctx: AppContext,
  client: OrchestrationStarter,
  options: { now: number; stallMs: number },
): Promise<ReconcileOutcome> {
  const cutoff = new Date(options.now - options.stallMs).toISOString();
  const { resources: stalled } = await ctx.containers.resources.items
    .query<OperationDocument>({
      query:
        "SELECT * FROM c WHERE c.docType = 'operation' AND (c.status = 'Accepted' OR c.status = 'Running') AND c.lastUpdatedTime < @cutoff",
      parameters: [{ name: "@cutoff", value: cutoff }],
    })
    .fetchAll();
  const out: ReconcileOutcome = { stalled: stalled.length, started: [], failed: [], ended: [], running: [] };
  await forEachConcurrently(stalled, REACTION_CONCURRENCY, async (op) => {
    const resource = await readItem<ResourceDocument>(
      ctx.containers.resources,
      op.resourceName.toLowerCase(),
      op.subscriptionId,
    );
    if (!resource || resource.operationId !== op.operationId) {
      // Not the resource's operation (any more): nothing will drive it. A delete whose resource is gone did its work.
      if (!resource && op.kind === "Delete") {
        await endOperation(ctx, op.subscriptionId, op.operationId, "Succeeded");
      } else {
        await endOperation(
          ctx,
          op.subscriptionId,
          op.operationId,
          "Canceled",
          resource
            ? supersededBy(resource.operationId)
            : { code: "Superseded", message: "The resource no longer exists." },
          resource?.operationId,
        );
      }
      out.ended.push(op.operationId);
      return;
    }
    // Its sighting (by: "reconcile") rides in the input: validate records it unless the operation has one.
    const { orchestration, input } = provisioningRequestFor(resource, {
      at: new Date(options.now).toISOString(),
      by: "reconcile",
    });
    const instanceId = orchestrationInstanceId(orchestration, op.operationId);
    const status = await runtimeStatusOf(client, instanceId);
    if (status === undefined) {
      try {
        await client.startNew(orchestration, { instanceId, input });
        out.started.push(op.operationId);
      } catch (e) {
        // Started meanwhile (the trigger's redelivery, or another host's timer): it drives the operation now.
        if ((await runtimeStatusOf(client, instanceId)) === undefined) throw e;
        out.running.push(op.operationId);
      }
      return;
    }
    if (!ENDED.has(status)) {
      out.running.push(op.operationId);
      return;
    }
    await failStep(ctx, input, {
      code: "OrchestrationEnded",
      message: `The orchestration ${instanceId} ended (${status}) without finishing this operation.`,
    });
    out.failed.push(op.operationId);
  });
  return out;
}
