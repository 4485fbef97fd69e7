import {
  HANDOFF_FROM_PROPERTY,
  HANDOFF_PROPERTY,
  isAvailable,
  type Lease,
  UnsupportedLeaseError,
  withoutHandoffHints,
} from "./lease.js";
import { LeaseLostError } from "./store.js";

/**
 * The mutations the lease updater applies (each re-applied to a fresh copy after a 412). Each checks that the
 * lease still has the owner this host expects, exactly as .NET's (change-feed-leases.md §4.5–4.8).
 */
function expectOwner(server: Lease, expected: string | null): void {
  if (server.owner !== expected) throw new LeaseLostError(server.leaseToken, "stolen", server.owner);
}

/** How an expired lease is taken: the service's copy must be expired too, by this clock. */
export interface ExpiredWhen {
  /** Wall-clock time (ms since the epoch) when the mutation runs. */
  nowMs: () => number;
  /** The lease expiration interval (ms). */
  expirationMs: number;
}

/**
 * Take a lease seen with `seenOwner` (null, or an expired owner, or the victim of a steal). A lease this
 * library cannot read from (e.g. a Java state holding several continuations) is refused before any write,
 * so it stays with the hosts that can process it instead of stalling here. A pending hand-off is cleared.
 * `expired`: the lease is taken because its owner's copy looked expired; after a 412 the fresh copy must look
 * expired too, or the owner renewed it meanwhile and it is not taken (a host back from a long pause acts on a view
 * older than the renewals: without this it took every lease it had seen before the pause).
 */
export const acquireAs =
  (seenOwner: string | null, me: string, expired?: ExpiredWhen) =>
  (server: Lease): Lease => {
    if (server.shape?.unsupported) throw new UnsupportedLeaseError(server.id, server.shape.unsupported);
    expectOwner(server, seenOwner);
    if (expired && server.owner !== null && !isAvailable(server, expired.nowMs(), expired.expirationMs)) {
      throw new LeaseLostError(server.leaseToken, "stolen", server.owner);
    }
    return { ...server, owner: me, properties: withoutHandoffHints(server.properties) };
  };

/** Renew: only the timestamp changes (the store stamps every write). */
export const renewAs =
  (me: string) =>
  (server: Lease): Lease => {
    expectOwner(server, me);
    return server;
  };

/** Record progress: the raw change feed etag of the last page the handler succeeded on. */
export const checkpointAs =
  (owner: string | null, continuationToken: string) =>
  (server: Lease): Lease => {
    if (continuationToken.length === 0) throw new Error("A checkpoint needs a non-empty continuation token.");
    expectOwner(server, owner);
    return { ...server, continuationToken };
  };

/**
 * Give the lease up: Owner null, continuation kept. With a successor, `properties.handoffTo` names the host
 * that should take it and `properties.handoffFrom` this one (hints our hosts honour for a while; .NET hosts
 * ignore them).
 */
export const releaseAs =
  (me: string, successor?: string) =>
  (server: Lease): Lease => {
    expectOwner(server, me);
    const properties = withoutHandoffHints(server.properties);
    return {
      ...server,
      owner: null,
      properties: successor
        ? { ...properties, [HANDOFF_PROPERTY]: successor, [HANDOFF_FROM_PROPERTY]: me }
        : properties,
    };
  };
