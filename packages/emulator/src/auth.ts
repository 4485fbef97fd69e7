import { createHmac, timingSafeEqual } from "node:crypto";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { CosmosError } from "./errors.js";

/** The Azure Cosmos DB Emulator's published, well-known account key (not a secret). */
export const WELL_KNOWN_EMULATOR_KEY =
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

/** How far `x-ms-date` may differ from the server clock, as the service allows (ms). */
export const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000;

/** Verified signatures remembered at most (the set is simply cleared when full). */
const VERIFIED_CACHE_SIZE = 4096;

const unauthorized = (message: string): CosmosError => new CosmosError(401, "Unauthorized", message);

/**
 * Verifies master-key request signatures: HMAC-SHA256 over
 * `verb\nresourceType\nresourceId\ndate\n\n` (lower-cased except the resource id), base64.
 */
export class MasterKeyAuth {
  private readonly key: Buffer;
  /** Signatures already verified (exact request identity + header); the date is re-checked every time. */
  private readonly verified = new Set<string>();

  constructor(masterKey: string) {
    this.key = Buffer.from(masterKey, "base64");
    if (this.key.length === 0) {
      throw new CosmosFeedError("The emulator key must be a non-empty base64 string.", {
        code: "InvalidKey",
      });
    }
  }

  /**
   * The master-key signature of one request (base64 HMAC-SHA256 over verb, resource type, resource id and
   * date), as the SDKs compute it.
   */
  sign(verb: string, resourceType: string, resourceId: string, date: string): string {
    const text = `${verb.toLowerCase()}\n${resourceType.toLowerCase()}\n${resourceId}\n${date.toLowerCase()}\n\n`;
    return createHmac("sha256", this.key).update(text).digest("base64");
  }

  /** Throws a 401 CosmosError unless the authorization header carries a valid master-key signature. */
  verify(
    verb: string,
    resourceType: string,
    resourceId: string,
    authorization: string | undefined,
    date: string | undefined,
    now = Date.now(),
  ): void {
    if (!authorization) throw unauthorized("Required Header authorization is missing.");
    if (!date) throw unauthorized("Required Header x-ms-date is missing.");
    const cacheKey = `${verb}\n${resourceType}\n${resourceId}\n${date}\n${authorization}`;
    const when = Date.parse(date);
    if (Number.isNaN(when))
      throw unauthorized(`The x-ms-date header '${date}' is not a valid RFC 1123 date.`);
    if (Math.abs(now - when) > MAX_CLOCK_SKEW_MS) {
      throw new CosmosError(
        403,
        "Forbidden",
        `The authorization token is not valid at the current time (x-ms-date '${date}' is more than 15 minutes away from the server time).`,
      );
    }
    // The SDK signs with a 1-second date, so a burst of requests to one resource repeats the same
    // (string-to-sign, signature) pair: a verified pair is remembered instead of recomputing the HMAC.
    if (this.verified.has(cacheKey)) return;
    let decoded: string;
    try {
      decoded = decodeURIComponent(authorization);
    } catch {
      throw unauthorized("The authorization header is not URL-encoded correctly.");
    }
    const parts = new Map<string, string>();
    for (const part of decoded.split("&")) {
      const eq = part.indexOf("=");
      if (eq > 0) parts.set(part.slice(0, eq), part.slice(eq + 1));
    }
    if (parts.get("type") !== "master") {
      throw unauthorized(
        `Authorization type '${parts.get("type") ?? ""}' is not supported by the emulator; use the master key.`,
      );
    }
    const sig = parts.get("sig");
    if (!sig) throw unauthorized("The authorization header has no signature.");
    const expected = Buffer.from(this.sign(verb, resourceType, resourceId, date), "base64");
    const given = Buffer.from(sig, "base64");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw unauthorized(
        "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol.",
      );
    }
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.clear();
    this.verified.add(cacheKey);
  }
}

/**
 * The decoded path segments of a request URL. The data plane uses no query strings, and the SDK puts an item
 * id into the path with `encodeURI`, which leaves `?` alone: in `docs/a?b` the `?b` is part of the id (the
 * SDK signs `…/docs/a?b`), so for a document path the query is given back to the id.
 */
export function pathSegments(url: string): string[] {
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  const raw = path.split("/").filter((s) => s.length > 0);
  if (q >= 0 && raw[0] === "dbs" && raw[2] === "colls" && raw[4] === "docs") {
    // `docs/a?b` → id `a?b`; `docs/?b` (an id starting with `?`) → id `?b`.
    if (raw.length === 6) raw[5] += url.slice(q);
    else if (raw.length === 5 && path.endsWith("/")) raw.push(url.slice(q));
  }
  try {
    return raw.map(decodeURIComponent);
  } catch {
    throw new CosmosError(400, "BadRequest", `The request path '${path}' is not validly URL-encoded.`);
  }
}

/**
 * The resource type and id a request is signed for, from its decoded path segments:
 * an even number of segments names a resource (`dbs/db1/colls/c1` → type colls, id = the path),
 * an odd number names a feed under its parent (`dbs/db1/colls/c1/docs` → type docs, id `dbs/db1/colls/c1`).
 * Container operations (`dbs/db1/colls/c1/operations/partitionkeydelete`) are signed for the container.
 * Offers are signed with the offer id alone: `offers/AbC1` → type offers, id `abc1`.
 */
export function signedResource(segments: readonly string[]): { type: string; id: string } {
  const n = segments.length;
  if (n === 0) return { type: "", id: "" };
  // An offer is signed with its id alone, lower-cased (the SDK's setAuthorizationTokenHeaderUsingMasterKey).
  if (segments[0] === "offers") return { type: "offers", id: n === 2 ? segments[1].toLowerCase() : "" };
  if (n === 6 && segments[0] === "dbs" && segments[2] === "colls" && segments[4] === "operations") {
    return { type: "colls", id: segments.slice(0, 4).join("/") };
  }
  if (n % 2 === 0) return { type: segments[n - 2], id: segments.join("/") };
  return { type: segments[n - 1], id: segments.slice(0, n - 1).join("/") };
}

/**
 * The headers that sign a request with the account key, as the SDK sends them: `authorization` (a master-key
 * signature over method, resource type and id, and date), `x-ms-date`, `x-ms-version`. The resource is the one the
 * server checks the path against (signedResource of pathSegments) unless given.
 */
export function masterKeyHeaders(
  key: string,
  method: string,
  path: string,
  resource: { type: string; id: string } = signedResource(pathSegments(path)),
): Record<string, string> {
  const date = new Date().toUTCString();
  const sig = new MasterKeyAuth(key).sign(method, resource.type, resource.id, date);
  return {
    authorization: encodeURIComponent(`type=master&ver=1.0&sig=${sig}`),
    "x-ms-date": date,
    "x-ms-version": "2020-07-15",
  };
}
