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

/*
 * The layout of rids, as the .NET SDK parses them (Microsoft.Azure.Documents ResourceId.TryParse) — it takes the
 * database and container rids of every request it routes from a container's `_rid`, and ORDER BY continuations carry
 * document rids it parses:
 * - a database: 4 bytes;
 * - a container: the database's 4 bytes + 4 bytes whose first byte has its high bit set (without it, .NET reads
 *   the 4 bytes as a *user* and addresses `dbs/{db}/colls/{db}`);
 * - a document: the container's 8 bytes + an 8-byte little-endian key whose last byte's high nibble is the child
 *   type, 0 for a document.
 */

/** The 4 bytes after the database's in a container rid, from a sequence number below 2^31. */
export function containerRidPart(seq: number): number[] {
  const n = (seq | 0x8000_0000) >>> 0;
  return [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
}

/** A document rid: the container's 8 bytes and the document key `seq` (below 2^53) little-endian. */
export function documentRid(containerRidBytes: Uint8Array, seq: number): string {
  const b = Buffer.alloc(16);
  b.set(containerRidBytes.subarray(0, 8), 0);
  b.writeUInt32LE(seq % 2 ** 32, 8);
  b.writeUInt32LE(Math.floor(seq / 2 ** 32), 12);
  return encodeRid(b);
}

/**
 * The document key of a document rid. Older emulators wrote `0x80 0 0 0` then the sequence big-endian in the
 * last 4 bytes; such rids (kept by persisted documents) are still read.
 */
export function documentSeqOfRid(rid: string): number {
  const b = decodeRid(rid);
  if (b.length !== 16) return 0;
  const legacy = b[8] === 0x80 && b[9] === 0 && b[10] === 0 && b[11] === 0 && b.readUInt32BE(12) !== 0;
  if (legacy) return b.readUInt32BE(12);
  return b.readUInt32LE(12) * 2 ** 32 + b.readUInt32LE(8);
}
