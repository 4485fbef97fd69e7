import { commitBatch } from "@cosmos-feed/core/cosmos/batch";
import { NotFoundError, PreconditionFailedError } from "@cosmos-feed/core/cosmos/errors";
import { readItem, type Stored, updateItem } from "@cosmos-feed/core/cosmos/occ";
import type { AppContext } from "./context.js";
import {
  ApiError,
  isNonTerminal,
  isTerminalOperation,
  type OperationDocument,
  type ProvisioningState,
  parseOperationId,
  parseResourceName,
  parseSubscriptionId,
  type ResourceDocument,
} from "./model.js";
import { endOperation, readOperation, supersededBy, updateOperation } from "./operations.js";
import { endOf, type OperationEnd } from "./outcome.js";
import { settle, toState } from "./settle.js";
import { refreshSummary } from "./summaries.js";

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

/**
 * The first sighting of the resource in a non-terminal state, as the operation records it (`observed`): by the
 * reactions trigger, or (`by: "reconcile"`) by the reconciler when it found the operation stalled and started its
 * orchestration itself.
 */
export type Sighting = NonNullable<OperationDocument["observed"]>;

/** What both orchestrations and every activity take. */
export interface ProvisioningInput {
  subscriptionId: string;
  /** The resource's id (its name in lower case). */
  resourceId: string;
  operationId: string;
  /**
   * The sighting of the change that started the orchestration (its starter's): validate records it on the operation
   * in the write that marks it Running, so the sighting costs no write of its own. Only the orchestration's input
   * and validate's carry it.
   */
  observed?: Sighting;
}

/** The orchestration's instance id: one per operation, so a redelivered change never starts a second one. */
export function orchestrationInstanceId(
  kind: "provisioning" | "deprovisioning",
  operationId: string,
): string {
  return `${kind}-${operationId}`;
}

const badInput = (what: string, value: unknown) =>
  new ApiError(400, "InvalidOrchestrationInput", `${what}; got ${JSON.stringify(value)}.`);

/** Validates an orchestration's or activity's input; a clear error (the instance fails with it) otherwise. */
export function parseProvisioningInput(value: unknown): ProvisioningInput {
  const v = value as Partial<ProvisioningInput> | null;
  if (typeof v !== "object" || v === null) {
    throw badInput(
      "The input must be an object { subscriptionId, resourceId, operationId, observed? }",
      value,
    );
  }
  return {
    subscriptionId: parseSubscriptionId(v.subscriptionId),
    resourceId: parseResourceName(v.resourceId).toLowerCase(),
    operationId: parseOperationId(v.operationId),
    ...(v.observed === undefined ? {} : { observed: parseSighting(v.observed) }),
  };
}

function parseSighting(value: unknown): Sighting {
  const o = value as Partial<Sighting> | null;
  if (
    typeof o !== "object" ||
    o === null ||
    typeof o.at !== "string" ||
    Number.isNaN(Date.parse(o.at)) ||
    !isNonTerminal(o.provisioningState) ||
    typeof o.resourceEtag !== "string" ||
    (o.by !== undefined && o.by !== "reconcile")
  ) {
    throw badInput(
      'observed must be { at: an ISO time, provisioningState: a non-terminal state, resourceEtag, by?: "reconcile" }',
      value,
    );
  }
  return {
    at: o.at,
    provisioningState: o.provisioningState as ProvisioningState,
    resourceEtag: o.resourceEtag,
    ...(o.by ? { by: o.by } : {}),
  };
}

/**
 * The input for a changed resource document, and which orchestration it needs; with `sighting` (when it was seen,
 * and by whom) and the document's `_etag`, the `observed` that validate records on the operation.
 */
export function provisioningRequestFor(
  doc: ResourceDocument & { _etag?: string },
  sighting?: { at: string; by?: "reconcile" },
): {
  orchestration: "provisioning" | "deprovisioning";
  input: ProvisioningInput;
} {
  const observed: Sighting | undefined =
    sighting && doc._etag
      ? {
          at: sighting.at,
          provisioningState: doc.provisioningState,
          resourceEtag: doc._etag,
          ...(sighting.by ? { by: sighting.by } : {}),
        }
      : undefined;
  return {
    orchestration: doc.provisioningState === "Deleting" ? "deprovisioning" : "provisioning",
    input: {
      subscriptionId: doc.subscriptionId,
      resourceId: doc.id,
      operationId: doc.operationId,
      ...(observed ? { observed } : {}),
    },
  };
}

export interface ValidateResult {
  /** False when the resource is gone or a newer operation replaced this one: the orchestration ends. */
  proceed: boolean;
  /**
   * When it proceeds: the resource's {@link SIMULATE_TAG} as validate read it, for the provision step (which then
   * needs no read of its own).
   */
  simulate?: string;
  reason?: string;
  /** When it does not proceed: the operation's end (undefined: it is gone). */
  operation?: OperationEnd;
}

const now = () => new Date().toISOString();

/**
 * Checks that the operation is still the resource's latest and not finished, then marks it Running at `step`
 * (and the resource Provisioning when it was Accepted), recording the input's sighting as the operation's
 * `observed` when it has none. A finished operation is left as it is; one that is not
 * the resource's latest (the API cancels a superseded operation in the batch that supersedes it, so this is a
 * belt-and-braces check) is marked Canceled. Idempotent.
 */
export async function validateStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
): Promise<ValidateResult> {
  // Both reads at once: neither depends on the other.
  const [op, resource] = await Promise.all([
    readOperation(ctx, input.subscriptionId, input.operationId),
    readItem<ResourceDocument>(ctx.containers.resources, input.resourceId, input.subscriptionId),
  ]);
  if (!op) return { proceed: false, reason: `operation ${input.operationId} does not exist (expired?)` };
  if (isTerminalOperation(op.status)) {
    return { proceed: false, reason: `operation is already ${op.status}`, operation: endOf(op) };
  }
  if (!resource || resource.operationId !== input.operationId) {
    const error = resource
      ? supersededBy(resource.operationId)
      : { code: "Superseded", message: "The resource no longer exists." };
    await endOperation(
      ctx,
      input.subscriptionId,
      input.operationId,
      "Canceled",
      error,
      resource?.operationId,
    );
    return {
      proceed: false,
      reason: error.message,
      operation: { status: "Canceled", error, ...(resource ? { supersededBy: resource.operationId } : {}) },
    };
  }
  // Both documents were just read: the writes start from them, together in one transactional batch when both
  // change (one request, where two replaces took two). A lost race does each write alone from a fresh read.
  const marked = atStep(op, orchestration, "validate", input.observed);
  const provisioning = resource.provisioningState === "Accepted";
  const simulate = resource.tags?.[SIMULATE_TAG];
  const proceed: ValidateResult = { proceed: true, ...(simulate === undefined ? {} : { simulate }) };
  if (marked && provisioning) {
    try {
      await commitBatch(ctx.containers.resources, input.subscriptionId, [
        { kind: "replace", id: op.id, body: marked, etag: op._etag },
        {
          kind: "replace",
          id: resource.id,
          // The provider's own state change: systemData.lastModifiedAt stays the client's last write (as in ARM).
          body: { ...resource, provisioningState: "Provisioning" },
          etag: resource._etag,
        },
      ]);
      return proceed;
    } catch (e) {
      if (!(e instanceof PreconditionFailedError)) throw e;
    }
    await setStep(ctx, input, orchestration, "validate");
    await setResourceState(ctx, input, "Provisioning");
    return proceed;
  }
  await setStep(ctx, input, orchestration, "validate", op);
  if (provisioning) await setResourceState(ctx, input, "Provisioning", resource);
  return proceed;
}

/**
 * The operation marked Running at `step`, with `sighting` as its `observed` when it records none yet (the first
 * sighting is what is recorded); undefined: leave it — finished, or already at that step with a sighting recorded.
 */
function atStep(
  op: Stored<OperationDocument>,
  orchestration: { name: string; instanceId: string },
  step: string,
  sighting?: Sighting,
): OperationDocument | undefined {
  if (isTerminalOperation(op.status)) return undefined;
  const observed = op.observed ?? sighting;
  if (op.status === "Running" && op.orchestration?.step === step && observed === op.observed)
    return undefined;
  return {
    ...op,
    status: "Running",
    lastUpdatedTime: now(),
    orchestration: { ...orchestration, step },
    ...(observed ? { observed } : {}),
  };
}

/**
 * Records the step on the operation (status Running); `current`, when the caller just read the operation, saves
 * the read. The operation as stored after it (undefined when it is gone).
 */
export async function setStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
  step: string,
  current?: Stored<OperationDocument>,
): Promise<Stored<OperationDocument> | undefined> {
  return updateOperation(
    ctx,
    input.subscriptionId,
    input.operationId,
    (op) => atStep(op, orchestration, step, input.observed),
    {
      current,
    },
  );
}

/** Sets the resource's state if this operation is still its latest; false when it is not (or it is gone). */
async function setResourceState(
  ctx: AppContext,
  input: ProvisioningInput,
  state: ProvisioningState,
  known?: Stored<ResourceDocument>,
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
      { current: known },
    );
  } catch (e) {
    if (e instanceof NotFoundError) return false;
    throw e;
  }
  return current;
}

/** The provision step's input: the orchestration counts its attempts (1-based) and passes validate's simulate tag. */
export interface ProvisionAttempt {
  attempt: number;
  simulate?: string;
}

/**
 * The provision step's work (here: honouring the simulate tag). It makes no database request: the orchestration
 * counts its attempts itself (durable replay keeps the count across restarts) and records them on the operation
 * in the batch that ends it, and validate read the tag. So `flaky` fails exactly the first attempt.
 */
export function provisionStep(
  _input: ProvisioningInput,
  { attempt, simulate }: ProvisionAttempt,
): { attempt: number } {
  if (simulate === "fail") {
    throw new Error(`Provisioning failed (attempt ${attempt}): the resource is tagged ${SIMULATE_TAG}=fail.`);
  }
  if (simulate === "flaky" && attempt === 1) {
    throw new Error(`Provisioning failed on the first attempt (${SIMULATE_TAG}=flaky); the retry succeeds.`);
  }
  return { attempt };
}

/** The operation marked at `step` with the provision attempts the orchestration counted (none: as atStep marks it). */
function withAttempts(
  op: Stored<OperationDocument>,
  orchestration: { name: string; instanceId: string },
  step: string,
  provisionAttempts: number | undefined,
): OperationDocument | undefined {
  const marked = atStep(op, orchestration, step);
  if (provisionAttempts === undefined) return marked;
  return { ...(marked ?? op), attempts: { ...op.attempts, provision: provisionAttempts } };
}

/**
 * Marks the resource and the operation Succeeded together (when the operation is still the resource's latest).
 * The operation's end: Succeeded, or Canceled when a newer operation replaced it (undefined: it is gone).
 */
export async function finalizeStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
  provisionAttempts?: number,
): Promise<OperationEnd | undefined> {
  // The step (and the provision attempts) are recorded in the batch that ends the operation (its `orchestration`
  // as setStep would mark it), not in a write of its own first.
  const { operation } = await settle(ctx, input, "Succeeded", toState("Succeeded"), {
    mark: (op) => withAttempts(op, orchestration, "finalize", provisionAttempts),
  });
  return endOf(operation);
}

/** Marks the resource and the operation Failed with `error`, together. The operation's end (Failed, or Canceled). */
export async function failStep(
  ctx: AppContext,
  input: ProvisioningInput,
  error: { code: string; message: string },
  provisionAttempts?: number,
): Promise<OperationEnd | undefined> {
  const mark = (op: Stored<OperationDocument>) =>
    provisionAttempts === undefined
      ? undefined
      : { ...op, attempts: { ...op.attempts, provision: provisionAttempts } };
  return endOf((await settle(ctx, input, "Failed", toState("Failed"), { error, mark })).operation);
}

/** Removes the resource and Succeeds the operation together, if this delete is still the resource's latest. */
export async function deprovisionStep(
  ctx: AppContext,
  input: ProvisioningInput,
  orchestration: { name: string; instanceId: string },
): Promise<{ deleted: boolean; operation?: OperationEnd }> {
  const { outcome, operation } = await settle(
    ctx,
    input,
    "Succeeded",
    (r) => ({ kind: "delete", id: r.id, etag: r._etag }),
    { mark: (op) => atStep(op, orchestration, "deprovision") },
  );
  // The latest-version change feed shows no delete: the summary is recounted here.
  if (outcome === "settled") await refreshSummary(ctx, input.subscriptionId);
  const end = endOf(operation);
  return { deleted: outcome === "settled", ...(end ? { operation: end } : {}) };
}
