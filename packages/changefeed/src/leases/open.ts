import type { Container, CosmosClient } from "@azure/cosmos";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { databaseRidOf, leasePrefix } from "./lease.js";
import { type LeaseOperationCounters, LeaseStore } from "./store.js";

/** Thrown when the monitored or lease container cannot serve a processor. */
export class LeaseContainerError extends CosmosFeedError {
  constructor(message: string) {
    super(message);
    this.name = "LeaseContainerError";
  }
}

/**
 * The endpoint the client was created with (`new CosmosClient({ endpoint })`, or a connection string's
 * AccountEndpoint): what .NET's `CosmosClient.Endpoint` and the Functions host use for the lease prefix.
 * @azure/cosmos 4.x has no public getter for it; `getWriteEndpoint()` answers the regional endpoint the
 * account read named (`acct-westus2.documents.azure.com`), which changes after a failover, so it must not be
 * used. The client keeps its options on its context; when that is not there, the caller must pass
 * `accountEndpoint`.
 */
export function configuredEndpoint(client: CosmosClient): string | undefined {
  const internals = client as unknown as { clientContext?: { cosmosClientOptions?: { endpoint?: unknown } } };
  const endpoint = internals.clientContext?.cosmosClientOptions?.endpoint;
  return typeof endpoint === "string" && endpoint.length > 0 ? endpoint : undefined;
}

/** The account endpoint for the prefix: the option when given, else the client's configured endpoint. */
export function prefixEndpoint(monitored: Container, accountEndpoint: string | undefined): string {
  const endpoint = accountEndpoint ?? configuredEndpoint(monitored.database.client);
  if (endpoint === undefined) {
    throw new LeaseContainerError(
      "Cannot tell which endpoint the Cosmos client was configured with; pass accountEndpoint (the account's " +
        "https://<account>.documents.azure.com/ endpoint, as the .NET and Functions hosts are configured).",
    );
  }
  if (!URL.canParse(endpoint)) {
    throw new LeaseContainerError(`accountEndpoint '${endpoint}' is not an absolute URL.`);
  }
  return endpoint;
}

/**
 * Opens the lease store of a processor: reads both containers, checks the lease container's partition key
 * (/id or /partitionKey, as .NET accepts) and derives the .NET lease prefix
 * (processorName + configured account host + "_" + database rid + "_" + container rid).
 */
export interface OpenLeaseStoreOptions {
  monitored: Container;
  leaseContainer: Container;
  /** The lease id prefix's first part (.NET's processorName, the trigger's leaseContainerPrefix). */
  processorName: string;
  counters: LeaseOperationCounters;
  /** See ChangeFeedProcessorOptions.accountEndpoint. */
  accountEndpoint?: string;
  /** Wall clock (ms since epoch) for the lease documents' timestamps. */
  now?: () => number;
  /** Waits between attempts after a 412 (the processor's clock). Default: a real timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Refuse a lease container with TTL off (see ChangeFeedProcessorOptions.checkLeaseContainerTtl). Default true. */
  requireTtl?: boolean;
}

export async function openLeaseStore(options: OpenLeaseStoreOptions): Promise<LeaseStore> {
  const {
    monitored,
    leaseContainer,
    processorName,
    counters,
    accountEndpoint,
    now,
    sleep,
    requireTtl = true,
  } = options;
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
  if (requireTtl && (leaseDef.defaultTtl === undefined || leaseDef.defaultTtl === null)) {
    throw new LeaseContainerError(
      `The lease container '${leaseContainer.id}' has TTL off. The bootstrap lock '<prefix>.lock' is written with a ttl; without TTL a host that crashes while bootstrapping leaves it forever and every host waits on it. Turn TTL on without a default expiry (defaultTtl: -1), or set checkLeaseContainerTtl: false.`,
    );
  }
  const endpoint = prefixEndpoint(monitored, accountEndpoint);
  const collRid = coll._rid as string;
  return new LeaseStore(
    leaseContainer,
    leasePrefix(processorName, endpoint, databaseRidOf(collRid), collRid),
    layout,
    counters,
    now,
    sleep,
  );
}
