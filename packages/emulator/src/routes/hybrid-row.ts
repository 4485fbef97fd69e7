import { crc32 } from "node:zlib";
import { isCosmosBinary } from "../binary-json/decode.js";
import { badRequest } from "../errors.js";
import { parseJsonBody } from "../json.js";

/**
 * Transactional batch and bulk as the .NET SDK sends them: not a JSON array but a HybridRow RecordIO stream
 * (Microsoft.Azure.Cosmos src/Batch: ServerBatchRequest writes it, TransactionalBatchResponse reads the answer the
 * same way and refuses anything else). Only what those two schemas need is implemented here
 * (Batch/HybridRowBatchSchemas.json: BatchOperation 2145473648, BatchResult 2145473649; RecordIO's Segment
 * 2147473648 and Record 2147473649 from HybridRow's SystemSchema.json; the format: microsoft/HybridRow
 * Docs/Grammar.md and Docs/RecordIO.md).
 *
 * A row: version byte 0x81, schema id (int32 LE), then for its schema: one presence bit per nullable fixed and per
 * variable column (in schema order, bit i of byte i / 8), the fixed columns (little-endian), each present variable
 * column as a 7-bit varuint length and its bytes, and then sparse fields to the end of the row: a type code, the
 * path (a varuint token: 1..n for the schema's columns in order, or n + 1 + byte length followed by the UTF-8 path)
 * and the value. A stream: a Segment row (its own length in a nullable fixed int32), then per record a Record row
 * (length and CRC-32 of the body, non-nullable) followed by the body row.
 */

const HYBRID_ROW_V1 = 0x81;
const SEGMENT_SCHEMA = 2147473648;
const RECORD_SCHEMA = 2147473649;
const BATCH_OPERATION_SCHEMA = 2145473648;
const BATCH_RESULT_SCHEMA = 2145473649;

/** Type codes (HybridRow LayoutCode) of the sparse values these schemas use. */
const Code = {
  Null: 1,
  BooleanFalse: 2,
  Boolean: 3,
  Int32: 7,
  UInt32: 11,
  Float64: 16,
  Utf8: 20,
  Binary: 21,
} as const;

/** BatchOperation's columns: paths in schema order (tokens 1..12). */
const OPERATION_PATHS = [
  "operationType",
  "resourceType",
  "partitionKey",
  "effectivePartitionKey",
  "id",
  "binaryId",
  "resourceBody",
  "indexingDirective",
  "ifMatch",
  "ifNoneMatch",
  "timeToLiveInSeconds",
  "minimalReturnPreference",
];
const OPERATION_VARIABLE = ["partitionKey", "effectivePartitionKey", "id", "binaryId", "resourceBody"];

/** Microsoft.Azure.Documents OperationType values a batch may carry. */
const OPERATION_TYPES: Record<number, string> = {
  0: "Create",
  1: "Patch",
  2: "Read",
  4: "Delete",
  5: "Replace",
  20: "Upsert",
};
const DOCUMENT_RESOURCE_TYPE = 2;

/** Whether a batch request body is a HybridRow stream (the .NET SDK) rather than JSON (the other SDKs). */
export function isHybridRowBody(body: Buffer): boolean {
  return body.length > 0 && body[0] === HYBRID_ROW_V1;
}

class Reader {
  constructor(
    private readonly b: Buffer,
    public at: number,
    private readonly end: number,
  ) {}

  need(n: number): void {
    if (this.at + n > this.end) throw malformed("a row ends early");
  }
  u8(): number {
    this.need(1);
    return this.b[this.at++];
  }
  i32(): number {
    this.need(4);
    const v = this.b.readInt32LE(this.at);
    this.at += 4;
    return v;
  }
  varuint(): number {
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = this.u8();
      v += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return v;
    }
    throw malformed("a varuint is too long");
  }
  bytes(n: number): Buffer {
    this.need(n);
    const v = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return v;
  }
  get done(): boolean {
    return this.at >= this.end;
  }
}

const malformed = (why: string) =>
  badRequest(`The batch request is not a valid HybridRow RecordIO stream: ${why}.`);

function header(r: Reader): number {
  if (r.u8() !== HYBRID_ROW_V1) throw malformed("a row is not HybridRow version 1");
  return r.i32() >>> 0;
}

/**
 * The operations of a .NET batch request, as the JSON batch format names them (`operationType`, `id`,
 * `partitionKey`, `resourceBody`, `ifMatch`, `ifNoneMatch`, plus `minimalReturnPreference`), for the same checks.
 */
export function decodeBatchOperations(body: Buffer): Record<string, unknown>[] {
  const ops: Record<string, unknown>[] = [];
  const r = new Reader(body, 0, body.length);
  while (!r.done) {
    const start = r.at;
    const schema = header(r);
    if (schema === SEGMENT_SCHEMA) {
      // Presence byte, then the segment row's own length; its sparse fields (comment, schema) are skipped.
      r.u8();
      const length = r.i32();
      if (length < 10) throw malformed("a segment is shorter than its header");
      r.at = start + length;
      r.need(0);
      continue;
    }
    if (schema !== RECORD_SCHEMA) throw malformed(`a row of schema ${schema} where a record was expected`);
    const length = r.i32();
    const crc = r.i32() >>> 0;
    const row = r.bytes(length);
    if (crc !== 0 && crc32(row) !== crc) throw malformed("a record's CRC-32 does not match its body");
    ops.push(decodeOperation(row));
  }
  return ops;
}

function decodeOperation(row: Buffer): Record<string, unknown> {
  const r = new Reader(row, 0, row.length);
  if (header(r) !== BATCH_OPERATION_SCHEMA) throw malformed("a record is not a BatchOperation");
  const presence = r.u8();
  const present = (bit: number) => (presence & (1 << bit)) !== 0;
  const operationType = r.i32();
  const resourceType = r.i32();
  const op: Record<string, unknown> = {};
  const name = OPERATION_TYPES[operationType];
  op.operationType = present(0) && name ? name : `unknown (${operationType})`;
  if (present(1) && resourceType !== DOCUMENT_RESOURCE_TYPE)
    throw malformed(`resource type ${resourceType} is not Document`);
  const values: Record<string, Buffer> = {};
  OPERATION_VARIABLE.forEach((path, i) => {
    if (present(2 + i)) values[path] = r.bytes(r.varuint());
  });
  while (!r.done) {
    const code = r.u8();
    const token = r.varuint();
    const tokens = OPERATION_PATHS.length + 1;
    const path = token < tokens ? OPERATION_PATHS[token - 1] : r.bytes(token - tokens).toString("utf8");
    switch (code) {
      case Code.Utf8:
        op[path] = r.bytes(r.varuint()).toString("utf8");
        break;
      case Code.Binary:
        values[path] = r.bytes(r.varuint());
        break;
      case Code.Int32:
        op[path] = r.i32();
        break;
      case Code.Boolean:
      case Code.BooleanFalse:
        op[path] = code === Code.Boolean;
        break;
      case Code.Null:
        break;
      default:
        throw malformed(`sparse field '${path}' has type code ${code}`);
    }
  }
  if (values.partitionKey) op.partitionKey = values.partitionKey.toString("utf8");
  if (values.id) op.id = values.id.toString("utf8");
  if (values.resourceBody) {
    // Bulk with AZURE_COSMOS_BINARY_ENCODING_ENABLED: the .NET SDK serializes each item (in Cosmos binary JSON)
    // before the bulk executor packs it into a batch.
    if (isCosmosBinary(values.resourceBody)) op.resourceBody = parseJsonBody(values.resourceBody);
    else {
      try {
        op.resourceBody = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(values.resourceBody));
      } catch {
        throw malformed("an operation's resourceBody is not UTF-8 JSON");
      }
    }
  }
  return op;
}

/** One operation's result as the batch routes produce it. */
export interface HybridRowResult {
  statusCode: number;
  subStatusCode?: number;
  eTag?: string;
  resourceBody?: unknown;
  retryAfterMilliseconds?: number;
  requestCharge: number;
}

function varuint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  do {
    let byte = v % 128;
    v = Math.floor(v / 128);
    if (v > 0) byte |= 0x80;
    out.push(byte);
  } while (v > 0);
  return Buffer.from(out);
}

function rowHeader(schema: number): Buffer {
  const b = Buffer.alloc(5);
  b[0] = HYBRID_ROW_V1;
  b.writeUInt32LE(schema, 1);
  return b;
}

function encodeResult(result: HybridRowResult): Buffer {
  const parts: Buffer[] = [rowHeader(BATCH_RESULT_SCHEMA)];
  const fixed = Buffer.alloc(9);
  const etag = result.eTag === undefined ? undefined : Buffer.from(result.eTag, "utf8");
  const body =
    result.resourceBody === undefined ? undefined : Buffer.from(JSON.stringify(result.resourceBody), "utf8");
  // Presence: statusCode, subStatusCode, eTag, resourceBody.
  fixed[0] = 0b0011 | (etag ? 0b0100 : 0) | (body ? 0b1000 : 0);
  fixed.writeInt32LE(result.statusCode, 1);
  fixed.writeInt32LE(result.subStatusCode ?? 0, 5);
  parts.push(fixed);
  for (const v of [etag, body]) if (v) parts.push(varuint(v.length), v);
  // Sparse: retryAfterMilliseconds (token 5, uint32), requestCharge (token 6, float64).
  if (result.retryAfterMilliseconds !== undefined) {
    const v = Buffer.alloc(6);
    v[0] = Code.UInt32;
    v[1] = 5;
    v.writeUInt32LE(result.retryAfterMilliseconds, 2);
    parts.push(v);
  }
  const charge = Buffer.alloc(10);
  charge[0] = Code.Float64;
  charge[1] = 6;
  charge.writeDoubleLE(result.requestCharge, 2);
  parts.push(charge);
  return Buffer.concat(parts);
}

/** The answer to a .NET batch request: a segment, then one record per operation result. */
export function encodeBatchResults(results: readonly HybridRowResult[]): Buffer {
  const segment = Buffer.alloc(10);
  rowHeader(SEGMENT_SCHEMA).copy(segment, 0);
  segment[5] = 0b1; // length is present
  segment.writeInt32LE(segment.length, 6);
  const parts: Buffer[] = [segment];
  for (const result of results) {
    const body = encodeResult(result);
    const record = Buffer.alloc(13);
    rowHeader(RECORD_SCHEMA).copy(record, 0);
    record.writeInt32LE(body.length, 5);
    record.writeUInt32LE(crc32(body), 9);
    parts.push(record, body);
  }
  return Buffer.concat(parts);
}
