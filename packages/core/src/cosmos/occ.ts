import type { Container, ItemDefinition, PartitionKey, PatchOperation, Resource } from "@azure/cosmos";
import {
  AlreadyExistsError,
  ConcurrencyConflictError,
  NotFoundError,
  PreconditionFailedError,
  statusOf,
} from "./errors.js";
import { defaultOccRetryPolicy, type OccRetryPolicy } from "./retry.js";

export type { OccRetryPolicy, OccRetryPolicyOptions, OccRunOptions } from "./retry.js";

/** A stored item: the body plus the system properties the service added. */
export type Stored<T> = T & Resource;

/** A write's result: the stored item and what it cost (RU). */
export interface WriteResult<T> {
  /** The item as stored, with its system properties (`_etag`, `_ts` …). */
  resource: Stored<T>;
  /** The request's cost (RU). */
  requestCharge: number;
  /** The write's session token (its LSN orders writes within a physical partition). */
  sessionToken: string | undefined;
}

/** Options of `updateItem`: retries, cancellation, and the item already read. */
export interface UpdateOptions<T extends ItemDefinition = ItemDefinition> {
  /** Overrides the policy's attempts (OccRetryDefaults.maxAttempts) for this call. */
  maxAttempts?: number;
  /** The optimistic-concurrency retry policy (default: the shared one). */
  retryPolicy?: OccRetryPolicy;
  /** Stops the update between attempts and cancels the request in flight (rejects with an AbortError). */
  signal?: AbortSignal;
  /**
   * The item as the caller just read it: the first attempt mutates it instead of reading again (one request
   * fewer); a lost race (412) reads afresh as usual. Pass only a document read by this caller, never one from a
   * cache or the change feed, whose etag may be long stale.
   */
  current?: Stored<T>;
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

/** Options of `readItem`. */
export interface ReadOptions {
  /** Stops the read (the SDK's abortSignal): it then rejects with an AbortError. */
  signal?: AbortSignal;
}

/** Reads an item; a missing one is `undefined`. */
export async function readItem<T extends ItemDefinition>(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  options: ReadOptions = {},
): Promise<Stored<T> | undefined> {
  const res = await container
    .item(id, partitionKey)
    .read<T>(options.signal ? { abortSignal: options.signal } : undefined);
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
  /** Stops the write (the SDK's abortSignal), e.g. when its caller gave it up. */
  signal?: AbortSignal,
): Promise<WriteResult<T>> {
  try {
    const res = await container.item(id, partitionKey).replace<T>(body, {
      accessCondition: { type: "IfMatch", condition: etag },
      ...(signal ? { abortSignal: signal } : {}),
    });
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
  /** Stops the delete (the SDK's abortSignal), e.g. when its caller gave it up. */
  signal?: AbortSignal,
): Promise<number> {
  try {
    const res = await container.item(id, partitionKey).delete({
      accessCondition: { type: "IfMatch", condition: etag },
      ...(signal ? { abortSignal: signal } : {}),
    });
    return res.requestCharge;
  } catch (e) {
    const s = statusOf(e);
    if (s === 412) throw new PreconditionFailedError(id);
    if (s === 404) throw new NotFoundError(id);
    throw e;
  }
}

/**
 * Applies `operations` to an item in one request, only if `condition` (a filter predicate, `FROM c WHERE …`) holds
 * for the stored item: "applied", "conditionFailed" (412: the predicate is false) or "missing" (404).
 */
export async function patchIf(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  operations: PatchOperation[],
  condition: string,
): Promise<"applied" | "conditionFailed" | "missing"> {
  try {
    await container.item(id, partitionKey).patch({ operations, condition });
    return "applied";
  } catch (e) {
    const s = statusOf(e);
    if (s === 412) return "conditionFailed";
    if (s === 404) return "missing";
    throw e;
  }
}

/**
 * Read → mutate → Replace with If-Match; on 412 re-read and re-apply (the shared bounded, jittered policy).
 * `mutate` returns the new body computed from `current` (it may run several times), or `undefined` to leave
 * the item unchanged. A missing item is NotFoundError; losing every attempt is ConcurrencyConflictError.
 */
export async function updateItem<T extends ItemDefinition>(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  mutate: (current: Stored<T>) => T | undefined,
  options: UpdateOptions<T> = {},
): Promise<Stored<T>> {
  const base = options.retryPolicy ?? defaultOccRetryPolicy;
  const policy = options.maxAttempts === undefined ? base : base.with({ maxAttempts: options.maxAttempts });
  let known = options.current;
  return policy.run(
    async () => {
      const current = known ?? (await readItem<T>(container, id, partitionKey));
      known = undefined;
      if (!current) throw new NotFoundError(id);
      const next = mutate(current);
      if (next === undefined) return current;
      return (await replaceIfMatch(container, id, partitionKey, next, current._etag)).resource;
    },
    { signal: options.signal, onExhausted: (attempts) => new ConcurrencyConflictError(id, attempts) },
  );
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
