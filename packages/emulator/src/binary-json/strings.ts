/**
 * The string encodings of Cosmos binary JSON, as the .NET SDK writes and reads them
 * (Azure/azure-cosmos-dotnet-v3 Microsoft.Azure.Cosmos/src/Json/JsonBinaryEncoding.Strings.cs, .Chars.cs and
 * .SystemStrings.cs): the 32 system strings, length-prefixed UTF-8, GUIDs packed into 16 bytes, strings packed into
 * 4–7 bits per character, base64 text stored as its bytes, and references to a string earlier in the buffer.
 */
import { type BinaryJsonCursor, Marker } from "./cursor.js";

/** JsonBinaryEncoding.SystemStrings.Strings: markers 0x20–0x3F name these without spelling them. */
export const SYSTEM_STRINGS: readonly string[] = [
  "$s",
  "$t",
  "$v",
  "_attachments",
  "_etag",
  "_rid",
  "_self",
  "_ts",
  "attachments/",
  "coordinates",
  "geometry",
  "GeometryCollection",
  "id",
  "url",
  "Value",
  "label",
  "LineString",
  "link",
  "MultiLineString",
  "MultiPoint",
  "MultiPolygon",
  "name",
  "Name",
  "Type",
  "Point",
  "Polygon",
  "properties",
  "type",
  "value",
  "Feature",
  "FeatureCollection",
  "_id",
];

/** The 16 characters of the 4-bit character sets (StringCompressionLookupTables), by marker. */
const FOUR_BIT_SETS: Record<number, string> = {
  [Marker.CompressedLowercaseHex]: "0123456789abcdef",
  [Marker.CompressedUppercaseHex]: "0123456789ABCDEF",
  [Marker.CompressedDateTime]: " 0123456789:-.TZ",
};

// ignoreBOM: a string that starts with U+FEFF keeps it (by default TextDecoder drops a leading BOM).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Whether a marker starts a string (field names are strings too). */
export function isStringMarker(m: number): boolean {
  return (m >= 0x20 && m < 0x68) || (m >= 0x71 && m <= Marker.StrR4);
}

/**
 * Reads the string token at the cursor. `references` is false while resolving a reference: its target must be a
 * string spelled out in the buffer, never another reference (so a chain or a cycle cannot exist).
 */
export function readString(c: BinaryJsonCursor, references = true): string {
  const start = c.pos;
  const m = c.u8();
  if (m >= 0x20 && m < 0x40) return c.counted(SYSTEM_STRINGS[m - 0x20]);
  if (m >= 0x40 && m < 0x68) {
    throw c.fail(
      `a user-dictionary string (marker 0x${hex(m)}), which needs a string dictionary the request does not carry`,
      start,
    );
  }
  if (m >= 0x80 && m < 0xc0) return text(c, m - 0x80);
  switch (m) {
    case Marker.StrL1:
      return text(c, c.u8());
    case Marker.StrL2:
      return text(c, c.u16());
    case Marker.StrL4:
      return text(c, c.u32());
    case Marker.StrR1:
    case Marker.StrR2:
    case Marker.StrR3:
    case Marker.StrR4: {
      const offset =
        m === Marker.StrR1 ? c.u8() : m === Marker.StrR2 ? c.u16() : m === Marker.StrR3 ? c.u24() : c.u32();
      if (!references) throw c.fail("a string reference that points at another reference", start);
      if (offset >= c.length || !isStringMarker(c.peekAt(offset)) || c.peekAt(offset) >= Marker.StrR1) {
        throw c.fail(`a string reference to offset ${offset}, where no string is`, start);
      }
      return readString(c.at(offset), false);
    }
    case Marker.LowercaseGuid:
    case Marker.UppercaseGuid:
    case Marker.QuotedLowercaseGuid: {
      const g = guidText(c.bytes(16), m === Marker.UppercaseGuid);
      return c.counted(m === Marker.QuotedLowercaseGuid ? `"${g}"` : g);
    }
    case Marker.CompressedLowercaseHex:
    case Marker.CompressedUppercaseHex:
    case Marker.CompressedDateTime:
      return fourBitSet(c, FOUR_BIT_SETS[m], start);
    case Marker.Packed4Bit:
    case Marker.Packed5Bit:
    case Marker.Packed6Bit: {
      const length = c.u8();
      const base = c.u8();
      return packed(c, length, 4 + m - Marker.Packed4Bit, base, start);
    }
    case Marker.Packed7BitL1:
      return packed(c, c.u8(), 7, 0, start);
    case Marker.Packed7BitL2:
      return packed(c, c.u16(), 7, 0, start);
    case Marker.Base64L1:
    case Marker.Base64UrlL1:
    case Marker.Base64L2:
    case Marker.Base64UrlL2:
      return base64Text(c, m, start);
    default:
      throw c.fail(`marker 0x${hex(m)} where a string must be`, start);
  }
}

/** `length` bytes of UTF-8 (the service refuses malformed UTF-8 rather than replace it). */
function text(c: BinaryJsonCursor, length: number): string {
  const start = c.pos;
  const bytes = c.bytes(length);
  let s: string;
  try {
    s = utf8.decode(bytes);
  } catch {
    throw c.fail("a string that is not valid UTF-8", start);
  }
  return c.counted(s);
}

/** 16 bytes, two hex digits each (the first in the low nibble), dashed as 8-4-4-4-12 (DecodeGuidStringValue). */
export function guidText(bytes: Uint8Array, upper: boolean): string {
  const digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  let out = "";
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out += "-";
    out += digits[bytes[i] & 0x0f] + digits[bytes[i] >> 4];
  }
  return out;
}

/** A length, then two characters of a 16-character set per byte, the first in the low nibble. */
function fourBitSet(c: BinaryJsonCursor, set: string, start: number): string {
  const length = c.u8();
  const bytes = c.bytes(Math.ceil(length / 2));
  let out = "";
  for (let i = 0; i < length; i++) out += set[i % 2 === 0 ? bytes[i >> 1] & 0x0f : bytes[i >> 1] >> 4];
  // The SDK's reader refuses an odd-length string whose last byte has its unused high nibble set.
  if (length % 2 === 1 && bytes[bytes.length - 1] >> 4 !== 0) {
    throw c.fail("a 4-bit packed string with bits set past its end", start);
  }
  return c.counted(out);
}

/** `length` characters of `bits` bits each, least significant first, each added to `base` (DecodeCompressedStringValue). */
function packed(c: BinaryJsonCursor, length: number, bits: number, base: number, start: number): string {
  const bytes = c.bytes(Math.ceil((length * bits) / 8));
  const chars = new Uint8Array(length);
  const mask = (1 << bits) - 1;
  for (let i = 0; i < length; i++) {
    const bit = i * bits;
    const word = bytes[bit >> 3] | ((bytes[(bit >> 3) + 1] ?? 0) << 8);
    const value = ((word >> (bit & 7)) & mask) + base;
    if (value > 0x7f) throw c.fail("a packed string with a character beyond ASCII", start);
    chars[i] = value;
  }
  return c.counted(Buffer.from(chars).toString("latin1"));
}

/**
 * Base64 text stored as the bytes it encodes: a length in 4-character groups, a padding byte (0–2 '=' written, or
 * the bitwise NOT of the count when the text left its padding out), then the bytes (ConvertBytesToBase64String).
 */
function base64Text(c: BinaryJsonCursor, m: number, start: number): string {
  const groups = m === Marker.Base64L1 || m === Marker.Base64UrlL1 ? c.u8() : c.u16();
  const paddingByte = c.u8();
  const omitted = paddingByte > 2;
  const padding = omitted ? ~paddingByte & 0xff : paddingByte;
  if (padding > 2 || (groups === 0 && padding > 0))
    throw c.fail("a base64 string with an impossible padding", start);
  const bytes = c.bytes(((groups * 4 - padding) * 3) >> 2);
  let out = Buffer.from(bytes).toString("base64");
  if (out.length !== groups * 4) throw c.fail("a base64 string whose length does not match its bytes", start);
  if (omitted) out = out.slice(0, out.length - padding);
  if (m === Marker.Base64UrlL1 || m === Marker.Base64UrlL2) out = out.replace(/\+/g, "-").replace(/\//g, "_");
  return c.counted(out);
}

export function hex(m: number): string {
  return m.toString(16).padStart(2, "0");
}
