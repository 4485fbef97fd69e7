import type { Container, ItemDefinition, PartitionKey } from "@azure/cosmos";
import { ConcurrencyConflictError, NotFoundError, PreconditionFailedError } from "../cosmos/errors.js";
import { createItem, readItem, replaceIfMatch, type Stored } from "../cosmos/occ.js";

/** Field a fenced document keeps: the highest fencing token that wrote it. */
export const FENCE_FIELD = "fencingToken";

export type Fenced<T> = T & { [FENCE_FIELD]?: number };

/** A writer with an older token than one the document has already seen: its lock has been superseded. */
export class StaleFencingTokenError extends Error {
  readonly statusCode = 412;
  constructor(
    readonly id: string,
    readonly token: number,
    readonly seen: number,
  ) {
    super(
      `Write to '${id}' with fencing token ${token} refused: the document was written with token ${seen}.`,
    );
    this.name = "StaleFencingTokenError";
  }
}

/** Attempts of a fenced update before giving up on contention. */
export const FENCED_UPDATE_ATTEMPTS = 10;

/**
 * Read → check the token is not older than the document's → mutate → Replace with If-Match, storing the token.
 * Because the replace is conditional on the etag that was checked, no write with an older token can ever land
 * after one with a newer token (Kleppmann's fencing, enforced by the storage).
 */
export async function fencedUpdate<T extends ItemDefinition>(
  container: Container,
  id: string,
  partitionKey: PartitionKey,
  token: number,
  mutate: (current: Stored<Fenced<T>>) => T,
  signal?: AbortSignal,
): Promise<Stored<Fenced<T>>> {
  for (let attempt = 1; attempt <= FENCED_UPDATE_ATTEMPTS; attempt++) {
    signal?.throwIfAborted();
    const current = await readItem<Fenced<T>>(container, id, partitionKey);
    if (!current) throw new NotFoundError(id);
    const seen = current[FENCE_FIELD] ?? Number.NEGATIVE_INFINITY;
    if (seen > token) throw new StaleFencingTokenError(id, token, seen);
    const next = { ...mutate(current), [FENCE_FIELD]: token } as Fenced<T>;
    try {
      return (await replaceIfMatch(container, id, partitionKey, next, current._etag)).resource;
    } catch (e) {
      if (!(e instanceof PreconditionFailedError)) throw e;
    }
  }
  throw new ConcurrencyConflictError(id, FENCED_UPDATE_ATTEMPTS);
}

/** Creates a fenced document carrying the writer's token. */
export function fencedCreate<T extends ItemDefinition>(
  container: Container,
  body: T,
  token: number,
): Promise<Stored<Fenced<T>>> {
  return createItem<Fenced<T>>(container, { ...body, [FENCE_FIELD]: token });
}
