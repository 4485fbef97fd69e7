import type { Container, ItemDefinition } from "@azure/cosmos";
import { AlreadyExistsError, NotFoundError, PreconditionFailedError } from "../cosmos/errors.js";
import { createItem, deleteIfMatch, readItem, replaceIfMatch, type Stored } from "../cosmos/occ.js";
import type { OccRetryPolicy } from "../cosmos/retry.js";

/**
 * Ids of queue documents start with this; lock names may not (validateLockName), so a queue never collides
 * with a lock. `$` cannot start a name a caller would plausibly choose by accident.
 */
export const QUEUE_ID_PREFIX = "$queue:";

/** One waiter: arrival order is its position in `tickets`. Times are the writer's wall clock (ms). */
export interface LockTicket {
  id: string;
  owner: string;
  expiresAt: number;
}

/**
 * The waiters of one lock, in the lock container (partition key /id). Advisory only: mutual exclusion rests on
 * the lock document alone, so a wrong clock or a lost ticket costs fairness, never safety. The document's own
 * TTL (refreshed by every write) removes a queue whose waiters all died.
 */
export interface LockQueueDocument extends ItemDefinition {
  id: string;
  lock: string;
  ttl: number;
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

/** Reads and edits the waiter queues (every write: read → change → create/replace/delete If-Match). */
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

  /** Appends (or refreshes in place) `ticket`; returns the queue as written. */
  join(lockName: string, ticket: LockTicket, signal?: AbortSignal): Promise<LockQueueDocument> {
    return this.edit(
      lockName,
      (tickets) => {
        const at = tickets.findIndex((t) => t.id === ticket.id);
        if (at < 0) return [...tickets, ticket];
        const next = [...tickets];
        next[at] = ticket;
        return next;
      },
      signal,
    ) as Promise<LockQueueDocument>;
  }

  /** Removes the ticket; deletes the queue when it empties. */
  async leave(lockName: string, ticketId: string): Promise<void> {
    await this.edit(lockName, (tickets) => tickets.filter((t) => t.id !== ticketId));
  }

  private edit(
    lockName: string,
    change: (live: LockTicket[]) => LockTicket[],
    signal?: AbortSignal,
  ): Promise<LockQueueDocument | undefined> {
    const id = LockQueue.idOf(lockName);
    const ttl = Math.ceil((this.o.ticketLifetimeMs + this.o.clockSkewAllowanceMs) / 1000) + 1;
    return this.o.retryPolicy.run(
      async () => {
        const current = await this.read(lockName);
        const tickets = change(this.live(current));
        const body: LockQueueDocument = { id, lock: lockName, ttl, tickets };
        if (!current) {
          if (tickets.length === 0) return undefined;
          return createItem(this.o.container, body);
        }
        if (tickets.length === 0) {
          await deleteIfMatch(this.o.container, id, id, current._etag);
          return undefined;
        }
        return (await replaceIfMatch(this.o.container, id, id, body, current._etag)).resource;
      },
      { signal, isRetryable: isRace },
    );
  }
}
