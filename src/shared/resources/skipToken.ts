import { ApiError } from "./model.js";

/**
 * The list's `$skipToken`: base64url of `{"s": subscription, "c": the SDK's continuation}`. Binding the token to its
 * subscription refuses one replayed on another (whatever the database would do with a foreign continuation), and
 * checking it before the SDK sees it keeps a hostile token from becoming a 500: the continuation travels in an HTTP
 * header (x-ms-continuation), and Node refuses a header with a control or non-Latin-1 character by throwing, and a
 * header past the server's limit gets an error answer the SDK cannot read.
 */

/**
 * The size the list asks the database to keep its continuation tokens within (FeedOptions.continuationTokenLimitInKB;
 * the SDK documents 1 KB as its intended cap). A single-partition query's token is far smaller.
 */
export const CONTINUATION_LIMIT_KB = 1;

/**
 * The longest `$skipToken` accepted, in base64url characters. A token the API issues is at most ~1.4 KB (a 1 KB
 * continuation and a 64-character subscription id, base64url); the host caps a whole request URL at 4,096 bytes
 * (packages/devhost/src/http/server.ts DEFAULT_MAX_URL_LENGTH), so a nextLink has to stay well within that anyway.
 */
export const MAX_SKIP_TOKEN_CHARS = 3_072;

/** What an HTTP header carries safely: printable ASCII (the service's continuation tokens are JSON text). */
const HEADER_SAFE = /^[\x20-\x7e]+$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

function invalidSkipToken(why: string): ApiError {
  return new ApiError(400, "InvalidSkipToken", `$skipToken is not a token this API returned: ${why}.`);
}

/** The `$skipToken` of the page after this one. */
export function encodeSkipToken(subscriptionId: string, continuation: string): string {
  return Buffer.from(JSON.stringify({ s: subscriptionId, c: continuation }), "utf8").toString("base64url");
}

/** The continuation in a `$skipToken` this API issued for `subscriptionId`; anything else is 400 InvalidSkipToken. */
export function decodeSkipToken(token: string, subscriptionId: string): string {
  if (token.length === 0) throw invalidSkipToken("it is empty");
  if (token.length > MAX_SKIP_TOKEN_CHARS) {
    throw invalidSkipToken(`it is longer than ${MAX_SKIP_TOKEN_CHARS} characters`);
  }
  const bytes = Buffer.from(token, "base64url");
  // Buffer skips characters outside the alphabet; the round trip also refuses non-canonical trailing bits.
  if (!BASE64URL.test(token) || bytes.toString("base64url") !== token) {
    throw invalidSkipToken("it is not base64url");
  }
  let envelope: unknown;
  try {
    envelope = JSON.parse(utf8.decode(bytes));
  } catch {
    throw invalidSkipToken("it does not decode to JSON");
  }
  if (typeof envelope !== "object" || envelope === null || Array.isArray(envelope)) {
    throw invalidSkipToken("it has the wrong shape");
  }
  const { s, c, ...rest } = envelope as Record<string, unknown>;
  if (typeof s !== "string" || typeof c !== "string" || Object.keys(rest).length > 0) {
    throw invalidSkipToken("it has the wrong shape");
  }
  if (s !== subscriptionId) throw invalidSkipToken("it belongs to another subscription");
  if (!HEADER_SAFE.test(c)) throw invalidSkipToken("its continuation is not printable ASCII");
  return c;
}
