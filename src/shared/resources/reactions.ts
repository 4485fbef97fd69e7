import { AlreadyExistsError, PreconditionFailedError } from "@cosmos-feed/core/cosmos/errors";
import { createItem, readItem, replaceIfMatch, type Stored } from "@cosmos-feed/core/cosmos/occ";
import { defaultOccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";
import { forEachConcurrently } from "../concurrency.js";
import type { AppContext } from "./context.js";
import { isNonTerminal, type ProvisioningState, type ResourceDocument } from "./model.js";
import { orchestrationInstanceId, provisioningRequestFor } from "./provisioning.js";

/** The two change feed consumers of the resources container: one lease container, a prefix each. */
export const RESOURCE_TRIGGERS = {
  reactions: { functionName: "reactToResources", leaseContainerPrefix: "reactions-" },
  summaries: { functionName: "summarizeResources", leaseContainerPrefix: "summaries-" },
} as const;

type ChangedResource = ResourceDocument & { _etag?: string };

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

function isResourceDocument(d: unknown): d is ChangedResource {
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

/** Per-subscription counts by provisioning state. Partition key /id (= the subscription id). */
export interface SummaryDocument {
  id: string;
  subscriptionId: string;
  counts: Partial<Record<ProvisioningState, number>>;
  total: number;
  updatedAt: string;
}

/** Counts of the subscription's resources by state, from the container itself (one partition). */
export async function countByState(
  ctx: AppContext,
  subscriptionId: string,
): Promise<Partial<Record<ProvisioningState, number>>> {
  const { resources } = await ctx.containers.resources.items
    .query<{ state: ProvisioningState; n: number }>(
      {
        query:
          "SELECT c.provisioningState AS state, COUNT(1) AS n FROM c WHERE c.docType = 'resource' GROUP BY c.provisioningState",
      },
      { partitionKey: subscriptionId },
    )
    .fetchAll();
  const counts: Partial<Record<ProvisioningState, number>> = {};
  for (const r of resources) counts[r.state] = r.n;
  return counts;
}

function sameCounts(a: SummaryDocument["counts"], b: SummaryDocument["counts"]): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<ProvisioningState>;
  for (const k of keys) if ((a[k] ?? 0) !== (b[k] ?? 0)) return false;
  return true;
}

/**
 * The summary trigger's work: for each subscription a batch touches, recount its resources by state and store the
 * counts (create, or replace If-Match; a lost race recounts). Recounting rather than incrementing is what makes it
 * idempotent under at-least-once delivery: the same batch twice gives the same counts, and a missed or repeated
 * change cannot skew them. Returns the subscriptions whose summary changed.
 */
export async function updateSummaries(ctx: AppContext, documents: unknown[]): Promise<string[]> {
  const subscriptions = new Set<string>();
  for (const d of documents) if (isResourceDocument(d)) subscriptions.add(d.subscriptionId);
  const changed: string[] = [];
  await forEachConcurrently([...subscriptions], REACTION_CONCURRENCY, async (sub) => {
    if (await refreshSummary(ctx, sub)) changed.push(sub);
  });
  return changed.sort();
}

/**
 * Recounts one subscription's summary (true when it changed). Also called by the deprovisioning step after it
 * deletes a resource: a delete leaves no trace in the latest-version change feed, so the summary trigger alone
 * would keep counting a deleted resource until the subscription's next change.
 */
export async function refreshSummary(ctx: AppContext, sub: string): Promise<boolean> {
  return defaultOccRetryPolicy.run(
    async () => {
      const current = await readItem<SummaryDocument>(ctx.containers.summaries, sub, sub);
      const counts = await countByState(ctx, sub);
      if (current && sameCounts(current.counts, counts)) return false;
      const next: SummaryDocument = {
        id: sub,
        subscriptionId: sub,
        counts,
        total: Object.values(counts).reduce((a, b) => a + (b ?? 0), 0),
        updatedAt: new Date().toISOString(),
      };
      if (current) await replaceIfMatch(ctx.containers.summaries, sub, sub, next, current._etag);
      else await createItem(ctx.containers.summaries, next);
      return true;
    },
    { isRetryable: (e) => e instanceof AlreadyExistsError || e instanceof PreconditionFailedError },
  );
}

/** The stored summary of a subscription (undefined before its first change was summarized). */
export async function readSummary(
  ctx: AppContext,
  subscriptionId: string,
): Promise<Stored<SummaryDocument> | undefined> {
  return readItem<SummaryDocument>(ctx.containers.summaries, subscriptionId, subscriptionId);
}
