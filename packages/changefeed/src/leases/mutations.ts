import { HANDOFF_PROPERTY, type Lease, UnsupportedLeaseError } from "./lease.js";
import { LeaseLostError } from "./store.js";

/**
 * The mutations the lease updater applies (each re-applied to a fresh copy after a 412). Each checks that the
 * lease still has the owner this host expects, exactly as .NET's (change-feed-leases.md §4.5–4.8).
 */
function expectOwner(server: Lease, expected: string | null): void {
  if (server.owner !== expected) throw new LeaseLostError(server.leaseToken, "stolen", server.owner);
}

/**
 * Take a lease seen with `seenOwner` (null, or an expired owner, or the victim of a steal). A lease this
 * library cannot read from (e.g. a Java state holding several continuations) is refused before any write,
 * so it stays with the hosts that can process it instead of stalling here. A pending hand-off is cleared.
 */
export const acquireAs =
  (seenOwner: string | null, me: string) =>
  (server: Lease): Lease => {
    if (server.shape?.unsupported) throw new UnsupportedLeaseError(server.id, server.shape.unsupported);
    expectOwner(server, seenOwner);
    const { [HANDOFF_PROPERTY]: _handedTo, ...properties } = server.properties;
    return { ...server, owner: me, properties };
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
 * that should take it (a hint our hosts honour for a while; .NET hosts ignore it).
 */
export const releaseAs =
  (me: string, successor?: string) =>
  (server: Lease): Lease => {
    expectOwner(server, me);
    const { [HANDOFF_PROPERTY]: _previous, ...properties } = server.properties;
    return {
      ...server,
      owner: null,
      properties: successor ? { ...properties, [HANDOFF_PROPERTY]: successor } : properties,
    };
  };
