import type { OrchestrationContext, OrchestrationHandler } from "durable-functions";
import * as df from "durable-functions";
import {
  deprovisionStep,
  failStep,
  finalizeStep,
  type OperationEnd,
  openAppContext,
  outputFor,
  PROVISIONING,
  type ProvisioningInput,
  type ProvisioningOutput,
  parseProvisioningInput,
  provisionStep,
  validateStep,
} from "../src/shared/resources/index.js";
import { loadSettings } from "../src/shared/settings.js";

// The provisioning orchestrations the reactions trigger starts: validate → provision → finalize, each activity
// retried with durable timers; a step that still fails marks the resource and its operation Failed. The output says
// what happened to the operation (outputFor): Succeeded, Canceled (superseded, and by which) or Skipped.
const settings = loadSettings();

function retryOptions(): df.RetryOptions {
  const retry = new df.RetryOptions(settings.activityFirstRetryIntervalMs, settings.activityMaxAttempts);
  retry.backoffCoefficient = 2;
  return retry;
}

const A = PROVISIONING.activities;

interface Validated {
  input: StepInput;
  retry: df.RetryOptions;
  /** validate's read of the resource's simulate tag, for the provision step. */
  simulate?: string;
  /** Set when validate says to stop: the orchestration's output. */
  skipped?: ProvisioningOutput;
}

/**
 * The start every orchestration here shares: its input (bad input fails the instance at once, with the reason —
 * never a stuck instance), the retry policy, and the validate step. `skipped` when validate says to stop.
 */
function* validateFirst(context: OrchestrationContext, name: string): Generator<df.Task, Validated, unknown> {
  // The starter's sighting goes to validate only (it records it): the later steps' inputs stay as small as before.
  const { observed, ...parsed } = parseProvisioningInput(context.df.getInput());
  const input: StepInput = { ...parsed, orchestration: { name, instanceId: context.df.instanceId } };
  const retry = retryOptions();
  context.df.setCustomStatus({ step: "validate" });
  const validated = (yield context.df.callActivityWithRetry(A.validate, retry, {
    ...input,
    ...(observed ? { observed } : {}),
  })) as {
    proceed: boolean;
    reason?: string;
    simulate?: string;
    operation?: OperationEnd;
  };
  if (validated.proceed)
    return { input, retry, ...(validated.simulate === undefined ? {} : { simulate: validated.simulate }) };
  const skipped: ProvisioningOutput =
    validated.operation?.status === "Canceled"
      ? outputFor(validated.operation)
      : { outcome: "Skipped", reason: validated.reason ?? "validate said to stop" };
  return { input, retry, skipped };
}

/**
 * The provision step with the same retry policy as callActivityWithRetry (ACTIVITY_MAX_ATTEMPTS, durable timers from
 * ACTIVITY_FIRST_RETRY_INTERVAL_MS, doubling), counted here rather than on the operation: the step then makes no
 * database request, and replay keeps the count. `attempts.count` is the attempts made so far.
 */
function* provisionWithRetries(
  context: OrchestrationContext,
  input: StepInput,
  simulate: string | undefined,
  attempts: { count: number },
): Generator<df.Task, void, unknown> {
  for (;;) {
    attempts.count++;
    try {
      yield context.df.callActivity(A.provision, { ...input, attempt: attempts.count, simulate });
      return;
    } catch (e) {
      if (attempts.count >= settings.activityMaxAttempts) throw e;
      const delayMs = settings.activityFirstRetryIntervalMs * 2 ** (attempts.count - 1);
      yield context.df.createTimer(new Date(context.df.currentUtcDateTime.getTime() + delayMs));
    }
  }
}

/** validate → provision → finalize; on a failure after the retries, the resource and operation become Failed. */
export const provisioningOrchestrator: OrchestrationHandler = function* (context: OrchestrationContext) {
  const { input, retry, skipped, simulate } = yield* validateFirst(
    context,
    PROVISIONING.orchestrations.provision,
  );
  if (skipped) return skipped;
  const attempts = { count: 0 };
  try {
    context.df.setCustomStatus({ step: "provision" });
    yield* provisionWithRetries(context, input, simulate, attempts);
    context.df.setCustomStatus({ step: "finalize" });
    const finalized = (yield context.df.callActivityWithRetry(A.finalize, retry, {
      ...input,
      provisionAttempts: attempts.count,
    })) as {
      operation?: OperationEnd;
    } | null;
    context.df.setCustomStatus({ step: "done" });
    return outputFor(finalized?.operation);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    context.df.setCustomStatus({ step: "failed" });
    const failed = (yield context.df.callActivityWithRetry(A.fail, retry, {
      ...input,
      error: { code: "ProvisioningFailed", message },
      ...(attempts.count > 0 ? { provisionAttempts: attempts.count } : {}),
    })) as { operation?: OperationEnd } | null;
    // Replaced while it was failing: the operation is Canceled, not Failed, and so is this orchestration's outcome.
    if (failed?.operation?.status === "Canceled") return outputFor(failed.operation);
    throw new Error(`Provisioning of ${input.subscriptionId}/${input.resourceId} failed: ${message}`);
  }
};

/** validate → deprovision (removes the resource; the operation Succeeds). */
export const deprovisioningOrchestrator: OrchestrationHandler = function* (context: OrchestrationContext) {
  const { input, retry, skipped } = yield* validateFirst(context, PROVISIONING.orchestrations.deprovision);
  if (skipped) return skipped;
  context.df.setCustomStatus({ step: "deprovision" });
  const result: { deleted: boolean; operation?: OperationEnd } = yield context.df.callActivityWithRetry(
    A.deprovision,
    retry,
    input,
  );
  context.df.setCustomStatus({ step: "done" });
  return outputFor(result.operation, { deleted: result.deleted });
};

/** Activities get the orchestration's name and instance id with their input, to record them on the operation. */
interface StepInput extends ProvisioningInput {
  orchestration?: { name: string; instanceId: string };
}

const orchestrationOf = (input: unknown) => {
  const o = (input as StepInput | null)?.orchestration;
  return { name: String(o?.name ?? "unknown"), instanceId: String(o?.instanceId ?? "unknown") };
};

/** The activities: thin adapters from the activity trigger to the library's steps (each idempotent). */
export async function validateResource(input: unknown) {
  return validateStep(await openAppContext(), parseProvisioningInput(input), orchestrationOf(input));
}

/** The orchestration's count of provision attempts, passed to the steps that end the operation. */
const provisionAttemptsOf = (input: unknown): number | undefined => {
  const n = (input as { provisionAttempts?: unknown } | null)?.provisionAttempts;
  return typeof n === "number" && Number.isInteger(n) && n > 0 ? n : undefined;
};

export function provisionResource(input: unknown) {
  const { attempt, simulate } = input as { attempt?: unknown; simulate?: unknown };
  return provisionStep(parseProvisioningInput(input), {
    attempt: typeof attempt === "number" ? attempt : 1,
    ...(typeof simulate === "string" ? { simulate } : {}),
  });
}

export async function finalizeResource(input: unknown) {
  const operation = await finalizeStep(
    await openAppContext(),
    parseProvisioningInput(input),
    orchestrationOf(input),
    provisionAttemptsOf(input),
  );
  return { finalized: true, ...(operation ? { operation } : {}) };
}

export async function failResource(input: unknown) {
  const { error, ...rest } = input as ProvisioningInput & { error?: { code: string; message: string } };
  const operation = await failStep(
    await openAppContext(),
    parseProvisioningInput(rest),
    error ?? { code: "ProvisioningFailed", message: "unknown" },
    provisionAttemptsOf(input),
  );
  return { failed: true, ...(operation ? { operation } : {}) };
}

export async function deprovisionResource(input: unknown) {
  return deprovisionStep(await openAppContext(), parseProvisioningInput(input), orchestrationOf(input));
}

df.app.orchestration(PROVISIONING.orchestrations.provision, provisioningOrchestrator);
df.app.orchestration(PROVISIONING.orchestrations.deprovision, deprovisioningOrchestrator);
df.app.activity(A.validate, { handler: validateResource });
df.app.activity(A.provision, { handler: provisionResource });
df.app.activity(A.finalize, { handler: finalizeResource });
df.app.activity(A.fail, { handler: failResource });
df.app.activity(A.deprovision, { handler: deprovisionResource });
