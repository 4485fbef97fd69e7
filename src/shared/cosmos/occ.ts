import type { Container, ItemDefinition, PartitionKey, Resource } from "@azure/cosmos";
import {
  AlreadyExistsError,
  ConcurrencyConflictError,
  NotFoundError,
  PreconditionFailedError,
  statusOf,
} from "./errors.js";

/** A stored item: the body plus the system properties the service added. */
export type Stored<T> = T & Resource;

/** A write's result: the stored item and what it cost (RU). */
export interface WriteResult<T> {
  resource: Stored<T>;
  requestCharge: number;
  /** The write's session token (its LSN orders writes within a physical partition). */
  sessionToken: string | undefined;
}

/** Attempts of an optimistic update before ConcurrencyConflictError. */
export const DEFAULT_UPDATE_ATTEMPTS = 10;
/** First backoff after a 412 (ms), doubled per attempt with full jitter. */
export const UPDATE_BACKOFF_MS = 5;

export interface UpdateOptions {
  maxAttempts?: number;
  signal?: AbortSignal;
}

/** Creates an item; an existing id is an AlreadyExistsError (never a blind upsert). */
export async function createItem<T extends ItemDefinition>(
  container: Container,
  body: T,
): Promise<Stored<T>> {
  return (await createWithResult(container, body)).resource;
}

/** Like createItem, with the request charge and session token of the write. */
export async function createWithResult<T extends ItemDefinition>(
  container: Container,
  body: T,
): Promise<WriteResult<T>> {
  try {
    const res = await container.items.create<T>(body);
    return {
      resource: res.resource as Stored<T>,
      requestCharge: res.requestCharge,
      sessionToken: res.headers["x-ms-session-token"] as string | undefined,
    };
  } catch (e) {
    if (statusOf(e) === 409) throw new AlreadyExistsError(String(body.id));
    throw e;
  }
}

export async function readItem<T extends ItemDefinition>(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
): Promise<Stored<T> | undefined> {
  const res = await container.item(id, partitionKey).read<T>();
  return res.statusCode === 404 ? undefined : (res.resource as Stored<T>);
}

/**
 * Replaces an item only if it still has `etag` (If-Match). The one place, with deleteIfMatch, that sets
 * If-Match: lease, lock and work-item writers all go through here.
 */
export async function replaceIfMatch<T extends ItemDefinition>(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  body: T,
  etag: string,
): Promise<WriteResult<T>> {
  try {
    const res = await container
      .item(id, partitionKey)
      .replace<T>(body, { accessCondition: { type: "IfMatch", condition: etag } });
    return {
      resource: res.resource as Stored<T>,
      requestCharge: res.requestCharge,
      sessionToken: res.headers["x-ms-session-token"] as string | undefined,
    };
  } catch (e) {
    const s = statusOf(e);
    if (s === 412) throw new PreconditionFailedError(id);
    if (s === 404) throw new NotFoundError(id);
    throw e;
  }
}

/** Deletes an item only if it still has `etag`; a missing item is NotFoundError. */
export async function deleteIfMatch(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  etag: string,
): Promise<number> {
  try {
    const res = await container
      .item(id, partitionKey)
      .delete({ accessCondition: { type: "IfMatch", condition: etag } });
    return res.requestCharge;
  } catch (e) {
    const s = statusOf(e);
    if (s === 412) throw new PreconditionFailedError(id);
    if (s === 404) throw new NotFoundError(id);
    throw e;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Read → mutate → Replace with If-Match; on 412 re-read and re-apply (bounded, jittered backoff).
 * `mutate` returns the new body, or `undefined` to leave the item unchanged. A missing item is NotFoundError.
 */
export async function updateItem<T extends ItemDefinition>(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  mutate: (current: Stored<T>) => T | undefined,
  options: UpdateOptions = {},
): Promise<Stored<T>> {
  const attempts = options.maxAttempts ?? DEFAULT_UPDATE_ATTEMPTS;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    options.signal?.throwIfAborted();
    const current = await readItem<T>(container, id, partitionKey);
    if (!current) throw new NotFoundError(id);
    const next = mutate(current);
    if (next === undefined) return current;
    try {
      return (await replaceIfMatch(container, id, partitionKey, next, current._etag)).resource;
    } catch (e) {
      if (!(e instanceof PreconditionFailedError)) throw e;
      // Full jitter: contenders that collided spread out instead of colliding again.
      await sleep(Math.random() * UPDATE_BACKOFF_MS * 2 ** Math.min(attempt, 8));
    }
  }
  throw new ConcurrencyConflictError(id, attempts);
}

/** Deletes an item, conditional on the etag when given (a stale remover gets PreconditionFailedError). */
export async function removeItem(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  etag?: string,
): Promise<void> {
  if (etag !== undefined) {
    await deleteIfMatch(container, id, partitionKey, etag);
    return;
  }
  try {
    await container.item(id, partitionKey).delete();
  } catch (e) {
    if (statusOf(e) === 404) throw new NotFoundError(id);
    throw e;
  }
}
