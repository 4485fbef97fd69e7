// Effective partition key (EPK) hashing, ported from @azure/cosmos (MIT, (c) Microsoft) utils/hashing/*.
//
// Byte-identical to the JS SDK's `hashPartitionKey`:
//   V2 (Hash, version 2): per-component prefixed bytes (string 0x08|utf8|0xFF, number 0x05|f64 LE,
//     true 0x03, false 0x02, null 0x01, {}/undefined 0x00) concatenated, MurmurHash3 x64_128 seed 0,
//     16 bytes reversed, byte0 &= 0x3F, 32 uppercase hex chars.
//   V1 (Hash, version absent/1): MurmurHash3 x86_32 of the first component's prefixed bytes (strings
//     truncated to 100 UTF-16 units and terminated by 0x00), EPK = numberEncoding(hash) || valueEncoding.
//   MultiHash: concatenation of the V2 hash of each component on its own (prefix keys allowed).
// Hot path is allocation-light: module-level scratch buffers, 32-bit math (no BigInt).

/** One value of a partition key: a string, number, boolean, null, or `{}` (the undefined key). */
export type PartitionKeyComponent = string | number | boolean | null | Record<string, never>;

/** The part of a container's partition key definition the hashing reads. */
export interface PartitionKeyDefinitionLike {
  /** The key's paths (one, or several for a hierarchical key). */
  paths: string[];
  /** "Hash" (one path) or "MultiHash" (hierarchical). */
  kind?: "Hash" | "MultiHash" | string;
  /** The hash version: 1 or 2 (default 1, as the service). */
  version?: number;
  /** Whether the key is a system key (hashed as the service hashes those). */
  systemKey?: boolean;
}

/** Lowest EPK (inclusive) of the whole key space. */
export const EPK_MIN = "";
/** Highest EPK (exclusive) of the whole key space. */
export const EPK_MAX = "FF";

const PREFIX_UNDEFINED = 0x00;
const PREFIX_NULL = 0x01;
const PREFIX_FALSE = 0x02;
const PREFIX_TRUE = 0x03;
const PREFIX_NUMBER = 0x05;
const PREFIX_STRING = 0x08;
const PREFIX_INFINITY = 0xff;
const V1_MAX_STRING_CHARS = 100;

const HEX: string[] = [];
for (let i = 0; i < 256; i++) HEX.push(i.toString(16).toUpperCase().padStart(2, "0"));

// ---------------------------------------------------------------------------------------------
// Scratch buffers
// ---------------------------------------------------------------------------------------------

let scratch = new Uint8Array(1024);
let scratchView = new DataView(scratch.buffer);
/** Output buffer for V1 EPK bytes (max 10 bytes hash + 1 + 3*100 + 1 value bytes). */
const v1Out = new Uint8Array(16 + 2 + 3 * V1_MAX_STRING_CHARS + 2);
const f64 = new DataView(new ArrayBuffer(8));

function ensureScratch(n: number): void {
  if (n <= scratch.length) return;
  let size = scratch.length * 2;
  while (size < n) size *= 2;
  scratch = new Uint8Array(size);
  scratchView = new DataView(scratch.buffer);
}

/** Encode `s[0..end)` as UTF-8 (lone surrogates -> U+FFFD, like TextEncoder) at `off`; returns new offset. */
function writeUtf8(s: string, end: number, buf: Uint8Array, off: number): number {
  for (let i = 0; i < end; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      buf[off++] = c;
    } else if (c < 0x800) {
      buf[off++] = 0xc0 | (c >>> 6);
      buf[off++] = 0x80 | (c & 0x3f);
    } else if (c >= 0xd800 && c <= 0xdfff) {
      if (c <= 0xdbff && i + 1 < end) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          i++;
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          buf[off++] = 0xf0 | (c >>> 18);
          buf[off++] = 0x80 | ((c >>> 12) & 0x3f);
          buf[off++] = 0x80 | ((c >>> 6) & 0x3f);
          buf[off++] = 0x80 | (c & 0x3f);
          continue;
        }
      }
      buf[off++] = 0xef; // U+FFFD
      buf[off++] = 0xbf;
      buf[off++] = 0xbd;
    } else {
      buf[off++] = 0xe0 | (c >>> 12);
      buf[off++] = 0x80 | ((c >>> 6) & 0x3f);
      buf[off++] = 0x80 | (c & 0x3f);
    }
  }
  return off;
}

/**
 * Writes the hashing form of one component into `scratch` at `off` (scratch must have room).
 * `stringTerminator` is 0xFF for V2, 0x00 for V1; `maxChars` truncates strings (V1 only).
 */
function writeForHashing(v: unknown, off: number, stringTerminator: number, maxChars: number): number {
  switch (typeof v) {
    case "string": {
      const end = Math.min(v.length, maxChars);
      ensureScratch(off + 3 * end + 2);
      scratch[off++] = PREFIX_STRING;
      off = writeUtf8(v, end, scratch, off);
      scratch[off++] = stringTerminator;
      return off;
    }
    case "number":
      ensureScratch(off + 9);
      scratch[off++] = PREFIX_NUMBER;
      scratchView.setFloat64(off, v, true);
      return off + 8;
    case "boolean":
      ensureScratch(off + 1);
      scratch[off++] = v ? PREFIX_TRUE : PREFIX_FALSE;
      return off;
    case "object":
    case "undefined":
      ensureScratch(off + 1);
      scratch[off++] = v === null ? PREFIX_NULL : PREFIX_UNDEFINED;
      return off;
    default:
      throw new TypeError(`Unsupported partition key component type: ${typeof v}`);
  }
}

// ---------------------------------------------------------------------------------------------
// MurmurHash3 x86_32
// ---------------------------------------------------------------------------------------------

function murmur3x86_32(b: Uint8Array, len: number): number {
  const blocks = len & ~3;
  let h = 0;
  let k = 0;
  for (let i = 0; i < blocks; i += 4) {
    k = b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const rem = len & 3;
  if (rem > 0) {
    k = 0;
    if (rem === 3) k ^= b[blocks + 2] << 16;
    if (rem >= 2) k ^= b[blocks + 1] << 8;
    k ^= b[blocks];
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
  }
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// ---------------------------------------------------------------------------------------------
// MurmurHash3 x64_128 on (hi, lo) uint32 pairs
// ---------------------------------------------------------------------------------------------

// 64-bit "registers" returned by mul64 (hi, lo), kept as int32/uint32 numbers.
let rH = 0;
let rL = 0;

/** (aH:aL) * (bH:bL) mod 2^64 -> rH:rL. */
function mul64(aH: number, aL: number, bH: number, bL: number): void {
  const a0 = aL & 0xffff;
  const a1 = aL >>> 16;
  const b0 = bL & 0xffff;
  const b1 = bL >>> 16;
  const mid = a0 * b1 + a1 * b0; // < 2^33
  const low = a0 * b0 + (mid % 65536) * 65536; // < 2^33
  rL = low >>> 0;
  rH =
    (a1 * b1 +
      Math.floor(mid / 65536) +
      Math.floor(low / 4294967296) +
      Math.imul(aL, bH) +
      Math.imul(aH, bL)) |
    0;
}

const C1H = 0x87c37b91;
const C1L = 0x114253d5;
const C2H = 0x4cf5ad43;
const C2L = 0x2745937f;

// Final 128-bit hash words.
let h1H = 0;
let h1L = 0;
let h2H = 0;
let h2L = 0;

function fmix64(hH: number, hL: number): void {
  hL ^= hH >>> 1;
  mul64(hH, hL, 0xff51afd7, 0xed558ccd);
  hH = rH;
  hL = rL ^ (rH >>> 1);
  mul64(hH, hL, 0xc4ceb9fe, 0x1a85ec53);
  rL = rL ^ (rH >>> 1);
}

/** Adds (bH:bL) to (aH:aL); result in rH:rL. */
function add64(aH: number, aL: number, bH: number, bL: number): void {
  const lo = (aL >>> 0) + (bL >>> 0);
  rL = lo >>> 0;
  rH = (aH + bH + (lo > 0xffffffff ? 1 : 0)) | 0;
}

function murmur3x64_128(b: Uint8Array, len: number): void {
  let aH = 0; // h1
  let aL = 0;
  let cH = 0; // h2
  let cL = 0;
  let kH: number;
  let kL: number;
  let t: number;
  const blocks = len & ~15;
  for (let i = 0; i < blocks; i += 16) {
    kL = b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24);
    kH = b[i + 4] | (b[i + 5] << 8) | (b[i + 6] << 16) | (b[i + 7] << 24);
    // k1 *= c1; k1 = rotl(k1, 31); k1 *= c2; h1 ^= k1
    mul64(kH, kL, C1H, C1L);
    t = (rH << 31) | (rL >>> 1);
    kL = (rL << 31) | (rH >>> 1);
    kH = t;
    mul64(kH, kL, C2H, C2L);
    aH ^= rH;
    aL ^= rL;
    // h1 = rotl(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729
    t = (aH << 27) | (aL >>> 5);
    aL = (aL << 27) | (aH >>> 5);
    aH = t;
    add64(aH, aL, cH, cL);
    mul64(rH, rL, 0, 5);
    add64(rH, rL, 0, 0x52dce729);
    aH = rH;
    aL = rL;

    kL = b[i + 8] | (b[i + 9] << 8) | (b[i + 10] << 16) | (b[i + 11] << 24);
    kH = b[i + 12] | (b[i + 13] << 8) | (b[i + 14] << 16) | (b[i + 15] << 24);
    // k2 *= c2; k2 = rotl(k2, 33); k2 *= c1; h2 ^= k2
    mul64(kH, kL, C2H, C2L);
    t = (rL << 1) | (rH >>> 31);
    kL = (rH << 1) | (rL >>> 31);
    kH = t;
    mul64(kH, kL, C1H, C1L);
    cH ^= rH;
    cL ^= rL;
    // h2 = rotl(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5
    t = (cH << 31) | (cL >>> 1);
    cL = (cL << 31) | (cH >>> 1);
    cH = t;
    add64(cH, cL, aH, aL);
    mul64(rH, rL, 0, 5);
    add64(rH, rL, 0, 0x38495ab5);
    cH = rH;
    cL = rL;
  }

  const rem = len & 15;
  if (rem > 8) {
    let hi = 0;
    let lo = 0;
    for (let j = rem - 1; j >= 8; j--) {
      const byte = b[blocks + j];
      if (j >= 12) hi |= byte << ((j - 12) * 8);
      else lo |= byte << ((j - 8) * 8);
    }
    mul64(hi, lo, C2H, C2L);
    t = (rL << 1) | (rH >>> 31);
    kL = (rH << 1) | (rL >>> 31);
    kH = t;
    mul64(kH, kL, C1H, C1L);
    cH ^= rH;
    cL ^= rL;
  }
  if (rem > 0) {
    let hi = 0;
    let lo = 0;
    const top = Math.min(rem, 8);
    for (let j = top - 1; j >= 0; j--) {
      const byte = b[blocks + j];
      if (j >= 4) hi |= byte << ((j - 4) * 8);
      else lo |= byte << (j * 8);
    }
    mul64(hi, lo, C1H, C1L);
    t = (rH << 31) | (rL >>> 1);
    kL = (rL << 31) | (rH >>> 1);
    kH = t;
    mul64(kH, kL, C2H, C2L);
    aH ^= rH;
    aL ^= rL;
  }

  aL ^= len;
  cL ^= len;
  add64(aH, aL, cH, cL);
  aH = rH;
  aL = rL;
  add64(cH, cL, aH, aL);
  cH = rH;
  cL = rL;
  fmix64(aH, aL);
  aH = rH;
  aL = rL;
  fmix64(cH, cL);
  cH = rH;
  cL = rL;
  add64(aH, aL, cH, cL);
  aH = rH;
  aL = rL;
  add64(cH, cL, aH, aL);
  h1H = aH >>> 0;
  h1L = aL >>> 0;
  h2H = rH >>> 0;
  h2L = rL >>> 0;
}

function hex32(x: number): string {
  return HEX[x >>> 24] + HEX[(x >>> 16) & 0xff] + HEX[(x >>> 8) & 0xff] + HEX[x & 0xff];
}

/** V2 EPK of the bytes scratch[0..len): reverse(LE(h1)||LE(h2)) = BE(h2)||BE(h1), byte0 &= 0x3F. */
function v2HexOfScratch(len: number): string {
  murmur3x64_128(scratch, len);
  return hex32(h2H & 0x3fffffff) + hex32(h2L) + hex32(h1H) + hex32(h1L);
}

// ---------------------------------------------------------------------------------------------
// V1 binary encodings
// ---------------------------------------------------------------------------------------------

/**
 * Order-preserving binary encoding of a double (0x05, first byte, then 7-bit groups with a continuation
 * bit). Like the JS SDK, a final group that is 0x00 is omitted (the .NET service writes it).
 */
function writeNumberForBinaryEncoding(value: number, out: Uint8Array, off: number): number {
  f64.setFloat64(0, value, false);
  let hi = f64.getUint32(0, false);
  let lo = f64.getUint32(4, false);
  if (hi < 0x80000000) {
    hi = (hi ^ 0x80000000) >>> 0;
  } else if (lo === 0) {
    hi = -hi >>> 0;
  } else {
    lo = -lo >>> 0;
    hi = ~hi >>> 0;
  }
  out[off++] = PREFIX_NUMBER;
  out[off++] = hi >>> 24;
  hi = ((hi << 8) | (lo >>> 24)) >>> 0;
  lo = (lo << 8) >>> 0;
  let byte = 0;
  let first = true;
  do {
    if (first) first = false;
    else out[off++] = byte;
    byte = (hi >>> 24) | 1;
    hi = ((hi << 7) | (lo >>> 25)) >>> 0;
    lo = (lo << 7) >>> 0;
  } while (hi !== 0 || lo !== 0);
  byte &= 0xfe;
  if (byte !== 0) out[off++] = byte;
  return off;
}

function writeValueForBinaryEncodingV1(v: unknown, out: Uint8Array, off: number): number {
  switch (typeof v) {
    case "string": {
      // The SDK truncates to 100 UTF-16 units *before* its "short string" check, so it always writes every
      // UTF-8 byte (+1) followed by 0x00 (the .NET service caps this at 101 bytes without terminator).
      out[off++] = PREFIX_STRING;
      const start = off;
      off = writeUtf8(v, Math.min(v.length, V1_MAX_STRING_CHARS), out, off);
      for (let i = start; i < off; i++) if (out[i] < 0xff) out[i]++;
      out[off++] = PREFIX_UNDEFINED;
      return off;
    }
    case "number":
      return writeNumberForBinaryEncoding(v, out, off);
    case "boolean":
      out[off++] = v ? PREFIX_TRUE : PREFIX_FALSE;
      return off;
    case "object":
    case "undefined":
      out[off++] = v === null ? PREFIX_NULL : PREFIX_UNDEFINED;
      return off;
    default:
      throw new TypeError(`Unsupported partition key component type: ${typeof v}`);
  }
}

function bytesToHex(b: Uint8Array, len: number): string {
  let s = "";
  for (let i = 0; i < len; i++) s += HEX[b[i]];
  return s;
}

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

type Scheme = 1 | 2 | "multi";

function schemeOf(def: PartitionKeyDefinitionLike): Scheme {
  const kind = def.kind || "Hash";
  if (kind === "MultiHash") return "multi";
  if (kind === "Hash") return def.version === 2 ? 2 : 1;
  throw new Error(`Unsupported partition key kind: ${kind}`);
}

function epkV1(v: unknown): string {
  const len = writeForHashing(v, 0, PREFIX_UNDEFINED, V1_MAX_STRING_CHARS);
  const hash = murmur3x86_32(scratch, len);
  let off = writeNumberForBinaryEncoding(hash, v1Out, 0);
  off = writeValueForBinaryEncodingV1(v, v1Out, off);
  return bytesToHex(v1Out, off);
}

function epkV2(values: readonly unknown[], from: number, to: number): string {
  let off = 0;
  for (let i = from; i < to; i++)
    off = writeForHashing(values[i], off, PREFIX_INFINITY, Number.MAX_SAFE_INTEGER);
  return v2HexOfScratch(off);
}

/** Uppercase hex EPK of a full (or, for MultiHash, prefix) partition key value list. */
export function effectivePartitionKey(
  values: PartitionKeyComponent[],
  def: PartitionKeyDefinitionLike,
): string {
  const scheme = schemeOf(def);
  if (scheme === "multi") {
    if (values.length > def.paths.length) {
      throw new RangeError(
        `Partition key has ${values.length} components but the definition has ${def.paths.length} paths`,
      );
    }
    let s = "";
    for (let i = 0; i < values.length; i++) s += epkV2(values, i, i + 1);
    return s;
  }
  if (values.length > 1) {
    throw new RangeError(`Hash partition key must have a single component, got ${values.length}`);
  }
  // Like the SDK, an empty list hashes as V1 undefined / V2 hash of zero bytes.
  return scheme === 2 ? epkV2(values, 0, values.length) : epkV1(values[0]);
}

/**
 * EPK range [min, max) covered by a MultiHash prefix key (k < paths.length): [concat_k, concat_k + "FF").
 * Returns null for full keys and for non-MultiHash definitions.
 */
export function prefixEpkRange(
  values: PartitionKeyComponent[],
  def: PartitionKeyDefinitionLike,
): { min: string; max: string } | null {
  if (schemeOf(def) !== "multi" || values.length >= def.paths.length) return null;
  const min = effectivePartitionKey(values, def);
  return { min, max: `${min}${EPK_MAX}` };
}

/** "05" + order-preserving encoding of a (hash) number, uppercase hex. */
function v1NumberHex(n: number): string {
  return bytesToHex(v1Out, writeNumberForBinaryEncoding(n, v1Out, 0));
}

/** Trims trailing "00" bytes (keeps at least one byte). */
function trimZeroBytes(s: string): string {
  let end = s.length;
  while (end > 2 && s.charCodeAt(end - 1) === 48 && s.charCodeAt(end - 2) === 48) end -= 2;
  return s.slice(0, end);
}

/**
 * Initial range boundaries (uppercase hex) for n physical ranges: n-1 inner boundaries, ascending.
 * V1: numberEncoding(i * floor(2^32 / n)) like the service (e.g. n=5: 05C1C9CD673398, 05C1D9CD673398,
 * 05C1E399CD6732, 05C1E9CD673398). V2/MultiHash: even split of the used space [00, 40) on the leading
 * 32 bits, trailing zero bytes trimmed (n=4: 10, 20, 30).
 */
export function initialBoundaries(n: number, def: PartitionKeyDefinitionLike): string[] {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`Range count must be a positive integer: ${n}`);
  const scheme = schemeOf(def);
  const out: string[] = [];
  if (scheme === 1) {
    if (n > 2 ** 32) throw new RangeError(`Too many ranges: ${n}`);
    const step = Math.floor(2 ** 32 / n);
    for (let i = 1; i < n; i++) out.push(v1NumberHex(i * step));
  } else {
    if (n > 2 ** 30) throw new RangeError(`Too many ranges: ${n}`);
    for (let i = 1; i < n; i++) {
      out.push(trimZeroBytes(hex32(Math.floor((i * 2 ** 30) / n))));
    }
  }
  return out;
}

/**
 * Decodes the leading V1 hash number of an EPK/boundary ("05" + number encoding), or NaN if `s` does not
 * start with a well-formed encoding.
 */
function decodeV1Hash(s: string): number {
  if (s.length < 4 || !s.startsWith("05")) return Number.NaN;
  const first = Number.parseInt(s.slice(2, 4), 16);
  if (Number.isNaN(first)) return Number.NaN;
  let hi = first * 2 ** 24;
  let lo = 0;
  // Remaining 56 bits come in 7-bit groups; group g occupies payload bits [49 - 7g, 55 - 7g].
  for (let g = 0, p = 4; g < 8 && p + 2 <= s.length; g++, p += 2) {
    const byte = Number.parseInt(s.slice(p, p + 2), 16);
    if (Number.isNaN(byte)) return Number.NaN;
    const bits = byte >>> 1;
    const shift = 49 - 7 * g; // position of the group's lowest bit in the 64-bit payload
    for (let k = 0; k < 7; k++) {
      if ((bits >>> k) & 1) {
        const pos = shift + k;
        if (pos >= 32) hi += 2 ** (pos - 32);
        else if (pos >= 0) lo += 2 ** pos;
      }
    }
    if ((byte & 1) === 0) break;
  }
  // Undo the sign transform: encoded >= 2^63 -> raw = enc ^ 2^63, else raw = 2^64 - enc.
  if (hi >= 0x80000000) {
    hi -= 0x80000000;
  } else if (lo === 0) {
    hi = (2 ** 32 - hi) % 2 ** 32;
  } else {
    lo = 2 ** 32 - lo;
    hi = 2 ** 32 - 1 - hi;
  }
  f64.setUint32(0, hi, false);
  f64.setUint32(4, lo, false);
  return f64.getFloat64(0, false);
}

/** A hex string strictly between lo and hi (lo < hi), at >= minLen chars of precision, trailing zeros trimmed. */
function hexMidpoint(lo: string, hi: string, minLen: number): string {
  let len = Math.max(lo.length, hi.length, minLen, 2);
  if (len % 2) len++;
  for (; len <= 4096; len += 2) {
    const a = BigInt(`0x${lo.padEnd(len, "0")}`);
    const b = BigInt(`0x${hi.padEnd(len, "0")}`);
    if (b - a >= 2n) {
      const mid = ((a + b) / 2n).toString(16).toUpperCase().padStart(len, "0");
      const trimmed = trimZeroBytes(mid);
      return trimmed > lo ? trimmed : mid;
    }
    if (b <= a) break;
  }
  throw new RangeError(`No split point between "${lo}" and "${hi}"`);
}

/**
 * A boundary strictly between min and max ("" = -inf, "FF" = +inf) for splitting a live range so that
 * both halves are non-empty key spaces. V1 splits in hash space (the "05"-prefixed hash numbers); V2 and
 * MultiHash split the used space [00, 40) numerically at >= 128-bit precision.
 */
export function splitPoint(min: string, max: string, def: PartitionKeyDefinitionLike): string {
  if (!(min < max)) throw new RangeError(`Invalid range ["${min}", "${max}")`);
  const scheme = schemeOf(def);
  if (scheme === 1) {
    const lo = min === EPK_MIN ? 0 : decodeV1Hash(min);
    const hi = max === EPK_MAX ? 2 ** 32 : decodeV1Hash(max);
    if (lo >= 0 && hi <= 2 ** 32 && hi - lo >= 2) {
      const mid = Math.floor((lo + hi) / 2);
      if (mid > lo && mid < hi) {
        const candidate = v1NumberHex(mid);
        if (candidate > min && candidate < max) return candidate;
      }
    }
    // Not a hash-aligned range: split the byte space; V1 EPKs all lie in ["05", "06").
    const effLo = min < "05" ? "05" : min;
    const effHi = max > "06" ? "06" : max;
    return hexMidpoint(effLo < effHi ? effLo : min, effLo < effHi ? effHi : max, 16);
  }
  // V2 hashes (each MultiHash component too) lie in [00.., 40..).
  const effLo = min === EPK_MIN ? "00" : min;
  const effHi = max > "40" && effLo < "40" ? "40" : max;
  const mid = hexMidpoint(effLo, effHi, 32);
  if (mid > min && mid < max) return mid;
  return hexMidpoint(min, max, 32);
}
