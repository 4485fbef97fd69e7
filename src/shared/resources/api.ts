import { randomUUID } from "node:crypto";
import { createClientLogger } from "@azure/logger";
import { AlreadyExistsError, NotFoundError, PreconditionFailedError, statusOf } from "../cosmos/errors.js";
import { createItem, readItem, removeItem, replaceIfMatch, type Stored } from "../cosmos/occ.js";
import { isCosmosFeedError } from "../errors.js";
import { type GuardedResponse, guardWithLock } from "../locks/index.js";
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
import { CONTINUATION_LIMIT_KB, decodeSkipToken, encodeSkipToken } from "./skipToken.js";

/** Where a request's log lines go when it brings no log of its own (silent unless AZURE_LOG_LEVEL is set). */
const fallbackLogger = createClientLogger("cosmos-feed-app");

/** A request's log: functions/ fills it from the InvocationContext, so the host's log shows each line. */
export interface RequestLog {
  error(message: string): void;
  warn(message: string): void;
}

/** A transport-neutral request: functions/ adapts the Functions HttpRequest to it. */
export interface ApiRequest {
  /** The full request URL (its origin builds Azure-AsyncOperation and nextLink). */
  url: string;
  /** A header by (case-insensitive) name, or null. */
  header(name: string): string | null;
  /** The body as text (read only for PUT and PATCH, after Content-Length is checked). */
  text(): Promise<string>;
  /** The route's parameters. */
  params: Record<string, string | undefined>;
  /**
   * Fires when the answer is no longer wanted: the database calls and the lock wait stop, and the request answers
   * 503 RequestAborted (logged as a warning, not an error).
   */
  signal?: AbortSignal;
  /** The request's log (the invocation's); without one, @azure/logger. */
  log?: RequestLog;
  /** Named in every log line of the request (the Functions invocation id). */
  invocationId?: string;
}

export type ApiResponse = GuardedResponse;

const errorBody = (code: string, message: string) => ({ error: { code, message } });

/** The operation each request created or asked for, once known: its log lines name it. */
const operationOfRequest = new WeakMap<ApiRequest, string>();

/** Records the operation `req` is about, for its log lines. */
function noteOperation(req: ApiRequest, operationId: string): void {
  operationOfRequest.set(req, operationId);
}

/** A request in log lines: its path, its invocation and, when known, its operation. */
function describe(req: ApiRequest): string {
  let path = req.url;
  try {
    path = new URL(req.url).pathname;
  } catch {
    // a URL the host would not have routed; log it as given
  }
  const ids = [`invocation ${req.invocationId ?? "unknown"}`];
  const op = operationOfRequest.get(req);
  if (op !== undefined) ids.push(`operation ${op}`);
  return `${path} (${ids.join(", ")})`;
}

function logError(req: ApiRequest, message: string): void {
  if (req.log) req.log.error(message);
  else fallbackLogger.error(message);
}

function logWarning(req: ApiRequest, message: string): void {
  if (req.log) req.log.warn(message);
  else fallbackLogger.warning(message);
}

/**
 * Runs `work` and turns what it throws into the API's answer: ApiError → its status with `{ error: { code,
 * message } }`; an aborted request (`req.signal`) → 503 RequestAborted, logged as a warning; the library's typed
 * errors → their status; Cosmos throttling → 429/503 + Retry-After; anything else → 500 InternalServerError.
 * Every 500 logs one error line to `req.log` naming the path, the invocation and the operation when known; never
 * an unhandled throw.
 */
export async function answer(req: ApiRequest, work: () => Promise<ApiResponse>): Promise<ApiResponse> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof ApiError) return { status: e.statusCode, body: errorBody(e.code, e.message) };
    if (req.signal?.aborted) {
      // Whatever failed, it failed because the request was given up: not a fault to alert on.
      const reason: unknown = req.signal.reason;
      logWarning(
        req,
        `Request ${describe(req)} aborted: ${reason instanceof Error ? reason.message : String(reason)}`,
      );
      return {
        status: 503,
        headers: { "Retry-After": "1" },
        body: errorBody("RequestAborted", "The request was abandoned before it finished; retry it."),
      };
    }
    if (isCosmosFeedError(e)) {
      // The library refused on the server's side (a missing or misconfigured container, …): not the client's fault.
      logError(req, `Request ${describe(req)} failed with 500 ${e.code}: ${e.message}`);
      return { status: 500, body: errorBody(e.code, e.message) };
    }
    const s = statusOf(e);
    if (s === 429 || s === 503) {
      return {
        status: 503,
        headers: { "Retry-After": "1" },
        body: errorBody("ServiceBusy", "The database is busy; retry shortly."),
      };
    }
    logError(
      req,
      `Request ${describe(req)} failed with 500 InternalServerError: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
    );
    return { status: 500, body: errorBody("InternalServerError", "The request failed; it can be retried.") };
  }
}

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
