import type { Container } from "@azure/cosmos";
import { CosmosFeedError } from "../../errors.js";
import { leasePrefix } from "./lease.js";
import { type LeaseOperationCounters, LeaseStore } from "./store.js";

/** Thrown when the monitored or lease container cannot serve a processor. */
export class LeaseContainerError extends CosmosFeedError {
  constructor(message: string) {
    super(message);
    this.name = "LeaseContainerError";
  }
}

/**
 * Opens the lease store of a processor: reads both containers, checks the lease container's partition key
 * (/id or /partitionKey, as .NET accepts) and derives the .NET lease prefix
 * (processorName + account host + "_" + database rid + "_" + container rid).
 */
export async function openLeaseStore(
  monitored: Container,
  leaseContainer: Container,
  processorName: string,
  counters: LeaseOperationCounters,
  accountEndpoint?: string,
): Promise<LeaseStore> {
  const [{ resource: coll }, { resource: leaseDef }] = await Promise.all([
    monitored.read(),
    leaseContainer.read(),
  ]);
  if (!coll) throw new LeaseContainerError(`The monitored container '${monitored.id}' does not exist.`);
  if (!leaseDef) throw new LeaseContainerError(`The lease container '${leaseContainer.id}' does not exist.`);
  const paths = leaseDef.partitionKey?.paths ?? [];
  const layout = paths[0] === "/id" ? "id" : paths[0] === "/partitionKey" ? "partitionKey" : undefined;
  if (!layout || paths.length !== 1) {
    throw new LeaseContainerError(
      "The lease container, if partitioned, must have partition key equal to /id or /partitionKey.",
    );
  }
  const collRid = coll._rid as string;
  const dbRid = Buffer.from(collRid, "base64").subarray(0, 4).toString("base64");
  const endpoint = accountEndpoint ?? (await monitored.database.client.getWriteEndpoint());
  return new LeaseStore(
    leaseContainer,
    leasePrefix(processorName, endpoint, dbRid, collRid),
    layout,
    counters,
  );
}
