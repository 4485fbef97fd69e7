import { jsonNestingDepth as nestingDepth } from "@cosmos-feed/core/json";
import { BinaryJsonError, decodeCosmosBinary, isCosmosBinary } from "./binary-json/decode.js";
import { badRequest, requestTooLarge } from "./errors.js";

export { nestingDepth };

/**
 * The service's nesting limit for an item's objects and arrays
 * (https://learn.microsoft.com/azure/cosmos-db/concepts-limits#per-item-limits: "Maximum nesting depth for
 * embedded objects / arrays: 128").
 */
export const MAX_ITEM_NESTING = 128;
/** Levels a request body may wrap around an item: a batch's array and operation, a patch's operations. */
export const ENVELOPE_NESTING = 3;

/**
 * Characters of strings a body in Cosmos binary JSON may decode to: as many as the largest text body could carry
 * (string references and packed strings make the decoded document larger than its bytes; past this it could not
 * be stored anyway, the item limit being 2 MB).
 */
export const MAX_DECODED_BINARY_CHARS = 4 * 1024 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decodes a request body as strict UTF-8 (the service refuses malformed bytes rather than replacing them). */
export function decodeUtf8(body: Buffer): string {
  try {
    return utf8.decode(body);
  } catch {
    throw badRequest("The request body is not valid UTF-8.");
  }
}

/**
 * Parses a request body: JSON text (strict UTF-8, nesting within the item limit plus a request envelope), or —
 * first byte 0x80 — Cosmos binary JSON, which the .NET SDK sends item bodies in when
 * AZURE_COSMOS_BINARY_ENCODING_ENABLED is on, within the same nesting limit.
 */
export function parseJsonBody(body: Buffer): unknown {
  if (isCosmosBinary(body)) return parseBinaryBody(body);
  const text = decodeUtf8(body);
  const depth = nestingDepth(text);
  if (depth > MAX_ITEM_NESTING + ENVELOPE_NESTING) {
    throw badRequest(
      `The request body nests objects and arrays ${depth} levels deep; the limit for an item is ${MAX_ITEM_NESTING}.`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`The request body is not valid JSON: ${(e as Error).message}`);
  }
}

function parseBinaryBody(body: Buffer): unknown {
  try {
    return decodeCosmosBinary(body, {
      maxDepth: MAX_ITEM_NESTING + ENVELOPE_NESTING,
      maxChars: MAX_DECODED_BINARY_CHARS,
    });
  } catch (e) {
    if (!(e instanceof BinaryJsonError)) throw e;
    const message = `The request body is not valid Cosmos binary JSON: ${e.message}.`;
    if (e.tooLarge) throw requestTooLarge(message);
    throw badRequest(message);
  }
}
