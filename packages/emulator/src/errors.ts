import { CosmosFeedError } from "@cosmos-feed/core/errors";

/**
 * An error the emulator answers with: HTTP status (also `statusCode`), Cosmos `code`, optional substatus and
 * headers. One of the `CosmosFeedError` family.
 */
export class CosmosError extends CosmosFeedError {
  /** The HTTP status answered (the same as `status`). */
  declare readonly statusCode: number;
  /** RU charged for the failed request (set where it is metered). */
  charge?: number;
  /** The body's `additionalErrorInfo` (JSON text): the query plan of a 400/1004 "not directly served". */
  additionalErrorInfo?: string;

  constructor(
    /** The HTTP status answered. */
    readonly status: number,
    code: string,
    message: string,
    /** The `x-ms-substatus` answered, when there is one (e.g. 1002 for a gone partition key range). */
    readonly substatus?: number,
    /** Extra response headers (e.g. `x-ms-retry-after-ms` on a 429). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message, { code, statusCode: status });
    this.name = "CosmosError";
  }
}

/**
 * The service's error text: `Message: {"Errors":[…]}` (the shape every SDK surfaces and users match on, e.g. the
 * Azure portal's Data Explorer parses it: github.com/Azure/cosmos-explorer, src/Common/ErrorParserUtility.ts). The
 * service's own sentence comes first; the emulator's detail, when there is one, is a second entry.
 */
export const serviceMessage = (...errors: string[]): string =>
  `Message: ${JSON.stringify({ Errors: errors })}`;

/** The service's texts for the errors SDKs and users match on. */
export const ServiceText = {
  NotFound: "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found",
  PreconditionFailed:
    "One of the specified pre-condition is not met. Learn more: https://aka.ms/CosmosDB/sql/errors/precondition-failed",
  Conflict: "Entity with the specified id already exists in the system.",
  RequestTooLarge: "Request size is too large",
  /** 400/1004 on a cross-partition query the SDK must run itself (github.com/Azure/azure-sdk-for-go/issues/23128). */
  CrossPartitionQueryNotServable:
    "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message.",
} as const;

export const badRequest = (message: string, substatus?: number): CosmosError =>
  new CosmosError(400, "BadRequest", message, substatus);

/** 404 with the service's text; `detail` (which resource) follows it. */
export const notFound = (detail?: string): CosmosError =>
  new CosmosError(
    404,
    "NotFound",
    detail ? serviceMessage(ServiceText.NotFound, detail) : serviceMessage(ServiceText.NotFound),
  );

export const conflict = (detail?: string): CosmosError =>
  new CosmosError(
    409,
    "Conflict",
    detail ? serviceMessage(ServiceText.Conflict, detail) : serviceMessage(ServiceText.Conflict),
  );

export const preconditionFailed = (): CosmosError =>
  new CosmosError(412, "PreconditionFailed", serviceMessage(ServiceText.PreconditionFailed));

/** 413 with the service's text (`{"Errors":["Request size is too large"]}`); `detail` says which limit. */
export const requestTooLarge = (detail: string): CosmosError =>
  new CosmosError(413, "RequestEntityTooLarge", serviceMessage(ServiceText.RequestTooLarge, detail));

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
