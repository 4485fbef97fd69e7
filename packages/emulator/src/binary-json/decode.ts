/**
 * A decoder of Cosmos binary JSON — the encoding the .NET SDK sends item bodies in when
 * AZURE_COSMOS_BINARY_ENCODING_ENABLED is true (Azure/azure-cosmos-dotnet-v3 Microsoft.Azure.Cosmos/src/Json:
 * JsonBinaryEncoding*.cs, JsonWriter.JsonBinaryWriter.cs, JsonReader.JsonBinaryReader.cs) — into the value
 * JSON.parse would give for the same document. A body is the format byte 0x80, then one value.
 *
 * Values outside JSON read as the SDK's own reader (CosmosDBToNewtonsoftReader) reads them: the fixed-width
 * integers and floats (a .NET `short` property is written as one) as numbers, a GUID as its string, binary as its
 * base64 string. What has no JSON form is refused: NaN and infinities, half-precision floats (the SDK's reader has
 * none), user-dictionary strings (no dictionary travels with a request).
 *
 * Design limits, each a BinaryJsonError with the offset (the caller answers 400): nesting deeper than
 * `maxDepth`, a body or container that ends before its value does, a container whose count does not match its
 * items, bytes after the value, unknown markers. Strings may decode to at most `maxChars` characters in all
 * (references and packing make output larger than input; the caller answers 413 past it).
 */
import { BinaryJsonCursor, BinaryJsonError, Marker } from "./cursor.js";
import { hex, isStringMarker, readString } from "./strings.js";

export { BinaryJsonError };

/** First byte of a body in Cosmos binary JSON (JsonSerializationFormat.Binary = 128). */
export const BINARY_FORMAT_MARKER = 0x80;

export interface BinaryJsonLimits {
  /** Arrays and objects nested in each other, at most. */
  maxDepth: number;
  /** Characters of all decoded strings (names and values) together, at most. */
  maxChars: number;
}

export function isCosmosBinary(body: Uint8Array): boolean {
  return body.length > 0 && body[0] === BINARY_FORMAT_MARKER;
}

export function decodeCosmosBinary(body: Uint8Array, limits: BinaryJsonLimits): unknown {
  if (!isCosmosBinary(body)) throw new BinaryJsonError("the body does not start with 0x80", 0);
  const c = new BinaryJsonCursor(body, 1, body.length, { chars: 0, maxChars: limits.maxChars });
  const value = readValue(c, 0, limits.maxDepth);
  if (c.pos !== body.length) throw c.fail(`${body.length - c.pos} byte(s) after the value`);
  return value;
}

function readValue(c: BinaryJsonCursor, depth: number, maxDepth: number): unknown {
  if (c.pos >= c.end) c.bytes(1); // throws: the body or container ended where a value must be
  const m = c.peekAt(c.pos);
  if (m < 0x20) {
    c.pos++;
    return m;
  }
  if (isStringMarker(m)) return readString(c);
  if (m >= Marker.Arr0 && m <= Marker.ObjLC4) return readContainer(c, depth + 1, maxDepth);
  if (m >= Marker.ArrNumC1 && m <= Marker.ArrArrNumC2C2) return readUniformArray(c, depth, maxDepth);
  const start = c.pos++;
  switch (m) {
    case Marker.NumberUInt64:
      return Number(c.view(8).getBigUint64(0, true));
    case Marker.NumberUInt8:
    case Marker.UInt8:
      return c.u8();
    case Marker.Int8:
      return c.view(1).getInt8(0);
    case Marker.NumberInt16:
    case Marker.Int16:
      return c.view(2).getInt16(0, true);
    case Marker.NumberInt32:
    case Marker.Int32:
      return c.view(4).getInt32(0, true);
    case Marker.UInt32:
      return c.u32();
    case Marker.NumberInt64:
    case Marker.Int64:
      return Number(c.view(8).getBigInt64(0, true));
    case Marker.NumberDouble:
    case Marker.Float64:
      return finite(c, c.view(8).getFloat64(0, true), start);
    case Marker.Float32:
      return finite(c, c.view(4).getFloat32(0, true), start);
    case Marker.Null:
      return null;
    case Marker.False:
      return false;
    case Marker.True:
      return true;
    case Marker.Guid:
      return c.counted(dotnetGuid(c.bytes(16)));
    case Marker.Binary1:
    case Marker.Binary2:
    case Marker.Binary4: {
      const n = m === Marker.Binary1 ? c.u8() : m === Marker.Binary2 ? c.u16() : c.u32();
      return c.counted(Buffer.from(c.bytes(n)).toString("base64"));
    }
    case Marker.Float16:
      throw c.fail(
        "a half-precision float (marker 0xcf), which the SDK's reader does not read either",
        start,
      );
    default:
      throw c.fail(`unknown type marker 0x${hex(m)}`, start);
  }
}

function finite(c: BinaryJsonCursor, n: number, start: number): number {
  if (!Number.isFinite(n)) throw c.fail(`the number ${n}, which JSON cannot carry`, start);
  return n;
}

/** A .NET Guid's 16 bytes (Guid.ToByteArray order: the first three groups little-endian) as its "D" string. */
function dotnetGuid(b: Uint8Array): string {
  const order = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
  const h = order.map((i) => hex(b[i])).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Arrays 0xE0–0xE7 and objects 0xE8–0xEF: empty, one item, or a byte length (and for LC forms a count). */
function readContainer(c: BinaryJsonCursor, depth: number, maxDepth: number): unknown {
  const start = c.pos;
  const m = c.u8();
  if (depth > maxDepth) throw c.fail(`arrays and objects nested more than ${maxDepth} deep`, start);
  const isArray = m < Marker.Obj0;
  const form = m - (isArray ? Marker.Arr0 : Marker.Obj0);
  if (form === 0) return isArray ? [] : {};
  if (form === 1) {
    if (isArray) return [readValue(c, depth, maxDepth)];
    const one: Record<string, unknown> = {};
    readProperty(c, one, depth, maxDepth);
    return one;
  }
  const width = form === 2 || form === 5 ? 1 : form === 3 || form === 6 ? 2 : 4;
  const field = (): number => (width === 1 ? c.u8() : width === 2 ? c.u16() : c.u32());
  const length = field();
  const count = form >= 5 ? field() : undefined;
  if (length > c.end - c.pos) c.bytes(length); // throws: the payload runs past the body or the outer container
  const outerEnd = c.end;
  c.end = c.pos + length;
  let items = 0;
  const out: unknown[] | Record<string, unknown> = isArray ? [] : {};
  while (c.pos < c.end) {
    if (Array.isArray(out)) out.push(readValue(c, depth, maxDepth));
    else readProperty(c, out, depth, maxDepth);
    items++;
  }
  c.end = outerEnd;
  if (count !== undefined && count !== items) {
    throw c.fail(
      `an ${isArray ? "array" : "object"} that says it holds ${count} items but holds ${items}`,
      start,
    );
  }
  return out;
}

function readProperty(
  c: BinaryJsonCursor,
  into: Record<string, unknown>,
  depth: number,
  maxDepth: number,
): void {
  if (c.pos >= c.end) c.bytes(1);
  if (!isStringMarker(c.peekAt(c.pos))) throw c.fail("a property name that is not a string");
  const name = readString(c);
  const value = readValue(c, depth, maxDepth);
  // As JSON.parse does: "__proto__" is an own property, never the object's prototype.
  if (name === "__proto__") {
    Object.defineProperty(into, name, { value, writable: true, enumerable: true, configurable: true });
  } else into[name] = value;
}

/** Item type markers of uniform number arrays, with their sizes (ValueLengths.GetUniformNumberArrayItemSize). */
const UNIFORM_ITEM_SIZES: Record<number, number> = {
  [Marker.UInt8]: 1,
  [Marker.Int8]: 1,
  [Marker.Int16]: 2,
  [Marker.Int32]: 4,
  [Marker.Int64]: 8,
  [Marker.Float32]: 4,
  [Marker.Float64]: 8,
};

/**
 * Uniform number arrays (JsonBinaryEncoding.UniformArrays.cs): 0xF0/0xF1 `[item marker][count]` then the items'
 * bare values; 0xF2/0xF3 an array of such arrays, `[0xF0|0xF1][item marker][item count][array count]`.
 */
function readUniformArray(c: BinaryJsonCursor, depth: number, maxDepth: number): unknown[] {
  const start = c.pos;
  const m = c.u8();
  const nested = m === Marker.ArrArrNumC1C1 || m === Marker.ArrArrNumC2C2;
  if (depth + (nested ? 2 : 1) > maxDepth)
    throw c.fail(`arrays and objects nested more than ${maxDepth} deep`, start);
  const wide = m === Marker.ArrNumC2 || m === Marker.ArrArrNumC2C2;
  if (nested && c.u8() !== (wide ? Marker.ArrNumC2 : Marker.ArrNumC1)) {
    throw c.fail("an array of number arrays whose inner marker does not match", start);
  }
  const itemMarker = c.u8();
  const size = UNIFORM_ITEM_SIZES[itemMarker];
  if (size === undefined) throw c.fail(`a uniform number array of marker 0x${hex(itemMarker)}`, start);
  const itemCount = wide ? c.u16() : c.u8();
  const arrayCount = nested ? (wide ? c.u16() : c.u8()) : 1;
  const rows: unknown[][] = [];
  for (let r = 0; r < arrayCount; r++) {
    const view = c.view(size * itemCount);
    const row: number[] = [];
    for (let i = 0; i < itemCount; i++) row.push(uniformItem(c, view, itemMarker, i * size, start));
    rows.push(row);
  }
  return nested ? rows : rows[0];
}

function uniformItem(c: BinaryJsonCursor, v: DataView, marker: number, at: number, start: number): number {
  switch (marker) {
    case Marker.UInt8:
      return v.getUint8(at);
    case Marker.Int8:
      return v.getInt8(at);
    case Marker.Int16:
      return v.getInt16(at, true);
    case Marker.Int32:
      return v.getInt32(at, true);
    case Marker.Int64:
      return Number(v.getBigInt64(at, true));
    case Marker.Float32:
      return finite(c, v.getFloat32(at, true), start);
    default:
      return finite(c, v.getFloat64(at, true), start);
  }
}
