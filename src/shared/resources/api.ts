import { randomUUID } from "node:crypto";
import { type BatchWrite, commitBatch } from "@cosmos-feed/core/cosmos/batch";
import {
  AlreadyExistsError,
  NotFoundError,
  PreconditionFailedError,
  statusOf,
} from "@cosmos-feed/core/cosmos/errors";
import { readItem, type Stored } from "@cosmos-feed/core/cosmos/occ";
import { defaultOccRetryPolicy } from "@cosmos-feed/core/cosmos/retry";
import { guardWithLock } from "@cosmos-feed/locks";
import type { AppContext } from "./context.js";
import {
  ApiError,
  applyMergePatch,
  type OperationKind,
  operationPath,
  parseJsonObject,
  parseOperationId,
  parseResourceName,
  parseSubscriptionId,
  type ResourceDocument,
  type ResourceInput,
  toOperationView,
  tooLarge,
  toResourceView,
  validatePatchShape,
  validateResourceInput,
} from "./model.js";
import { canceledBy, newOperation, pendingOperationOf, readOperation } from "./operations.js";
import { type ApiRequest, type ApiResponse, answer, noteOperation } from "./request.js";
import { CONTINUATION_LIMIT_KB, decodeSkipToken, encodeSkipToken } from "./skipToken.js";

export type { ApiRequest, ApiResponse, RequestLog } from "./request.js";

/** Conditional headers: If-Match (an etag or *), If-None-Match (only * : create only). */
interface Conditions {
  ifMatch?: string;
  ifNoneMatchAny: boolean;
}

function conditionsOf(req: ApiRequest): Conditions {
  const ifMatch = req.header("if-match")?.trim() || undefined;
  const ifNoneMatch = req.header("if-none-match")?.trim() || undefined;
  if (ifNoneMatch !== undefined && ifNoneMatch !== "*") {
    throw new ApiError(400, "InvalidHeader", "If-None-Match supports only '*' (create only).");
  }
  if (ifMatch !== undefined && ifNoneMatch !== undefined) {
    throw new ApiError(400, "InvalidHeader", "Send If-Match or If-None-Match, not both.");
  }
  return { ifMatch, ifNoneMatchAny: ifNoneMatch === "*" };
}

function checkConditions(c: Conditions, current: Stored<ResourceDocument> | undefined, name: string): void {
  const fail = (why: string) => new ApiError(412, "PreconditionFailed", `Resource '${name}': ${why}`);
  if (c.ifNoneMatchAny && current) throw fail("it exists and If-None-Match is '*'.");
  if (c.ifMatch === "*" && !current) throw fail("it does not exist and If-Match is '*'.");
  if (c.ifMatch !== undefined && c.ifMatch !== "*" && current?._etag !== c.ifMatch) {
    throw fail(current ? "its ETag has changed (If-Match is stale)." : "it does not exist.");
  }
}

/**
 * The body as a JSON object: a declared Content-Length over the limit is refused before reading (a wrong one is
 * harmless: the bytes read are measured again), then size, depth and syntax are checked before anything walks it.
 */
async function readBody(req: ApiRequest, maxBytes: number): Promise<Record<string, unknown>> {
  const declared = Number(req.header("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  let text: string;
  try {
    text = await req.text();
  } catch (e) {
    // Only the request stream fails here (a client that went away mid-body): the client's side, not a 500.
    req.signal?.throwIfAborted();
    throw new ApiError(
      400,
      "InvalidBody",
      `The body could not be read: ${(e as Error)?.message ?? String(e)}`,
    );
  }
  return parseJsonObject(text, maxBytes);
}

/** The lock every mutation of a subscription takes. */
export function subscriptionLockName(subscriptionId: string): string {
  return `subscription-${subscriptionId}`;
}

function operationUrl(req: ApiRequest, sub: string, operationId: string): string {
  return `${new URL(req.url).origin}/api${operationPath(sub, operationId)}`;
}

export class ResourceApi {
  constructor(private readonly ctx: AppContext) {}

  private get resources() {
    return this.ctx.containers.resources;
  }

  /** `PUT /subscriptions/{sub}/resources/{name}`: create (201) or replace (200); async operation headers. */
  put(req: ApiRequest): Promise<ApiResponse> {
    return answer(req, async () => {
      const sub = parseSubscriptionId(req.params.subscriptionId);
      const name = parseResourceName(req.params.resourceName);
      const conditions = conditionsOf(req);
      const input = validateResourceInput(await readBody(req, this.ctx.settings.maxRequestBodyBytes));
      return this.mutate(req, sub, name, (current) => {
        checkConditions(conditions, current, name);
        if (current?.provisioningState === "Deleting") throw deleting(name);
        return { input, kind: current ? "Replace" : "Create", status: current ? 200 : 201 };
      });
    });
  }

  /** `PATCH …/{name}`: JSON merge patch (RFC 7396) of properties and tags; 202 with the updated resource. */
  patch(req: ApiRequest): Promise<ApiResponse> {
    return answer(req, async () => {
      const sub = parseSubscriptionId(req.params.subscriptionId);
      const name = parseResourceName(req.params.resourceName);
      const conditions = conditionsOf(req);
      const patch = await readBody(req, this.ctx.settings.maxRequestBodyBytes);
      validatePatchShape(patch);
      return this.mutate(req, sub, name, (current) => {
        if (!current) throw notFound(sub, name);
        checkConditions(conditions, current, name);
        if (current.provisioningState === "Deleting") throw deleting(name);
        const merged = applyMergePatch({ properties: current.properties, tags: current.tags }, patch);
        return {
          input: validateResourceInput(merged as Record<string, unknown>),
          kind: "Update",
          status: 202,
        };
      });
    });
  }

  /**
   * `DELETE …/{name}`: marks the resource Deleting and answers 202 with an operation (the provisioning work removes
   * it); a resource already Deleting answers 202 with its operation; a missing one 204.
   */
  delete(req: ApiRequest): Promise<ApiResponse> {
    return answer(req, async () => {
      const sub = parseSubscriptionId(req.params.subscriptionId);
      const name = parseResourceName(req.params.resourceName);
      const conditions = conditionsOf(req);
      return this.mutate(req, sub, name, (current) => {
        if (!current && conditions.ifMatch === undefined) return { status: 204 };
        checkConditions(conditions, current, name);
        if (!current) return { status: 204 };
        if (current.provisioningState === "Deleting") {
          return { status: 202, headers: this.asyncHeaders(req, sub, current.operationId, current._etag) };
        }
        return { input: undefined, kind: "Delete", status: 202, withoutBody: true };
      });
    });
  }

  /** `GET …/{name}`. */
  get(req: ApiRequest): Promise<ApiResponse> {
    return answer(req, async () => {
      const sub = parseSubscriptionId(req.params.subscriptionId);
      const name = parseResourceName(req.params.resourceName);
      const doc = await readItem<ResourceDocument>(this.resources, name.toLowerCase(), sub, {
        signal: req.signal,
      });
      if (!doc) throw notFound(sub, name);
      return { status: 200, headers: { ETag: doc._etag }, body: toResourceView(doc) };
    });
  }

  /** `GET /subscriptions/{sub}/resources[?$top=n&$skipToken=…]`: one page and a nextLink while more remain. */
  list(req: ApiRequest): Promise<ApiResponse> {
    return answer(req, async () => {
      const sub = parseSubscriptionId(req.params.subscriptionId);
      const url = new URL(req.url);
      const topText = url.searchParams.get("$top");
      const top = topText === null ? this.ctx.settings.listPageSize : Number(topText);
      if (!/^\d+$/.test(topText ?? "1") || !Number.isInteger(top) || top < 1 || top > 1000) {
        throw new ApiError(
          400,
          "InvalidTop",
          `$top must be a whole number from 1 to 1000; got '${topText}'.`,
        );
      }
      const skipToken = url.searchParams.get("$skipToken");
      const continuationToken = skipToken === null ? undefined : decodeSkipToken(skipToken, sub);
      const iterator = this.resources.items.query<Stored<ResourceDocument>>(
        {
          query: "SELECT * FROM c WHERE c.subscriptionId = @sub AND c.docType = 'resource'",
          parameters: [{ name: "@sub", value: sub }],
        },
        {
          partitionKey: sub,
          maxItemCount: top,
          continuationToken,
          continuationTokenLimitInKB: CONTINUATION_LIMIT_KB,
          abortSignal: req.signal,
        },
      );
      let page: Awaited<ReturnType<typeof iterator.fetchNext>>;
      try {
        page = await iterator.fetchNext();
      } catch (e) {
        if (continuationToken !== undefined && statusOf(e) === 400) throw invalidSkipToken();
        throw e;
      }
      const next = page.continuationToken;
      let nextLink: string | undefined;
      if (next) {
        const link = new URL(url);
        link.searchParams.set("$top", String(top));
        link.searchParams.set("$skipToken", encodeSkipToken(sub, next));
        nextLink = link.toString();
      }
      return {
        status: 200,
        body: { value: page.resources.map(toResourceView), ...(nextLink ? { nextLink } : {}) },
      };
    });
  }

  /** `GET /subscriptions/{sub}/operations/{id}`. */
  getOperation(req: ApiRequest): Promise<ApiResponse> {
    return answer(req, async () => {
      const sub = parseSubscriptionId(req.params.subscriptionId);
      const id = parseOperationId(req.params.operationId);
      noteOperation(req, id);
      const op = await readOperation(this.ctx, sub, id, req.signal);
      if (!op) throw new ApiError(404, "OperationNotFound", `Operation '${id}' does not exist.`);
      return { status: 200, body: toOperationView(op) };
    });
  }

  /**
   * Under the subscription lock: read the resource, let `plan` decide (an answer without a write, or the write to
   * make), and commit it. A lost race with the provisioning work (412/409/404 on the batch) re-reads and re-plans,
   * boundedly; losing every attempt is 409 Conflict.
   */
  private mutate(
    req: ApiRequest,
    sub: string,
    name: string,
    plan: (current: Stored<ResourceDocument> | undefined) => PlannedWrite | ApiResponse,
  ): Promise<ApiResponse> {
    return guardWithLock(
      this.ctx.locks,
      subscriptionLockName(sub),
      (signal) =>
        answer(req, () =>
          defaultOccRetryPolicy.run(
            async () => {
              const current = await readItem<ResourceDocument>(this.resources, name.toLowerCase(), sub, {
                signal,
              });
              const planned = plan(current);
              if (!("kind" in planned)) return planned;
              return this.write(req, sub, name, current, planned, signal);
            },
            {
              signal,
              isRetryable: (e) =>
                e instanceof AlreadyExistsError ||
                e instanceof PreconditionFailedError ||
                e instanceof NotFoundError,
              onExhausted: () =>
                new ApiError(409, "Conflict", `Resource '${name}' kept changing during the request; retry.`),
            },
          ),
        ),
      {
        waitMs: this.ctx.settings.lockWaitMs,
        contentionStatus: this.ctx.settings.lockContentionStatus as 409 | 503,
        signal: req.signal,
      },
    );
  }

  /**
   * One transactional batch in the subscription's partition: the new operation (Accepted), the resource naming it
   * (created, or replaced If-Match the ETag just read — never a blind upsert), and the operation it supersedes
   * marked Canceled (If-Match). All or nothing: an answered mutation always has its operation, and no operation is
   * left behind by a newer one, whatever the change feed later coalesces; a refused or crashed one wrote nothing.
   */
  private async write(
    req: ApiRequest,
    sub: string,
    name: string,
    current: Stored<ResourceDocument> | undefined,
    planned: PlannedWrite,
    signal: AbortSignal,
  ): Promise<ApiResponse> {
    const superseded = await pendingOperationOf(this.ctx, current);
    const now = new Date().toISOString();
    const displayName = current?.name ?? name;
    const operationId = randomUUID();
    noteOperation(req, operationId);
    const { kind, input } = planned;
    const op = newOperation(operationId, sub, displayName, kind, now, this.ctx.settings.operationTtlSeconds);
    const doc: ResourceDocument = {
      id: displayName.toLowerCase(),
      subscriptionId: sub,
      name: displayName,
      docType: "resource",
      properties: input?.properties ?? (current as ResourceDocument).properties,
      tags: input?.tags ?? (current as ResourceDocument).tags,
      provisioningState: kind === "Delete" ? "Deleting" : "Accepted",
      operationId,
      createdAt: current?.createdAt ?? now,
      lastModifiedAt: now,
    };
    const writes: BatchWrite[] = [
      { kind: "create", body: op },
      current
        ? { kind: "replace", id: doc.id, body: doc, etag: current._etag }
        : { kind: "create", body: doc },
    ];
    if (superseded) {
      const canceled = canceledBy(superseded, now, operationId, kind);
      writes.push({ kind: "replace", id: superseded.id, body: canceled, etag: superseded._etag });
    }
    // The last look at the lock: past this point the batch either commits whole or not at all.
    signal.throwIfAborted();
    const [, stored] = await commitBatch(this.resources, sub, writes);
    const resource = stored as Stored<ResourceDocument>;
    return {
      status: planned.status,
      headers: this.asyncHeaders(req, sub, operationId, resource._etag),
      ...(planned.withoutBody ? {} : { body: toResourceView(resource) }),
      committed: true,
    };
  }

  private asyncHeaders(
    req: ApiRequest,
    sub: string,
    operationId: string,
    etag: string,
  ): Record<string, string> {
    const url = operationUrl(req, sub, operationId);
    return { ETag: etag, "Azure-AsyncOperation": url, Location: url };
  }
}

/** What a mutation writes: the resource input (none for a delete), the operation's kind, the answer's status. */
interface PlannedWrite {
  input: ResourceInput | undefined;
  kind: OperationKind;
  status: number;
  /** DELETE answers 202 without the resource. */
  withoutBody?: boolean;
}

function notFound(sub: string, name: string): ApiError {
  return new ApiError(404, "ResourceNotFound", `Resource '${name}' does not exist in subscription '${sub}'.`);
}

function deleting(name: string): ApiError {
  return new ApiError(409, "ResourceBeingDeleted", `Resource '${name}' is being deleted.`);
}

function invalidSkipToken(): ApiError {
  return new ApiError(
    400,
    "InvalidSkipToken",
    "$skipToken is not a token this API returned: the database refused it.",
  );
}
