import { signedResource } from "../auth.js";
import type { Account } from "../store/account.js";

/**
 * Requests addressed by resource id instead of name. The .NET SDK reads a container's partition key ranges (and
 * re-reads a container after a 410) at `dbs/{db _rid}/colls/{container _rid}/…`, and signs such a request with the
 * addressed resource's rid lower-cased (its AuthorizationHelper lower-cases ids that are not name-based). A path is
 * rid-based when its database segment names no database but is a database's `_rid`, as the gateway resolves it.
 * Returns the same path with names in place of rids (so every route serves it as usual) and the resource the
 * request is signed for; undefined for a name-based path.
 */
export function ridBasedPath(
  account: Account,
  segments: readonly string[],
): { segments: string[]; signed: { type: string; id: string } } | undefined {
  if (segments[0] !== "dbs" || segments.length < 2 || account.databases.has(segments[1])) return undefined;
  const db = [...account.databases.values()].find((d) => d.rid === segments[1]);
  if (!db) return undefined;
  const named = [...segments];
  named[1] = db.id;
  // The resource a request is signed for: the addressed one, or for a feed (odd length) its parent.
  const signedIndex = segments.length % 2 === 0 ? segments.length - 1 : segments.length - 2;
  if (segments.length >= 4 && segments[2] === "colls") {
    const c = [...db.containers.values()].find((x) => x.rid === segments[3]);
    // An unknown container rid stays as it is: the route answers 404 as for an unknown name.
    if (c) named[3] = c.id;
    // A document by its rid (what Microsoft's CosmosItemTests.CreateDropItemWithInvalidIdCharactersTest replaces an
    // item through when its id has a character no name-based URL carries); an unknown rid stays: 404.
    const id = c && segments.length === 6 && segments[4] === "docs" ? c.idOfRid(segments[5]) : undefined;
    if (id !== undefined) named[5] = id;
  }
  return {
    segments: named,
    signed: { type: signedResource(segments).type, id: segments[signedIndex].toLowerCase() },
  };
}
