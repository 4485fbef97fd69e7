import { jsonNestingDepth as nestingDepth } from "../shared/json.js";
import { badRequest } from "./errors.js";

export { nestingDepth };

/**
 * The service's nesting limit for an item's objects and arrays
 * (https://learn.microsoft.com/azure/cosmos-db/concepts-limits#per-item-limits: "Maximum nesting depth for
 * embedded objects / arrays: 128").
 */
export const MAX_ITEM_NESTING = 128;
/** Levels a request body may wrap around an item: a batch's array and operation, a patch's operations. */
export const ENVELOPE_NESTING = 3;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** First byte of a body in Cosmos binary JSON (the .NET SDK's JsonBinaryEncoding "BinaryFormat" marker). */
const COSMOS_BINARY_MARKER = 0x80;

/** Decodes a request body as strict UTF-8 (the service refuses malformed bytes rather than replacing them). */
export function decodeUtf8(body: Buffer): string {
  // The .NET SDK with AZURE_COSMOS_BINARY_ENCODING_ENABLED writes items in Cosmos binary JSON; the emulator reads
  // text only (it answers in text, which the SDK accepts), so it says what the body is instead of "not UTF-8".
  if (body[0] === COSMOS_BINARY_MARKER) {
    throw badRequest(
      "The request body is in Cosmos binary JSON (CosmosBinary), which this emulator does not read; send JSON text (for the .NET SDK: leave AZURE_COSMOS_BINARY_ENCODING_ENABLED unset).",
    );
  }
  try {
    return utf8.decode(body);
  } catch {
    throw badRequest("The request body is not valid UTF-8.");
  }
}

/** Parses a request body: strict UTF-8, JSON, nesting within the item limit plus a request envelope. */
export function parseJsonBody(body: Buffer): unknown {
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
