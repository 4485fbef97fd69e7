/**
 * Resource ids (`_rid`) in Cosmos DB's own base64 alphabet: standard base64 with `-` in place of `/`, so a rid is
 * safe in a URL path (.NET: Microsoft.Azure.Documents ResourceId.ToBase64String / FromBase64String). Node's
 * base64 decoder would read `-` as URL-safe base64 (the value of `+`), so rids are never decoded with it directly.
 */
export function encodeRid(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64").replaceAll("/", "-");
}

/** The bytes of a rid written by {@link encodeRid} (or by an older emulator, in standard base64). */
export function decodeRid(rid: string): Buffer {
  return Buffer.from(rid.replaceAll("-", "/"), "base64");
}
