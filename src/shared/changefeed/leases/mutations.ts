import type { Lease } from "./lease.js";
import { LeaseLostError } from "./store.js";

/**
 * The mutations the lease updater applies (each re-applied to a fresh copy after a 412). Each checks that the
 * lease still has the owner this host expects, exactly as .NET's (change-feed-leases.md §4.5–4.8).
 */
function expectOwner(server: Lease, expected: string | null): void {
  if (server.owner !== expected) throw new LeaseLostError(server.leaseToken, "stolen", server.owner);
}

/** Take a lease seen with `seenOwner` (null, or an expired owner, or the victim of a steal). */
export const acquireAs =
  (seenOwner: string | null, me: string) =>
  (server: Lease): Lease => {
    expectOwner(server, seenOwner);
    return { ...server, owner: me };
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

/** Give the lease up: Owner null, continuation kept. */
export const releaseAs =
  (me: string) =>
  (server: Lease): Lease => {
    expectOwner(server, me);
    return { ...server, owner: null };
  };
