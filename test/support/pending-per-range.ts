import type { Container } from "@azure/cosmos";
import { effectivePartitionKey } from "../../packages/emulator/src/partitioning/epk.js";

/**
 * A known number of pending changes in each physical range of a container (`/pk`, V2 hash), written round-robin
 * across the ranges so that, were LSNs counted for the whole container, every range's LSN gap would take in the
 * other ranges' writes. For the estimator tests (ours and .NET's).
 */

export interface RangeKeys {
  /** The range's id (the lease token of a lease made for it). */
  id: string;
  /** Partition key values that land in this range. */
  keys: string[];
}

/** `perRange` partition key values for every live range of the container, in range order. */
export async function keysPerRange(container: Container, perRange: number): Promise<RangeKeys[]> {
  const ranges = (await container.readPartitionKeyRanges().fetchAll()).resources.sort((a, b) =>
    a.minInclusive < b.minInclusive ? -1 : 1,
  );
  const out = ranges.map((r) => ({ id: r.id, keys: [] as string[] }));
  const def = { paths: ["/pk"], kind: "Hash" as const, version: 2 as const };
  for (let n = 0; out.some((r) => r.keys.length < perRange); n++) {
    if (n > 1_000_000) throw new Error("no partition key values found for every range");
    const pk = `k${n}`;
    const epk = effectivePartitionKey([pk], def);
    const i = ranges.findIndex(
      (r) => epk >= r.minInclusive && (r.maxExclusive === "FF" || epk < r.maxExclusive),
    );
    if (out[i].keys.length < perRange) out[i].keys.push(pk);
  }
  return out;
}

/** How many changes stay pending in the i-th range: 1 to 5, and none in the second of several. */
export function pendingFor(i: number, rangeCount: number): number {
  return rangeCount > 1 && i === 1 ? 0 : 1 + ((i * 7) % 5);
}

/**
 * Writes `count(i)` new documents into the i-th range, one range after the other in turn (round-robin), with
 * ids `${prefix}-${i}-${n}`. Returns what it wrote per range id.
 */
export async function writeRoundRobin(
  container: Container,
  ranges: readonly RangeKeys[],
  count: (i: number) => number,
  prefix: string,
): Promise<Map<string, number>> {
  const written = new Map(ranges.map((r) => [r.id, 0]));
  const most = Math.max(...ranges.map((_, i) => count(i)));
  for (let round = 0; round < most; round++) {
    for (const [i, r] of ranges.entries()) {
      if (round >= count(i)) continue;
      await container.items.create({ id: `${prefix}-${i}-${round}`, pk: r.keys[round % r.keys.length] });
      written.set(r.id, (written.get(r.id) ?? 0) + 1);
    }
  }
  return written;
}
