import { badRequest, CosmosError, notFound, ServiceText, serviceMessage } from "../errors.js";
import type { PartitionKeyComponent } from "../partitioning/epk.js";
import { conditionHolds } from "../query/engine.js";
import {
  countIndexedPaths,
  type IndexPathPolicy,
  patchCharge,
  pointReadCharge,
  writeCharge,
} from "../ru/charges.js";
import type { OperationKind } from "../ru/meter.js";
import { Container, canonicalPartitionKey, type WriteSet } from "../store/container.js";
import { applyPatch, type PatchRequest, parsePatchRequest } from "../store/patch.js";
import type { JsonObject, StoredDoc } from "../store/types.js";
import { batch } from "./batch.js";
import {
  altContentPath,
  header,
  isTrue,
  jsonBody,
  jsonObjectBody,
  type Reply,
  type RequestContext,
} from "./context.js";
import { query, queryPlan } from "./query.js";

const PK_HEADER = "x-ms-documentdb-partitionkey";

/** Response headers for an operation on one document. */
export function docHeaders(c: Container, doc: StoredDoc | undefined, epk?: string): Record<string, string> {
  const range = c.rangeFor(doc?.epk ?? epk ?? "");
  const h: Record<string, string> = {
    "x-ms-session-token": `${range.id}:-1#${range.lastLsn}`,
    "x-ms-content-path": c.rid,
    "x-ms-alt-content-path": altContentPath("dbs", c.databaseId, "colls", c.id),
    lsn: String(range.lastLsn),
  };
  if (doc) h.etag = doc.etag;
  return h;
}

/** The leaf paths a write of `body` indexes under the container's policy (most specific rule wins). */
export function indexedPaths(c: Container, body: JsonObject): number {
  return countIndexedPaths(c.definition.indexingPolicy as IndexPathPolicy | undefined, body);
}

export function chargeFor(c: Container, doc: StoredDoc): number {
  return writeCharge(doc.json.length, indexedPaths(c, doc.body));
}

/**
 * Whether the client asked for no body on a write (`Prefer: return=minimal`: the .NET SDK's
 * `EnableContentResponseOnWrite = false`); the service then answers with the headers alone.
 */
export function minimalReturn(ctx: RequestContext): boolean {
  return header(ctx, "prefer")?.toLowerCase().replace(/\s/g, "") === "return=minimal";
}

/** The answer to a write of one document: the stored version (unless minimal), its headers and charge. */
function writeReply(
  ctx: RequestContext,
  c: Container,
  doc: StoredDoc,
  status: number,
  kind: OperationKind,
  charge = chargeFor(c, doc),
): Reply {
  return {
    status,
    body: minimalReturn(ctx) ? undefined : doc.json,
    headers: docHeaders(c, doc),
    charge,
    kind,
  };
}

/** The partition key the request names in its header, checked against the container definition. */
function headerPartitionKey(ctx: RequestContext, c: Container): PartitionKeyComponent[] | undefined {
  const raw = header(ctx, PK_HEADER);
  return raw === undefined ? undefined : c.parsePartitionKeyHeader(raw);
}

export function requirePartitionKey(ctx: RequestContext, c: Container): PartitionKeyComponent[] {
  const pk = headerPartitionKey(ctx, c);
  if (!pk)
    throw badRequest(
      "PartitionKey value must be supplied for this operation (x-ms-documentdb-partitionkey).",
    );
  if (pk.length !== c.pk.paths.length) {
    throw badRequest("The partition key supplied has fewer components than defined in the container.");
  }
  return pk;
}

function checkBodyMatchesHeader(ctx: RequestContext, c: Container, body: JsonObject): void {
  const pk = headerPartitionKey(ctx, c);
  if (pk && canonicalPartitionKey(pk) !== canonicalPartitionKey(c.partitionKeyOf(body))) {
    throw badRequest("PartitionKey extracted from document doesn't match the one specified in the header.");
  }
}

/** POST /docs: create, upsert, query, query plan, batch or bulk. */
export function postDocuments(ctx: RequestContext, c: Container): Reply | Promise<Reply> {
  if (header(ctx, "x-ms-cosmos-is-query-plan-request")?.toLowerCase() === "true") return queryPlan(ctx);
  if (
    isTrue(ctx, "x-ms-documentdb-isquery") ||
    header(ctx, "content-type")?.startsWith("application/query+json")
  ) {
    return query(ctx, c);
  }
  if (isTrue(ctx, "x-ms-cosmos-is-batch-request")) return batch(ctx, c);
  const body = jsonObjectBody(ctx);
  checkBodyMatchesHeader(ctx, c, body);
  const ws = c.beginWrite();
  if (isTrue(ctx, "x-ms-documentdb-is-upsert")) {
    const { doc, created } = ws.upsert(body, { ifMatch: header(ctx, "if-match") });
    c.commit(ws.mutations, ws.nowMs);
    return writeReply(ctx, c, doc, created ? 201 : 200, "upsert");
  }
  const doc = ws.create(body);
  c.commit(ws.mutations, ws.nowMs);
  return writeReply(ctx, c, doc, 201, "create");
}

/** GET/PUT/PATCH/DELETE /docs/{id}. */
export function documentOperation(ctx: RequestContext, c: Container, id: string): Reply {
  // The service decodes `%2F` before it routes: `docs/a%2Fb` names `docs/a/b`, no document. An item whose id has a
  // `/` (which create accepts, as the service does) is reached by its RID only (Microsoft's CosmosItemTests.
  // CreateDropItemWithInvalidIdCharactersTest reads such an id by name and expects 404).
  if (id.includes("/") && !ctx.byRid) throw notFound();
  const pk = requirePartitionKey(ctx, c);
  const key = Container.docKey(canonicalPartitionKey(pk), id);
  const ifMatch = header(ctx, "if-match");
  switch (ctx.method) {
    case "GET": {
      const doc = c.getLive(key);
      if (!doc) throw notFound();
      const charge = pointReadCharge(doc.json.length);
      if (header(ctx, "if-none-match") === doc.etag) {
        return { status: 304, headers: docHeaders(c, doc), charge, kind: "read" };
      }
      return { status: 200, body: doc.json, headers: docHeaders(c, doc), charge, kind: "read" };
    }
    case "PUT": {
      const body = jsonObjectBody(ctx);
      // The service refuses a body in another logical partition (400) before looking the item up.
      checkBodyMatchesHeader(ctx, c, body);
      const ws = c.beginWrite();
      const doc = ws.replace(key, body, { ifMatch });
      c.commit(ws.mutations, ws.nowMs);
      return writeReply(ctx, c, doc, 200, "replace");
    }
    case "PATCH": {
      const patch = parsePatchRequest(jsonBody(ctx));
      const ws = c.beginWrite();
      const doc = patchInto(ws, c, key, patch, ifMatch);
      c.commit(ws.mutations, ws.nowMs);
      return writeReply(ctx, c, doc, 200, "patch", patchCharge(doc.json.length, indexedPaths(c, doc.body)));
    }
    case "DELETE": {
      const ws = c.beginWrite();
      const old = ws.delete(key, { ifMatch });
      c.commit(ws.mutations, ws.nowMs);
      return {
        status: 204,
        headers: docHeaders(c, undefined, old.epk),
        charge: chargeFor(c, old),
        kind: "delete",
      };
    }
    default:
      throw new CosmosError(405, "MethodNotAllowed", `${ctx.method} is not supported on a document.`);
  }
}

/**
 * POST dbs/{db}/colls/{c}/operations/partitionkeydelete (`container.deleteAllItemsForPartitionKey`): deletes
 * every item of one logical partition. The service runs it in the background but its effect is immediate
 * (https://learn.microsoft.com/azure/cosmos-db/nosql/how-to-delete-by-partition-key); here all deletes
 * commit together in one write set, so each appears in the all-versions-and-deletes feed. That page also
 * says a hierarchical key must be given in full (a prefix is an error). Charged as the deletes it made.
 */
export function deleteAllItemsForPartitionKey(ctx: RequestContext, c: Container): Reply {
  const pk = headerPartitionKey(ctx, c);
  if (!pk) {
    throw badRequest(
      "PartitionKey value must be supplied for this operation (x-ms-documentdb-partitionkey).",
    );
  }
  if (pk.length !== c.pk.paths.length) {
    throw badRequest(
      `Deleting by partition key needs the full key (${c.pk.paths.length} components); a hierarchical key prefix is not supported.`,
    );
  }
  const pkKey = canonicalPartitionKey(pk);
  const ws = c.beginWrite();
  let charge = 0;
  for (const doc of [...(c.partitions.get(pkKey)?.values() ?? [])]) {
    // An already expired item is purged as a TTL delete by the lookup itself.
    if (!ws.get(doc.key)) continue;
    charge += chargeFor(c, ws.delete(doc.key));
  }
  c.commit(ws.mutations, ws.nowMs);
  return {
    status: 200,
    headers: docHeaders(c, undefined, c.epkOf(pk)),
    // At least 1 RU even for an empty partition, like any admitted request.
    charge: Math.max(1, Math.round(charge * 100) / 100),
    kind: "delete",
  };
}

export function patchInto(
  ws: WriteSet,
  c: Container,
  key: string,
  patch: PatchRequest,
  ifMatch: string | undefined,
): StoredDoc {
  for (const op of patch.operations) {
    for (const path of [op.path, op.from]) {
      if (path === undefined) continue;
      const top = path.split("/")[1];
      if (
        top === "id" ||
        top.startsWith("_") ||
        c.pk.paths.some((p) => path === p || path.startsWith(`${p}/`) || p.startsWith(`${path}/`))
      ) {
        throw badRequest(
          `Patch cannot modify '${path}': id, system properties and the partition key are immutable.`,
        );
      }
    }
  }
  return ws.update(
    key,
    (current) => {
      if (patch.condition !== undefined && !conditionHolds(patch.condition, current.body)) {
        throw new CosmosError(
          412,
          "PreconditionFailed",
          serviceMessage(
            ServiceText.PreconditionFailed,
            `The patch condition '${patch.condition}' is not met by the current document.`,
          ),
        );
      }
      return applyPatch(current.body, patch.operations);
    },
    { ifMatch },
  );
}
