/**
 * The emulator's request-unit model. It is a documented approximation of the service
 * (docs/emulator.md#request-units), stable so that tests and the lease-interval tuner can reason about it:
 * every figure below is in RU.
 */
export const RuModel = {
  /** Point read: per started KiB of the document, at least 1. */
  pointReadPerKiB: 1,
  /** Create / replace / upsert / delete: base cost per started KiB of the document written. */
  writePerKiB: 5,
  /** Extra per indexed leaf property (zero when the container's indexingMode is "none"). */
  writePerIndexedPath: 0.1,
  /** Patch adds a read of the current document to the write. */
  patchReadSurcharge: 1,
  /** Query: fixed cost, plus per document read (scanned), plus per started KiB returned. */
  queryBase: 2.3,
  queryPerDocumentRead: 0.05,
  queryPerKiBReturned: 1,
  /** Change feed page with changes: fixed cost plus per document returned. */
  changeFeedBase: 2,
  changeFeedPerDocument: 0.5,
  /** Change feed poll that finds nothing (304). */
  changeFeedEmpty: 1,
  /** A data-plane request that failed (404, 409, 412, 400 …) after being admitted. */
  failedRequest: 1,
  /** Metadata reads (account, databases, containers, partition key ranges); never throttled. */
  metadata: 1,
} as const;

const KiB = 1024;
const round2 = (n: number): number => Math.round(n * 100) / 100;
const startedKiB = (bytes: number): number => Math.max(1, Math.ceil(bytes / KiB));

/** Number of leaf (scalar) properties of a JSON value, the paths a consistent index writes. */
export function countLeafPaths(value: unknown, limit = 10_000): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count < limit) {
    const v = stack.pop();
    if (v !== null && typeof v === "object") {
      for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push(child);
    } else {
      count++;
    }
  }
  return count;
}

export function pointReadCharge(bytes: number): number {
  return startedKiB(bytes) * RuModel.pointReadPerKiB;
}

export function writeCharge(bytes: number, indexedPaths: number): number {
  return round2(startedKiB(bytes) * RuModel.writePerKiB + indexedPaths * RuModel.writePerIndexedPath);
}

export function patchCharge(bytes: number, indexedPaths: number): number {
  return round2(writeCharge(bytes, indexedPaths) + RuModel.patchReadSurcharge);
}

export function queryCharge(documentsRead: number, bytesReturned: number): number {
  const returnedKiB = bytesReturned === 0 ? 0 : Math.ceil(bytesReturned / KiB);
  return round2(
    RuModel.queryBase +
      documentsRead * RuModel.queryPerDocumentRead +
      returnedKiB * RuModel.queryPerKiBReturned,
  );
}

export function changeFeedCharge(documentsReturned: number): number {
  if (documentsReturned === 0) return RuModel.changeFeedEmpty;
  return round2(RuModel.changeFeedBase + documentsReturned * RuModel.changeFeedPerDocument);
}
