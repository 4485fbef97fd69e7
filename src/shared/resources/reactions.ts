import { forEachConcurrently } from "@cosmos-feed/core/concurrency";
import { isNonTerminal, type ProvisioningState, type ResourceDocument } from "./model.js";
import { orchestrationInstanceId, provisioningRequestFor } from "./provisioning.js";

/** The two change feed consumers of the resources container: one lease container, a prefix each. */
export const RESOURCE_TRIGGERS = {
  reactions: { functionName: "reactToResources", leaseContainerPrefix: "reactions-" },
  summaries: { functionName: "summarizeResources", leaseContainerPrefix: "summaries-" },
} as const;

export type ChangedResource = ResourceDocument & { _etag?: string };

/**
 * How many documents (or subscriptions) of one delivered batch the triggers work on at once. One at a time, a
 * 100-document batch waited on ~300 sequential round trips; the batch still ends only when all of them have.
 */
export const REACTION_CONCURRENCY = 16;

/**
 * Whether the reactions trigger acts on a resource in `state`: a non-terminal state other than Provisioning. Only
 * the provisioning orchestration's validate step sets Provisioning, so its orchestration exists already and its
 * change has nothing to start (the operation's first sighting was its Accepted or Updating change, or the
 * reconciler's); skipping it saves the status query each such change cost.
 */
export function needsReaction(state: ProvisioningState): boolean {
  return isNonTerminal(state) && state !== "Provisioning";
}

/** A resource document as the change feed delivers it (anything else in a batch is skipped). */
export function isResourceDocument(d: unknown): d is ChangedResource {
  const r = d as Partial<ResourceDocument> | null;
  return (
    typeof r === "object" &&
    r !== null &&
    r.docType === "resource" &&
    typeof r.subscriptionId === "string" &&
    typeof r.operationId === "string"
  );
}

/** What starting orchestrations needs of durable-functions' DurableClient (a structural subset). */
export interface OrchestrationStarter {
  getStatus(instanceId: string): Promise<unknown>;
  startNew(name: string, options: { instanceId: string; input: unknown }): Promise<string>;
}

/** DurableClient.getStatus rejects with "…replied with HTTP 404…" for an unknown instance. */
function isNotFound(e: unknown): boolean {
  return /HTTP 404/.test(e instanceof Error ? e.message : String(e));
}

export interface StartOutcome {
  started: string[];
  /** Instances that existed already (a redelivered change, or another host or the reconciler started it). */
  existing: string[];
  /** Changes in a terminal state or Provisioning (nothing to do: see needsReaction), or not resources. */
  skipped: number;
}

/**
 * The reactions trigger's work: starts the provisioning (or, for a Deleting resource, deprovisioning)
 * orchestration of each resource in a state it reacts to, with the operation's deterministic instance id, unless
 * that instance exists (whatever its status: at-least-once delivery never starts one twice, and a completed one is
 * never run again; a lost start race is seen as existing). It makes no Cosmos DB request: the sighting (`seenAt`,
 * the change's state and `_etag`) goes in the orchestration's input, and validate records it as the operation's
 * `observed` in the write that marks the operation Running — where a patch of its own cost a write per change.
 */
export async function startOrchestrations(
  client: OrchestrationStarter,
  documents: unknown[],
  options: { seenAt?: string } = {},
): Promise<StartOutcome> {
  const out: StartOutcome = { started: [], existing: [], skipped: 0 };
  const at = options.seenAt ?? new Date().toISOString();
  const seen = new Set<string>();
  const starts: { orchestration: string; instanceId: string; input: unknown }[] = [];
  for (const d of documents) {
    if (!isResourceDocument(d) || !needsReaction(d.provisioningState)) {
      out.skipped++;
      continue;
    }
    const { orchestration, input } = provisioningRequestFor(d, { at });
    const instanceId = orchestrationInstanceId(orchestration, d.operationId);
    if (seen.has(instanceId)) continue;
    seen.add(instanceId);
    starts.push({ orchestration, instanceId, input });
  }
  await forEachConcurrently(starts, REACTION_CONCURRENCY, async ({ orchestration, instanceId, input }) => {
    if (await instanceExists(client, instanceId)) {
      out.existing.push(instanceId);
      return;
    }
    try {
      await client.startNew(orchestration, { instanceId, input });
      out.started.push(instanceId);
    } catch (e) {
      // Another host (or a redelivery) started it between our check and our start.
      if (await instanceExists(client, instanceId)) out.existing.push(instanceId);
      else throw e;
    }
  });
  return out;
}

async function instanceExists(client: OrchestrationStarter, instanceId: string): Promise<boolean> {
  return (await runtimeStatusOf(client, instanceId)) !== undefined;
}

/** The instance's durable runtime status (Running, Completed, …), or undefined when it does not exist. */
export async function runtimeStatusOf(
  client: OrchestrationStarter,
  instanceId: string,
): Promise<string | undefined> {
  try {
    const s = (await client.getStatus(instanceId)) as { runtimeStatus?: unknown } | undefined;
    return String(s?.runtimeStatus ?? "Unknown");
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
