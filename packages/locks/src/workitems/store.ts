import { randomUUID } from "node:crypto";
import type { Container, ItemDefinition, PartitionKey } from "@azure/cosmos";
import {
  ConcurrencyConflictError,
  NotFoundError,
  PreconditionFailedError,
} from "@cosmos-feed/core/cosmos/errors";
import { readItem, replaceIfMatch, type Stored } from "@cosmos-feed/core/cosmos/occ";
import { defaultOccRetryPolicy, type OccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";
import { CosmosFeedError } from "@cosmos-feed/core/errors";

/** A lease embedded in a work item. Times in ms since the epoch (the claimer's clock). */
export interface WorkItemLease {
  /** The claiming worker's name. */
  leasedBy: string;
  /** When the lease was taken or last renewed (ms since the epoch). */
  leasedAt: number;
  /** How long the lease lasts from `leasedAt` (ms). */
  leaseDuration: number;
}

/** A state-machine document that workers claim. */
export interface WorkItem extends ItemDefinition {
  /** The item's id. */
  id: string;
  /** The item's state (the caller's state machine). */
  state: string;
  /** When the item entered `state` (ms since epoch): nextForState serves the oldest first. */
  stateChangedAt: number;
  /** The embedded lease; null or absent when unclaimed. */
  lease?: WorkItemLease | null;
}

/** Default embedded lease duration (ms); WorkItemStoreOptions.leaseDurationMs overrides it. */
export const DEFAULT_WORK_ITEM_LEASE_MS = 60_000;

/** Another worker holds an unexpired lease on the item (409, code "WorkItemLeased"). */
export class WorkItemLeasedError extends CosmosFeedError {
  constructor(
    /** The item's id. */
    readonly id: string,
    /** The worker holding the lease. */
    readonly holder: string,
    /** When that lease expires (ms since the epoch). */
    readonly expiresAt: number,
  ) {
    super(`Work item '${id}' is leased by ${holder} until ${new Date(expiresAt).toISOString()}.`, {
      statusCode: 409,
    });
  }
}

/** The caller's lease on the item is gone (expired and taken, broken, or the item changed) (412). */
export class WorkItemLeaseLostError extends CosmosFeedError {
  constructor(
    /** The item's id. */
    readonly id: string,
  ) {
    super(`The lease on work item '${id}' is no longer held by this worker.`, { statusCode: 412 });
  }
}

/** Options of a `WorkItemStore`. */
export interface WorkItemStoreOptions<T extends WorkItem> {
  /** The container holding the work items. */
  container: Container;
  /** This worker's name (default: random UUID). */
  owner?: string;
  /** Embedded lease duration (ms). Default DEFAULT_WORK_ITEM_LEASE_MS. */
  leaseDurationMs?: number;
  /** The partition key value of an item (default: its id, for containers partitioned by /id). */
  partitionKeyOf?: (item: T) => PartitionKey;
  /** The wall clock (ms since the epoch). Default Date.now. */
  now?: () => number;
  /** Retries of a claim that lost a race (default: the shared optimistic-concurrency policy). */
  retryPolicy?: OccRetryPolicy;
}

/** True when there is no lease or it expired before `nowMs` (ms since the epoch). */
export function leaseExpired(lease: WorkItemLease | null | undefined, nowMs: number): boolean {
  return !lease || lease.leasedAt + lease.leaseDuration < nowMs;
}

/**
 * Leases embedded in documents, without stored procedures: every claim is a single-document conditional
 * replace (If-Match), which Cosmos applies atomically, so two workers can never both win the same item.
 */
export class WorkItemStore<T extends WorkItem> {
  /** This worker's name, stored in the leases it takes. */
  readonly owner: string;
  private readonly container: Container;
  private readonly leaseDurationMs: number;
  private readonly pkOf: (item: T) => PartitionKey;
  private readonly now: () => number;
  private readonly retryPolicy: OccRetryPolicy;

  constructor(options: WorkItemStoreOptions<T>) {
    this.container = options.container;
    this.owner = options.owner ?? randomUUID();
    this.leaseDurationMs = options.leaseDurationMs ?? DEFAULT_WORK_ITEM_LEASE_MS;
    this.pkOf = options.partitionKeyOf ?? ((item) => item.id);
    this.now = options.now ?? Date.now;
    this.retryPolicy = options.retryPolicy ?? defaultOccRetryPolicy;
    const d = this.leaseDurationMs;
    if (typeof d !== "number" || !Number.isFinite(d) || d <= 0) {
      throw new RangeError(`leaseDurationMs must be a finite number of milliseconds > 0; got ${String(d)}.`);
    }
  }

  private leased(item: Stored<T>): T {
    return {
      ...item,
      lease: { leasedBy: this.owner, leasedAt: this.now(), leaseDuration: this.leaseDurationMs },
    };
  }

  /** Takes the lease on one item (free, expired, or already ours); WorkItemLeasedError when another holds it. */
  async acquire(id: string, partitionKey: PartitionKey): Promise<Stored<T>> {
    // A 412 means the item changed meanwhile: look again, under the shared bounded policy.
    return this.retryPolicy.run(
      async () => {
        const item = await readItem<T>(this.container, id, partitionKey);
        if (!item) throw new NotFoundError(id);
        const lease = item.lease;
        if (lease && lease.leasedBy !== this.owner && !leaseExpired(lease, this.now())) {
          throw new WorkItemLeasedError(id, lease.leasedBy, lease.leasedAt + lease.leaseDuration);
        }
        return (await replaceIfMatch(this.container, id, partitionKey, this.leased(item), item._etag))
          .resource;
      },
      { onExhausted: (attempts) => new ConcurrencyConflictError(id, attempts) },
    );
  }

  /** Extends our lease; the etag proves nothing changed since we claimed it. */
  async extend(item: Stored<T>): Promise<Stored<T>> {
    this.assertHeld(item);
    return this.writeHeld(item, this.leased(item));
  }

  /** Gives our lease up (the item stays in its state for the next claimer). */
  async break(item: Stored<T>): Promise<Stored<T>> {
    this.assertHeld(item);
    return this.writeHeld(item, { ...item, lease: null });
  }

  /** Moves the item to a new state (and releases the lease unless `keepLease`), conditional on our claim. */
  async transition(
    item: Stored<T>,
    state: string,
    change: (item: T) => T = (x) => x,
    options: { keepLease?: boolean } = {},
  ): Promise<Stored<T>> {
    this.assertHeld(item);
    const next = change({ ...item, state, stateChangedAt: this.now() });
    return this.writeHeld(
      item,
      options.keepLease ? this.leased(next as Stored<T>) : { ...next, lease: null },
    );
  }

  private assertHeld(item: Stored<T>): void {
    if (item.lease?.leasedBy !== this.owner) throw new WorkItemLeaseLostError(item.id);
  }

  private async writeHeld(item: Stored<T>, next: T): Promise<Stored<T>> {
    try {
      return (await replaceIfMatch(this.container, item.id, this.pkOf(item), next, item._etag)).resource;
    } catch (e) {
      if (e instanceof PreconditionFailedError || e instanceof NotFoundError)
        throw new WorkItemLeaseLostError(item.id);
      throw e;
    }
  }

  /**
   * Claims up to `limit` of the oldest items in `state` whose lease is absent or expired. Each claim is a
   * conditional replace; an item another worker claimed first (412) is skipped.
   */
  async nextForState(state: string, limit: number): Promise<Stored<T>[]> {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`limit must be a positive integer; got ${limit}.`);
    const now = this.now();
    const iterator = this.container.items.query<T>(
      {
        query:
          "SELECT * FROM c WHERE c.state = @state AND (NOT IS_DEFINED(c.lease) OR IS_NULL(c.lease) OR c.lease.leasedAt + c.lease.leaseDuration < @now) ORDER BY c.stateChangedAt ASC",
        parameters: [
          { name: "@state", value: state },
          { name: "@now", value: now },
        ],
      },
      { maxItemCount: Math.max(limit * 2, 10) },
    );
    const claimed: Stored<T>[] = [];
    while (claimed.length < limit && iterator.hasMoreResults()) {
      const { resources } = await iterator.fetchNext();
      for (const candidate of resources ?? []) {
        if (claimed.length >= limit) break;
        const item = candidate as Stored<T>;
        try {
          const res = await replaceIfMatch(
            this.container,
            item.id,
            this.pkOf(item),
            this.leased(item),
            item._etag,
          );
          claimed.push(res.resource);
        } catch (e) {
          if (!(e instanceof PreconditionFailedError) && !(e instanceof NotFoundError)) throw e;
        }
      }
    }
    return claimed;
  }
}
