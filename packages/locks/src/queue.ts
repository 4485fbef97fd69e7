import type { Container, ItemDefinition, PatchOperation } from "@azure/cosmos";
import {
  AlreadyExistsError,
  NotFoundError,
  PreconditionFailedError,
  statusOf,
} from "@cosmos-feed/core/cosmos/errors";
import { createItem, readItem, replaceIfMatch, type Stored } from "@cosmos-feed/core/cosmos/occ";
import type { OccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";

/**
 * Ids of queue documents start with this; lock names may not (validateLockName), so a queue never collides
 * with a lock. `$` cannot start a name a caller would plausibly choose by accident.
 */
export const QUEUE_ID_PREFIX = "$queue:";

/** One waiter: arrival order is its position in `tickets`. Times are the writer's wall clock (ms). */
export interface LockTicket {
  /** The ticket's id. */
  id: string;
  /** The waiting holder's name. */
  owner: string;
  /** When the ticket lapses unless refreshed (ms since the epoch). */
  expiresAt: number;
}

/**
 * The waiters of one lock, in the lock container (partition key /id). Advisory only: mutual exclusion rests on
 * the lock document alone, so a wrong clock or a lost ticket costs fairness, never safety. The document's own
 * TTL (refreshed by every write) removes a queue whose waiters all died.
 */
export interface LockQueueDocument extends ItemDefinition {
  /** `$queue:<lock name>`. */
  id: string;
  /** The lock's name. */
  lock: string;
  /** Item TTL (s), refreshed by every write. */
  ttl: number;
  /** The waiters, in arrival order. */
  tickets: LockTicket[];
}

export interface LockQueueOptions {
  container: Container;
  retryPolicy: OccRetryPolicy;
  ticketLifetimeMs: number;
  clockSkewAllowanceMs: number;
  wallNow: () => number;
}

const isRace = (e: unknown) =>
  e instanceof PreconditionFailedError || e instanceof AlreadyExistsError || e instanceof NotFoundError;

/**
 * Reads and edits the waiter queues. Joins append with a patch; a leave or refresh is a patch conditional on
 * the ticket's index; every write refreshes the queue's TTL, which removes a queue nobody writes any more.
 */
export class LockQueue {
  constructor(private readonly o: LockQueueOptions) {}

  static idOf(lockName: string): string {
    return `${QUEUE_ID_PREFIX}${lockName}`;
  }

  /** Tickets not yet lapsed, in arrival order. */
  live(doc: LockQueueDocument | undefined): LockTicket[] {
    const now = this.o.wallNow();
    return (doc?.tickets ?? []).filter((t) => t.expiresAt + this.o.clockSkewAllowanceMs > now);
  }

  read(lockName: string): Promise<Stored<LockQueueDocument> | undefined> {
    const id = LockQueue.idOf(lockName);
    return readItem<LockQueueDocument>(this.o.container, id, id);
  }

  newTicket(id: string, owner: string): LockTicket {
    return { id, owner, expiresAt: this.o.wallNow() + this.o.ticketLifetimeMs };
  }

  /**
   * Appends `ticket` (a patch: appends commute, so joins never conflict with each other), creating the queue
   * when there is none; returns the queue as written.
   */
  join(lockName: string, ticket: LockTicket, signal?: AbortSignal): Promise<LockQueueDocument> {
    const id = LockQueue.idOf(lockName);
    return this.o.retryPolicy.run(
      async () => {
        try {
          return await this.patch(id, [
            { op: "add", path: "/tickets/-", value: ticket },
            { op: "set", path: "/ttl", value: this.ttl() },
          ]);
        } catch (e) {
          if (!(e instanceof NotFoundError)) throw e;
        }
        return createItem<LockQueueDocument>(this.o.container, {
          id,
          lock: lockName,
          ttl: this.ttl(),
          tickets: [ticket],
        });
      },
      { signal, isRetryable: isRace },
    );
  }

  /** Extends the ticket's lifetime in place (conditional on it still being at the index it was read at). */
  refresh(lockName: string, ticket: LockTicket, signal?: AbortSignal): Promise<LockQueueDocument> {
    const id = LockQueue.idOf(lockName);
    return this.o.retryPolicy.run(
      async () => {
        const current = await this.read(lockName);
        const at = current?.tickets.findIndex((t) => t.id === ticket.id) ?? -1;
        if (at < 0) return this.join(lockName, ticket, signal);
        return this.patch(
          id,
          [
            { op: "set", path: `/tickets/${at}/expiresAt`, value: ticket.expiresAt },
            { op: "set", path: "/ttl", value: this.ttl() },
          ],
          `FROM c WHERE c.tickets[${at}].id = ${JSON.stringify(ticket.id)}`,
        );
      },
      { signal, isRetryable: isRace },
    );
  }

  /**
   * Removes the ticket: a patch conditional on the ticket still being at the index it was read at (appends do
   * not move it, so only another removal can make this retry). Lapsed tickets are pruned by a full rewrite.
   */
  async leave(lockName: string, ticketId: string): Promise<void> {
    const id = LockQueue.idOf(lockName);
    await this.o.retryPolicy.run(
      async () => {
        const current = await this.read(lockName);
        if (!current) return;
        const at = current.tickets.findIndex((t) => t.id === ticketId);
        if (at < 0) return;
        if (this.live(current).length < current.tickets.length) {
          const tickets = this.live(current).filter((t) => t.id !== ticketId);
          const body: LockQueueDocument = { id, lock: lockName, ttl: this.ttl(), tickets };
          await replaceIfMatch(this.o.container, id, id, body, current._etag);
          return;
        }
        await this.patch(
          id,
          [{ op: "remove", path: `/tickets/${at}` }],
          `FROM c WHERE c.tickets[${at}].id = ${JSON.stringify(ticketId)}`,
        );
      },
      { isRetryable: isRace },
    );
  }

  /** The queue document's TTL (s): outlives every ticket in it; refreshed by every write. */
  private ttl(): number {
    return Math.ceil((this.o.ticketLifetimeMs + this.o.clockSkewAllowanceMs) / 1000) + 1;
  }

  private async patch(
    id: string,
    operations: PatchOperation[],
    condition?: string,
  ): Promise<LockQueueDocument> {
    try {
      const res = await this.o.container
        .item(id, id)
        .patch<LockQueueDocument>(condition === undefined ? operations : { condition, operations });
      return res.resource as LockQueueDocument;
    } catch (e) {
      const status = statusOf(e);
      if (status === 404) throw new NotFoundError(id);
      if (status === 412) throw new PreconditionFailedError(id);
      throw e;
    }
  }
}
