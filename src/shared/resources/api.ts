import { randomUUID } from "node:crypto";
import { AlreadyExistsError, NotFoundError, PreconditionFailedError, statusOf } from "../cosmos/errors.js";
import { createItem, readItem, removeItem, replaceIfMatch, type Stored } from "../cosmos/occ.js";
import { guardWithLock } from "../locks/index.js";
import type { AppContext } from "./context.js";
import {
  ApiError,
  applyMergePatch,
  type OperationDocument,
  type OperationKind,
  parseJsonObject,
  parseOperationId,
  parseResourceName,
  parseSubscriptionId,
  type ResourceDocument,
  type ResourceInput,
  resourcePath,
  toOperationView,
  tooLarge,
  toResourceView,
  validatePatchShape,
  validateResourceInput,
} from "./model.js";
import { type ApiRequest, type ApiResponse, answer, logWarning, noteOperation } from "./request.js";
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

function operationUrl(req: ApiRequest, operationId: string): string {
  return `${new URL(req.url).origin}/api/operations/${operationId}`;
}

export class ResourceApi {
  constructor(private readonly ctx: AppContext) {}

  private get resources() {
    return this.ctx.containers.resources;
  }
  private get operations() {
    return this.ctx.containers.operations;
  }

  /** `PUT /subscriptions/{sub}/resources/{name}`: create (201) or replace (200); async operation headers. */
  put(req: ApiRequest): Promise<ApiResponse> {
    return answer(req, async () => {
      const sub = parseSubscriptionId(req.params.subscriptionId);
      const name = parseResourceName(req.params.resourceName);
      const conditions = conditionsOf(req);
      const input = validateResourceInput(await readBody(req, this.ctx.settings.maxRequestBodyBytes));
      return this.mutate(req, sub, async (signal) => {
        const current = await readItem<ResourceDocument>(this.resources, name.toLowerCase(), sub);
        checkConditions(conditions, current, name);
        if (current?.provisioningState === "Deleting") throw deleting(name);
        return this.write(req, sub, name, current, input, current ? "Replace" : "Create", signal);
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
      return this.mutate(req, sub, async (signal) => {
        const current = await readItem<ResourceDocument>(this.resources, name.toLowerCase(), sub);
        if (!current) throw notFound(sub, name);
        checkConditions(conditions, current, name);
        if (current.provisioningState === "Deleting") throw deleting(name);
        const merged = applyMergePatch({ properties: current.properties, tags: current.tags }, patch);
        const input = validateResourceInput(merged as Record<string, unknown>);
        const res = await this.write(req, sub, name, current, input, "Update", signal);
        return { ...res, status: 202 };
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
      return this.mutate(req, sub, async (signal) => {
        const current = await readItem<ResourceDocument>(this.resources, name.toLowerCase(), sub);
        if (!current && conditions.ifMatch === undefined) return { status: 204 };
        checkConditions(conditions, current, name);
        if (!current) return { status: 204 };
        if (current.provisioningState === "Deleting") {
          return { status: 202, headers: this.asyncHeaders(req, current.operationId, current._etag) };
        }
        const res = await this.write(req, sub, current.name, current, undefined, "Delete", signal);
        return { status: 202, headers: res.headers };
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

  /** `GET /operations/{id}`. */
  getOperation(req: ApiRequest): Promise<ApiResponse> {
    return answer(req, async () => {
      const id = parseOperationId(req.params.operationId);
      noteOperation(req, id);
      const op = await readItem<OperationDocument>(this.operations, id, id, { signal: req.signal });
      if (!op) throw new ApiError(404, "OperationNotFound", `Operation '${id}' does not exist.`);
      return { status: 200, body: toOperationView(op) };
    });
  }

  private mutate(
    req: ApiRequest,
    sub: string,
    work: (signal: AbortSignal) => Promise<ApiResponse>,
  ): Promise<ApiResponse> {
    return guardWithLock(
      this.ctx.locks,
      subscriptionLockName(sub),
      (signal) => answer(req, () => work(signal)),
      {
        waitMs: this.ctx.settings.lockWaitMs,
        contentionStatus: this.ctx.settings.lockContentionStatus as 409 | 503,
        signal: req.signal,
      },
    );
  }

  /**
   * Under the lock: the operation document first, then the resource (create, or replace If-Match the etag just
   * read — never a blind upsert). If the resource write fails, the operation is removed again, so a refused
   * mutation leaves nothing behind.
   */
  private async write(
    req: ApiRequest,
    sub: string,
    name: string,
    current: Stored<ResourceDocument> | undefined,
    input: ResourceInput | undefined,
    kind: OperationKind,
    signal: AbortSignal,
  ): Promise<ApiResponse> {
    const now = new Date().toISOString();
    const displayName = current?.name ?? name;
    const op: OperationDocument = {
      id: randomUUID(),
      subscriptionId: sub,
      resourceName: displayName,
      resourceId: resourcePath(sub, displayName),
      kind,
      status: "Accepted",
      startTime: now,
      lastUpdatedTime: now,
    };
    noteOperation(req, op.id);
    const doc: ResourceDocument = {
      id: displayName.toLowerCase(),
      subscriptionId: sub,
      name: displayName,
      docType: "resource",
      properties: input?.properties ?? (current as ResourceDocument).properties,
      tags: input?.tags ?? (current as ResourceDocument).tags,
      provisioningState: kind === "Delete" ? "Deleting" : "Accepted",
      operationId: op.id,
      createdAt: current?.createdAt ?? now,
      lastModifiedAt: now,
    };
    signal.throwIfAborted();
    await createItem(this.operations, op);
    let stored: Stored<ResourceDocument>;
    try {
      signal.throwIfAborted();
      stored = current
        ? (await replaceIfMatch(this.resources, doc.id, sub, doc, current._etag)).resource
        : await createItem(this.resources, doc);
    } catch (e) {
      await removeItem(this.operations, op.id, op.id).catch((cleanup: unknown) => {
        logWarning(req, `Could not remove operation ${op.id} of a refused write: ${String(cleanup)}`);
      });
      if (
        e instanceof AlreadyExistsError ||
        e instanceof PreconditionFailedError ||
        e instanceof NotFoundError
      ) {
        throw new ApiError(409, "Conflict", `Resource '${name}' changed during the request; retry.`);
      }
      throw e;
    }
    return {
      status: current ? 200 : 201,
      headers: this.asyncHeaders(req, op.id, stored._etag),
      body: toResourceView(stored),
    };
  }

  private asyncHeaders(req: ApiRequest, operationId: string, etag: string): Record<string, string> {
    const url = operationUrl(req, operationId);
    return { ETag: etag, "Azure-AsyncOperation": url, Location: url };
  }
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
