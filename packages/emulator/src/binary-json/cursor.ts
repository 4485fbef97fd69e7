/**
 * Reading Cosmos binary JSON byte by byte: the type markers (Azure/azure-cosmos-dotnet-v3
 * Microsoft.Azure.Cosmos/src/Json/JsonBinaryEncoding.TypeMarker.cs), little-endian fixed-width fields, and the
 * decoder's budget. Every read is bounds-checked: a truncated body is a clear error, never an exception from
 * outside the decoder.
 */

/** The type markers the decoder reads by name (the full table is in JsonBinaryEncoding.TypeMarker.cs). */
export const Marker = {
  Base64L1: 0x71,
  Base64L2: 0x72,
  Base64UrlL1: 0x73,
  Base64UrlL2: 0x74,
  LowercaseGuid: 0x75,
  UppercaseGuid: 0x76,
  QuotedLowercaseGuid: 0x77,
  CompressedLowercaseHex: 0x78,
  CompressedUppercaseHex: 0x79,
  CompressedDateTime: 0x7a,
  Packed4Bit: 0x7b,
  Packed5Bit: 0x7c,
  Packed6Bit: 0x7d,
  Packed7BitL1: 0x7e,
  Packed7BitL2: 0x7f,
  StrL1: 0xc0,
  StrL2: 0xc1,
  StrL4: 0xc2,
  StrR1: 0xc3,
  StrR2: 0xc4,
  StrR3: 0xc5,
  StrR4: 0xc6,
  NumberUInt64: 0xc7,
  NumberUInt8: 0xc8,
  NumberInt16: 0xc9,
  NumberInt32: 0xca,
  NumberInt64: 0xcb,
  NumberDouble: 0xcc,
  Float32: 0xcd,
  Float64: 0xce,
  Float16: 0xcf,
  Null: 0xd0,
  False: 0xd1,
  True: 0xd2,
  Guid: 0xd3,
  UInt8: 0xd7,
  Int8: 0xd8,
  Int16: 0xd9,
  Int32: 0xda,
  Int64: 0xdb,
  UInt32: 0xdc,
  Binary1: 0xdd,
  Binary2: 0xde,
  Binary4: 0xdf,
  Arr0: 0xe0,
  Arr1: 0xe1,
  ArrL1: 0xe2,
  ArrL2: 0xe3,
  ArrL4: 0xe4,
  ArrLC1: 0xe5,
  ArrLC2: 0xe6,
  ArrLC4: 0xe7,
  Obj0: 0xe8,
  Obj1: 0xe9,
  ObjL1: 0xea,
  ObjL2: 0xeb,
  ObjL4: 0xec,
  ObjLC1: 0xed,
  ObjLC2: 0xee,
  ObjLC4: 0xef,
  ArrNumC1: 0xf0,
  ArrNumC2: 0xf1,
  ArrArrNumC1C1: 0xf2,
  ArrArrNumC2C2: 0xf3,
} as const;

/** A malformed body: what is wrong and the byte offset where (the caller turns it into a 400). */
export class BinaryJsonError extends Error {
  constructor(
    readonly reason: string,
    readonly offset: number,
    /** The body is well formed as far as read, but decodes to more than the decoder's budget. */
    readonly tooLarge = false,
  ) {
    super(`${reason} at byte ${offset}`);
    this.name = "BinaryJsonError";
  }
}

/** What one decode may produce, shared by every cursor of one body (references jump to another position). */
export interface Budget {
  /** Characters of strings (names and values) decoded so far. */
  chars: number;
  readonly maxChars: number;
}

export class BinaryJsonCursor {
  constructor(
    private readonly buf: Uint8Array,
    public pos: number,
    /** Where the value being read must end (a container's payload end, or the body's end). */
    public end: number,
    readonly budget: Budget,
  ) {}

  get length(): number {
    return this.buf.length;
  }

  /** A cursor at `offset` of the same body (for a string reference), sharing this one's budget. */
  at(offset: number): BinaryJsonCursor {
    return new BinaryJsonCursor(this.buf, offset, this.buf.length, this.budget);
  }

  peekAt(offset: number): number {
    return this.buf[offset];
  }

  fail(reason: string, offset = this.pos): BinaryJsonError {
    return new BinaryJsonError(reason, offset);
  }

  private need(n: number): number {
    if (n > this.end - this.pos) {
      throw this.fail(
        this.end === this.buf.length
          ? `the body ends ${n - (this.end - this.pos)} byte(s) before the value does`
          : "a value runs past the end of its array or object",
      );
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }

  u8(): number {
    return this.buf[this.need(1)];
  }

  u16(): number {
    const at = this.need(2);
    return this.buf[at] | (this.buf[at + 1] << 8);
  }

  u24(): number {
    const at = this.need(3);
    return this.buf[at] | (this.buf[at + 1] << 8) | (this.buf[at + 2] << 16);
  }

  u32(): number {
    return this.view(4).getUint32(0, true);
  }

  /** A little-endian field of `n` bytes as a DataView. */
  view(n: number): DataView {
    const at = this.need(n);
    return new DataView(this.buf.buffer, this.buf.byteOffset + at, n);
  }

  bytes(n: number): Uint8Array {
    const at = this.need(n);
    return this.buf.subarray(at, at + n);
  }

  /** Counts a decoded string against the budget (references and packing make output larger than input). */
  counted(s: string): string {
    this.budget.chars += s.length;
    if (this.budget.chars > this.budget.maxChars) {
      throw new BinaryJsonError(
        `the body decodes to more than ${this.budget.maxChars} characters of strings`,
        this.pos,
        true,
      );
    }
    return s;
  }
}
