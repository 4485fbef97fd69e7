import { NotFoundError, PreconditionFailedError } from "../cosmos/errors.js";
import { deleteIfMatch, readItem, updateItem } from "../cosmos/occ.js";
import type { AppContext } from "./context.js";
import {
  ApiError,
  isTerminalOperation,
  type OperationDocument,
  type ProvisioningState,
  parseOperationId,
  parseResourceName,
  parseSubscriptionId,
  type ResourceDocument,
} from "./model.js";
import { refreshSummary } from "./reactions.js";

/** The durable functions of the resource provider: two orchestrations and their activities. */
export const PROVISIONING = {
  orchestrations: { provision: "provisioning", deprovision: "deprovisioning" },
  activities: {
    validate: "validateResource",
    provision: "provisionResource",
    finalize: "finalizeResource",
    fail: "failResource",
    deprovision: "deprovisionResource",
  },
} as const;

/**
 * A tag that makes the provision step misbehave, for trying failures end to end: `fail` fails every attempt,
 * `flaky` fails the first attempt only (attempts are counted on the operation, so the count survives restarts).
 */
export const SIMULATE_TAG = "cosmos-feed.simulate";

/** What both orchestrations and every activity take. */
export interface ProvisioningInput {
  subscriptionId: string;
  /** The resource's id (its name in lower case). */
  resourceId: string;
  operationId: string;
}

/** The orchestration's instance id: one per operation, so a redelivered change never starts a second one. */
export function orchestrationInstanceId(
  kind: "provisioning" | "deprovisioning",
  operationId: string,
): string {
  return `${kind}-${operationId}`;
}

/** Validates an orchestration's or activity's input; a clear error (the instance fails with it) otherwise. */
export function parseProvisioningInput(value: unknown): ProvisioningInput {
  const v = value as Partial<ProvisioningInput> | null;
  if (typeof v !== "object" || v === null) {
    throw new ApiError(
      400,
      "InvalidOrchestrationInput",
      `The input must be an object { subscriptionId, resourceId, operationId }; got ${JSON.stringify(value)}.`,
    );
  }
  return {
    subscriptionId: parseSubscriptionId(v.subscriptionId),
    resourceId: parseResourceName(v.resourceId).toLowerCase(),
    operationId: parseOperationId(v.operationId),
  };
}

/** The input for a changed resource document, and which orchestration it needs. */
export function provisioningRequestFor(doc: ResourceDocument): {
  orchestration: "provisioning" | "deprovisioning";
  input: ProvisioningInput;
} {
  return {
    orchestration: doc.provisioningState === "Deleting" ? "deprovisioning" : "provisioning",
    input: { subscriptionId: doc.subscriptionId, resourceId: doc.id, operationId: doc.operationId },
  };
}

export interface ValidateResult {
  /** False when the resource is gone or a newer operation replaced this one: the orchestration ends. */
  proceed: boolean;
  reason?: string;
}

const now = () => new Date().toISOString();

/**
 * Checks that the operation is still the resource's latest and not finished, then marks it Running at `step`
 * (and the resource Provisioning when it was Accepted). A superseded or finished operation is left as it is —
 * marked Canceled when a newer operation replaced it. Idempotent.
 */
export async function validateStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
): Promise<ValidateResult> {
  const { resources, operations } = ctx.containers;
  const op = await readItem<OperationDocument>(operations, input.operationId, input.operationId);
  if (!op) return { proceed: false, reason: `operation ${input.operationId} does not exist (expired?)` };
  if (isTerminalOperation(op.status)) return { proceed: false, reason: `operation is already ${op.status}` };
  const resource = await readItem<ResourceDocument>(resources, input.resourceId, input.subscriptionId);
  if (!resource || resource.operationId !== input.operationId) {
    const reason = resource
      ? `operation ${resource.operationId} replaced this one`
      : "the resource no longer exists";
    await finishOperation(ctx, input, "Canceled", { code: "Superseded", message: reason });
    return { proceed: false, reason };
  }
  await setStep(ctx, input, orchestration, "validate");
  if (resource.provisioningState === "Accepted") await setResourceState(ctx, input, "Provisioning");
  return { proceed: true };
}

/** Records the step on the operation (status Running). */
export async function setStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
  step: string,
): Promise<void> {
  await updateItem<OperationDocument>(
    ctx.containers.operations,
    input.operationId,
    input.operationId,
    (op) => {
      if (isTerminalOperation(op.status)) return undefined;
      if (op.status === "Running" && op.orchestration?.step === step) return undefined;
      return {
        ...op,
        status: "Running",
        lastUpdatedTime: now(),
        orchestration: { ...orchestration, step },
      };
    },
  );
}

/** Sets the resource's state if this operation is still its latest; false when it is not (or it is gone). */
async function setResourceState(
  ctx: AppContext,
  input: ProvisioningInput,
  state: ProvisioningState,
): Promise<boolean> {
  let current = true;
  try {
    await updateItem<ResourceDocument>(
      ctx.containers.resources,
      input.resourceId,
      input.subscriptionId,
      (r) => {
        if (r.operationId !== input.operationId) {
          current = false;
          return undefined;
        }
        if (r.provisioningState === state) return undefined;
        // The provider's own state change: systemData.lastModifiedAt stays the client's last write (as in ARM).
        return { ...r, provisioningState: state };
      },
    );
  } catch (e) {
    if (e instanceof NotFoundError) return false;
    throw e;
  }
  return current;
}

/**
 * The provision step's work (here: counting the attempt, honouring the simulate tag). Counting first makes a
 * `flaky` resource fail exactly its first attempt, across restarts.
 */
export async function provisionStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
): Promise<{ attempt: number }> {
  await setStep(ctx, input, orchestration, "provision");
  let attempt = 0;
  await updateItem<OperationDocument>(
    ctx.containers.operations,
    input.operationId,
    input.operationId,
    (op) => {
      attempt = (op.attempts?.provision ?? 0) + 1;
      return { ...op, attempts: { ...op.attempts, provision: attempt }, lastUpdatedTime: now() };
    },
  );
  const resource = await readItem<ResourceDocument>(
    ctx.containers.resources,
    input.resourceId,
    input.subscriptionId,
  );
  const simulate = resource?.tags?.[SIMULATE_TAG];
  if (simulate === "fail") {
    throw new Error(`Provisioning failed (attempt ${attempt}): the resource is tagged ${SIMULATE_TAG}=fail.`);
  }
  if (simulate === "flaky" && attempt === 1) {
    throw new Error(`Provisioning failed on the first attempt (${SIMULATE_TAG}=flaky); the retry succeeds.`);
  }
  return { attempt };
}

/** Marks the resource Succeeded and the operation Succeeded (when it is still the resource's latest). */
export async function finalizeStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
): Promise<void> {
  await setStep(ctx, input, orchestration, "finalize");
  const current = await setResourceState(ctx, input, "Succeeded");
  if (current) await finishOperation(ctx, input, "Succeeded");
  else {
    await finishOperation(ctx, input, "Canceled", {
      code: "Superseded",
      message: "A newer operation replaced this one before it finished.",
    });
  }
}

/** Marks the resource Failed and the operation Failed with `error`. */
export async function failStep(
  ctx: AppContext,
  input: ProvisioningInput,
  error: { code: string; message: string },
): Promise<void> {
  await setResourceState(ctx, input, "Failed");
  await finishOperation(ctx, input, "Failed", error);
}

/** Removes the resource if this delete operation is still its latest; the operation Succeeds either way. */
export async function deprovisionStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
): Promise<{ deleted: boolean }> {
  await setStep(ctx, input, orchestration, "deprovision");
  const { resources } = ctx.containers;
  for (let attempt = 0; attempt < 5; attempt++) {
    const r = await readItem<ResourceDocument>(resources, input.resourceId, input.subscriptionId);
    if (!r) {
      await finishOperation(ctx, input, "Succeeded");
      return { deleted: false };
    }
    if (r.operationId !== input.operationId) {
      await finishOperation(ctx, input, "Canceled", {
        code: "Superseded",
        message: `operation ${r.operationId} replaced this delete`,
      });
      return { deleted: false };
    }
    try {
      await deleteIfMatch(resources, r.id, r.subscriptionId, r._etag);
      // The latest-version change feed shows no delete: the summary is recounted here.
      await refreshSummary(ctx, input.subscriptionId);
      await finishOperation(ctx, input, "Succeeded");
      return { deleted: true };
    } catch (e) {
      if (e instanceof NotFoundError) continue;
      if (!(e instanceof PreconditionFailedError)) throw e;
    }
  }
  throw new Error(`The resource kept changing while being deleted (operation ${input.operationId}).`);
}

async function finishOperation(
  ctx: AppContext,
  input: ProvisioningInput,
  status: "Succeeded" | "Failed" | "Canceled",
  error?: { code: string; message: string },
): Promise<void> {
  try {
    await updateItem<OperationDocument>(
      ctx.containers.operations,
      input.operationId,
      input.operationId,
      (op) => {
        if (isTerminalOperation(op.status)) return undefined;
        const at = now();
        return {
          ...op,
          status,
          lastUpdatedTime: at,
          endTime: at,
          ...(op.orchestration ? { orchestration: { ...op.orchestration, step: "done" } } : {}),
          ...(error ? { error } : {}),
        };
      },
    );
  } catch (e) {
    // The operation expired (TTL): nothing left to record on.
    if (!(e instanceof NotFoundError)) throw e;
  }
}
