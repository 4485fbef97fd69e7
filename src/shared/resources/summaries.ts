import { forEachConcurrently } from "@cosmos-feed/core/concurrency";
import { AlreadyExistsError, NotFoundError, PreconditionFailedError } from "@cosmos-feed/core/cosmos/errors";
import { createItem, readItem, replaceIfMatch, type Stored } from "@cosmos-feed/core/cosmos/occ";
import { defaultOccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";
import type { AppContext } from "./context.js";
import type { ProvisioningState } from "./model.js";
import { isResourceDocument, REACTION_CONCURRENCY } from "./reactions.js";

// The summaries trigger's work: per subscription, its resources counted by provisioning state, recounted from the
// container (not incremented), so at-least-once delivery cannot skew them; stored with optimistic concurrency.

/** Per-subscription counts by provisioning state. Partition key /id (= the subscription id). */
export interface SummaryDocument {
  id: string;
  subscriptionId: string;
  counts: Partial<Record<ProvisioningState, number>>;
  total: number;
  updatedAt: string;
}

type Counts = SummaryDocument["counts"];

/**
 * What this process last wrote (or read) of each subscription's summary: its ETag and counts. A write starts from
 * it, If-Match that ETag, instead of reading the summary again; a 412 (another writer: a deprovision step, another
 * host during a lease hand-off) or a 404 falls back to the read. It never decides that a write can be skipped: equal
 * counts are checked against a fresh read, since another writer may have stored others since.
 */
export class SummaryVersions {
  /** Subscriptions remembered at most (the oldest forgotten first): a bound on memory, not on correctness. */
  static readonly MAX_ENTRIES = 10_000;
  readonly #bySubscription = new Map<string, { etag: string; counts: Counts }>();

  get(sub: string): { etag: string; counts: Counts } | undefined {
    return this.#bySubscription.get(sub);
  }

  set(sub: string, etag: string, counts: Counts): void {
    this.#bySubscription.delete(sub);
    this.#bySubscription.set(sub, { etag, counts });
    if (this.#bySubscription.size > SummaryVersions.MAX_ENTRIES) {
      const oldest = this.#bySubscription.keys().next().value;
      if (oldest !== undefined) this.#bySubscription.delete(oldest);
    }
  }

  forget(sub: string): void {
    this.#bySubscription.delete(sub);
  }

  get size(): number {
    return this.#bySubscription.size;
  }
}

/** Counts of the subscription's resources by state, from the container itself (one partition). */
export async function countByState(ctx: AppContext, subscriptionId: string): Promise<Counts> {
  const { resources } = await ctx.containers.resources.items
    .query<{ state: ProvisioningState; n: number }>(
      {
        query:
          "SELECT c.provisioningState AS state, COUNT(1) AS n FROM c WHERE c.docType = 'resource' GROUP BY c.provisioningState",
      },
      { partitionKey: subscriptionId },
    )
    .fetchAll();
  const counts: Counts = {};
  for (const r of resources) counts[r.state] = r.n;
  return counts;
}

function sameCounts(a: Counts, b: Counts): boolean {
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

const summaryOf = (sub: string, counts: Counts): SummaryDocument => ({
  id: sub,
  subscriptionId: sub,
  counts,
  total: Object.values(counts).reduce((a, b) => a + (b ?? 0), 0),
  updatedAt: new Date().toISOString(),
});

/**
 * Recounts one subscription's summary (true when it changed). Also called by the deprovisioning step after it
 * deletes a resource: a delete leaves no trace in the latest-version change feed, so the summary trigger alone
 * would keep counting a deleted resource until the subscription's next change.
 *
 * The ETag a write is conditioned on is always one known before the recount (the last write's, remembered in
 * `ctx.summaryVersions`, or a read made before counting), so a writer whose count is older than the stored
 * summary's loses with 412 and recounts: the newest count wins.
 */
export async function refreshSummary(ctx: AppContext, sub: string): Promise<boolean> {
  const known = ctx.summaryVersions.get(sub);
  if (known) {
    const counts = await countByState(ctx, sub);
    if (sameCounts(known.counts, counts)) {
      // Nothing to write if the stored summary says the same (a count older than the read is fine for that: a
      // later change brings its own recount); else read and recount below, as a write must follow its read.
      const current = await readItem<SummaryDocument>(ctx.containers.summaries, sub, sub);
      if (current && sameCounts(current.counts, counts)) {
        ctx.summaryVersions.set(sub, current._etag, current.counts);
        return false;
      }
      ctx.summaryVersions.forget(sub);
    } else {
      try {
        const { resource } = await replaceIfMatch(
          ctx.containers.summaries,
          sub,
          sub,
          summaryOf(sub, counts),
          known.etag,
        );
        ctx.summaryVersions.set(sub, resource._etag, counts);
        return true;
      } catch (e) {
        // Written (or removed) by another since: read it and recount, as without a remembered version.
        if (!(e instanceof PreconditionFailedError || e instanceof NotFoundError)) throw e;
        ctx.summaryVersions.forget(sub);
      }
    }
  }
  return defaultOccRetryPolicy.run(
    async () => {
      const current = await readItem<SummaryDocument>(ctx.containers.summaries, sub, sub);
      const counts = await countByState(ctx, sub);
      if (current && sameCounts(current.counts, counts)) {
        ctx.summaryVersions.set(sub, current._etag, current.counts);
        return false;
      }
      const next = summaryOf(sub, counts);
      const stored = current
        ? (await replaceIfMatch(ctx.containers.summaries, sub, sub, next, current._etag)).resource
        : await createItem(ctx.containers.summaries, next);
      ctx.summaryVersions.set(sub, stored._etag, counts);
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
