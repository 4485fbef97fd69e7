import type { PartitionKeyComponent } from "../partitioning/epk.js";

/** The canonical string of a partition key value (its components as JSON): the key of a logical partition. */
export function canonicalPartitionKey(values: readonly PartitionKeyComponent[]): string {
  return JSON.stringify(values);
}

/** The key of a document in its container: logical partition and id. */
export function documentKey(pkKey: string, id: string): string {
  return `${pkKey}\u0000${id}`;
}
