import type { OperationDocument, OperationStatus } from "./model.js";

// What an orchestration of the provider reports as its output is what happened to its operation — not only that
// its own steps ran. A PUT superseded while its orchestration ran ends with the orchestration Completed (it did
// its job: the operation ended) but its output says Canceled and by which operation, so listing the instances
// never shows two successful provisionings for one resource.

/** How a step found or left the operation: what the orchestration's output is made of. */
export interface OperationEnd {
  status: OperationStatus;
  /** Set when a newer operation replaced this one (status Canceled). */
  supersededBy?: string;
  error?: { code: string; message: string };
}

/** The end of a stored operation, as a step returns it to its orchestration (undefined: the operation is gone). */
export function endOf(op: OperationDocument | undefined): OperationEnd | undefined {
  if (!op) return undefined;
  return {
    status: op.status,
    ...(op.supersededBy ? { supersededBy: op.supersededBy } : {}),
    ...(op.error ? { error: op.error } : {}),
  };
}

/** An orchestration's output (docs/app.md, "The orchestrations' outputs"). */
export type ProvisioningOutput =
  | { outcome: "Succeeded"; deleted?: boolean }
  | { outcome: "Canceled"; supersededBy?: string; reason: string }
  | { outcome: "Skipped"; reason: string };

/**
 * The output for the operation's end as the orchestration's last step saw it. `undefined` (an activity result from
 * before steps returned the operation, or an operation that expired meanwhile) is taken as the step's own success.
 */
export function outputFor(
  end: OperationEnd | undefined,
  extra: { deleted?: boolean } = {},
): ProvisioningOutput {
  if (end?.status === "Canceled") {
    return {
      outcome: "Canceled",
      ...(end.supersededBy ? { supersededBy: end.supersededBy } : {}),
      reason: end.error?.message ?? "The operation was canceled.",
    };
  }
  if (end && end.status !== "Succeeded") {
    return { outcome: "Skipped", reason: `The operation is ${end.status}, not ended by this orchestration.` };
  }
  return { outcome: "Succeeded", ...extra };
}
