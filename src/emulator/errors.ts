/** An error the emulator answers with: HTTP status, Cosmos `code`, optional substatus and headers. */
export class CosmosError extends Error {
  /** RU charged for the failed request (set where it is metered). */
  charge?: number;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly substatus?: number,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "CosmosError";
  }
}

export const badRequest = (message: string, substatus?: number): CosmosError =>
  new CosmosError(400, "BadRequest", message, substatus);

export const notFound = (
  message = "Entity with the specified id does not exist in the system.",
): CosmosError => new CosmosError(404, "NotFound", message);

export const conflict = (
  message = "Entity with the specified id already exists in the system.",
): CosmosError => new CosmosError(409, "Conflict", message);

export const preconditionFailed = (): CosmosError =>
  new CosmosError(
    412,
    "PreconditionFailed",
    "Operation cannot be performed because one of the specified precondition is not met.",
  );

/** Substatus codes the SDK reacts to. */
export const SubStatus = {
  PartitionKeyRangeGone: 1002,
  CompletingSplit: 1007,
  CrossPartitionQueryNotServable: 1004,
  RequestRateTooLarge: 3200,
} as const;

export const partitionKeyRangeGone = (rangeId: string): CosmosError =>
  new CosmosError(
    410,
    "Gone",
    `The partition key range ${rangeId} is gone (split) or is not a range of this container; refresh the partition key ranges.`,
    SubStatus.PartitionKeyRangeGone,
  );
