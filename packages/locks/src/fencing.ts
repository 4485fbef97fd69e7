import type { Container, ItemDefinition, PartitionKey } from "@azure/cosmos";
import { ConcurrencyConflictError, NotFoundError } from "@cosmos-feed/core/cosmos/errors";
import { createItem, readItem, replaceIfMatch, type Stored } from "@cosmos-feed/core/cosmos/occ";
import { defaultOccRetryPolicy, type OccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import type { FencingLock } from "./handle.js";

/** Field a fenced document keeps: the highest fencing token that wrote it. */
export const FENCE_FIELD = "fencingToken";

/** A document written by fenced writes: `T` plus the highest fencing token that wrote it. */
export type Fenced<T> = T & { [FENCE_FIELD]?: number };

/** A writer with an older token than one the document has already seen: its lock has been superseded (412). */
export class StaleFencingTokenError extends CosmosFeedError {
  constructor(
    /** The document's id. */
    readonly id: string,
    /** The refused writer's fencing token. */
    readonly token: number,
    /** The token the document was last written with (higher). */
    readonly seen: number,
  ) {
    super(
      `Write to '${id}' with fencing token ${token} refused: the document was written with token ${seen}.`,
      { statusCode: 412 },
    );
  }
}

/** Options of `fencedUpdate`. */
export interface FencedUpdateOptions {
  /** Stops the update between attempts and cancels the request in flight (rejects with an AbortError). */
  signal?: AbortSignal;
  /** Optimistic-concurrency retries on 412 (default: the shared policy). */
  retryPolicy?: OccRetryPolicy;
}

function checkToken<T>(id: string, lock: FencingLock, current: Stored<Fenced<T>>): void {
  const seen = current[FENCE_FIELD] ?? Number.NEGATIVE_INFINITY;
  if (seen > lock.fencingToken) throw new StaleFencingTokenError(id, lock.fencingToken, seen);
}

/**
 * Read → check the token is not older than the document's → `mutate(current)` → check the lock is still held
 * → Replace with If-Match, storing the token. Because the replace is conditional on the etag that was checked,
 * no write with an older token lands after one with a newer token (Kleppmann's fencing, enforced by the
 * storage); and because the lock is checked between the read and the write, a holder paused past its expiry
 * does not land a write the new holder has not fenced yet (LockLostError instead).
 *
 * `mutate` must compute the new body from `current` only (it runs again after every lost race): a value read
 * earlier, outside this call, may be stale. To read-then-decide, use `fencedRead` first: it stamps the token,
 * so every older holder's write is refused from then on.
 */
export async function fencedUpdate<T extends ItemDefinition>(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  lock: FencingLock,
  mutate: (current: Stored<Fenced<T>>) => T,
  options: FencedUpdateOptions = {},
): Promise<Stored<Fenced<T>>> {
  return (options.retryPolicy ?? defaultOccRetryPolicy).run(
    async () => {
      lock.assertHeld();
      const current = await readItem<Fenced<T>>(container, id, partitionKey);
      if (!current) throw new NotFoundError(id);
      checkToken(id, lock, current);
      const next = { ...mutate(current), [FENCE_FIELD]: lock.fencingToken } as Fenced<T>;
      lock.assertHeld();
      return (await replaceIfMatch(container, id, partitionKey, next, current._etag)).resource;
    },
    { signal: options.signal, onExhausted: (attempts) => new ConcurrencyConflictError(id, attempts) },
  );
}

/**
 * Reads a fenced document for the holder of `lock`, first stamping the holder's token on it when it has not
 * seen that token yet (one conditional write): from then on a write by any older holder is refused, so the
 * caller may base later writes on what it read. StaleFencingTokenError if a newer holder already wrote it.
 */
export async function fencedRead<T extends ItemDefinition>(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  lock: FencingLock,
  options: FencedUpdateOptions = {},
): Promise<Stored<Fenced<T>>> {
  return (options.retryPolicy ?? defaultOccRetryPolicy).run(
    async () => {
      lock.assertHeld();
      const current = await readItem<Fenced<T>>(container, id, partitionKey);
      if (!current) throw new NotFoundError(id);
      checkToken(id, lock, current);
      if (current[FENCE_FIELD] === lock.fencingToken) return current;
      lock.assertHeld();
      const { _rid, _self, _etag, _ts, _attachments, ...body } = current as Stored<Fenced<T>> & {
        _attachments?: string;
      };
      return (
        await replaceIfMatch(
          container,
          id,
          partitionKey,
          { ...body, [FENCE_FIELD]: lock.fencingToken } as unknown as Fenced<T>,
          current._etag,
        )
      ).resource;
    },
    { signal: options.signal, onExhausted: (attempts) => new ConcurrencyConflictError(id, attempts) },
  );
}

/** Creates a fenced document carrying the writer's token (a number, or a held lock's). */
export function fencedCreate<T extends ItemDefinition>(
  container: Container,
  body: T,
  token: number | FencingLock,
): Promise<Stored<Fenced<T>>> {
  const value = typeof token === "number" ? token : token.fencingToken;
  if (typeof token !== "number") token.assertHeld();
  return createItem<Fenced<T>>(container, { ...body, [FENCE_FIELD]: value });
}
