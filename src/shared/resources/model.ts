import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { jsonNestingDepth } from "@cosmos-feed/core/json";

/** The resource type's name in ids and bodies (ARM style: `<namespace>/<type>`). */
export const RESOURCE_TYPE = "CosmosFeed/resources";

/** Non-terminal states are work in progress: the reactions trigger acts on them. */
export const NON_TERMINAL_STATES = ["Accepted", "Provisioning", "Updating", "Deleting"] as const;
export const TERMINAL_STATES = ["Succeeded", "Failed", "Canceled"] as const;
export type ProvisioningState = (typeof NON_TERMINAL_STATES)[number] | (typeof TERMINAL_STATES)[number];

export function isNonTerminal(state: unknown): boolean {
  return (NON_TERMINAL_STATES as readonly unknown[]).includes(state);
}

export const SKUS = ["basic", "standard", "premium"] as const;
export type Sku = (typeof SKUS)[number];

export interface ResourceProperties {
  sku: Sku;
  /** 1–100; default 1. */
  nodeCount: number;
  description?: string;
}

/** What a client sends (PUT) or what a merge patch must leave (PATCH). */
export interface ResourceInput {
  properties: ResourceProperties;
  tags: Record<string, string>;
}

/** The stored resource. Partition key: /subscriptionId. `id` is the name in lower case (names are case-insensitive). */
export interface ResourceDocument {
  id: string;
  subscriptionId: string;
  /** The name as first given. */
  name: string;
  docType: "resource";
  properties: ResourceProperties;
  tags: Record<string, string>;
  provisioningState: ProvisioningState;
  /** The latest operation on this resource. */
  operationId: string;
  createdAt: string;
  lastModifiedAt: string;
}

export type OperationKind = "Create" | "Replace" | "Update" | "Delete";

/**
 * An asynchronous operation's status document. It lives beside its resource in the resources container
 * (partition key /subscriptionId), so one transactional batch can accept a mutation and cancel the operation it
 * supersedes (see operations.ts).
 */
export interface OperationDocument {
  /** `op:<operationId>` (operations.ts operationDocId). */
  id: string;
  docType: "operation";
  /** The operation's UUID: what URLs and the resource's `operationId` name. */
  operationId: string;
  subscriptionId: string;
  resourceName: string;
  /** The ARM path of the resource. */
  resourceId: string;
  kind: OperationKind;
  /** Accepted (written by the API) → Running (the orchestration started) → Succeeded | Failed | Canceled. */
  status: OperationStatus;
  startTime: string;
  lastUpdatedTime: string;
  endTime?: string;
  /**
   * The first sighting of the resource in a non-terminal state: by the reactions trigger, or (`by: "reconcile"`) by
   * the reconciler when it found the operation stalled and started its orchestration itself.
   */
  observed?: { at: string; provisioningState: ProvisioningState; resourceEtag: string; by?: "reconcile" };
  /** The durable orchestration doing the work, and the step it is at (validate, provision, finalize …). */
  orchestration?: { name: string; instanceId: string; step: string };
  /** Attempts per activity so far (an activity counts its own attempts here, before its work). */
  attempts?: Record<string, number>;
  /** Why the operation failed or was canceled (ARM's error shape). */
  error?: { code: string; message: string };
  /** Canceled because a newer operation on the resource replaced it: that operation's id. */
  supersededBy?: string;
  /** Seconds after its last write until the service deletes it (OPERATION_TTL_SECONDS). */
  ttl: number;
}

export const OPERATION_STATUSES = ["Accepted", "Running", "Succeeded", "Failed", "Canceled"] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];
export function isTerminalOperation(status: OperationStatus): boolean {
  return status === "Succeeded" || status === "Failed" || status === "Canceled";
}

/** A 4xx the API answers: `code` machine-readable, `message` for people. */
export class ApiError extends CosmosFeedError {
  declare readonly statusCode: number;
  constructor(statusCode: number, code: string, message: string) {
    super(message, { statusCode, code });
  }
}

const bad = (code: string, message: string) => new ApiError(400, code, message);

/** Subscription ids: 1–64 letters, digits and '-' (ARM uses GUIDs; any such id is accepted). Stored lower-case. */
export function parseSubscriptionId(value: unknown): string {
  if (typeof value !== "string" || !/^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/.test(value)) {
    throw bad(
      "InvalidSubscriptionId",
      `The subscription id '${String(value)}' is invalid: 1–64 letters, digits or '-', starting with a letter or digit.`,
    );
  }
  return value.toLowerCase();
}

/** Resource names: 1–63 letters, digits, '-', '_' or '.', starting with a letter or digit, not ending with '.'. */
export function parseResourceName(value: unknown): string {
  if (typeof value !== "string" || !/^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9_-])?$/.test(value)) {
    throw bad(
      "InvalidResourceName",
      `The resource name '${String(value)}' is invalid: 1–63 letters, digits, '-', '_' or '.', starting with a letter or digit and not ending with '.'.`,
    );
  }
  return value;
}

/** Operation ids are the UUIDs the API creates. */
export function parseOperationId(value: unknown): string {
  if (
    typeof value !== "string" ||
    !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)
  ) {
    throw bad("InvalidOperationId", `The operation id '${String(value)}' is not a UUID.`);
  }
  return value.toLowerCase();
}

/**
 * The deepest nesting of objects and arrays a request body may have. The resource schema needs 2 (the body, then
 * `properties` or `tags`); the slack keeps the precise field error (InvalidBody naming the field) for a value
 * nested a few levels too deep, while every walk of the parsed body (merge, validation, the SDK's serializer) and
 * the service's own 128-level item limit stay far away. A protocol bound, not a tuning knob: hence no setting.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * Parses a JSON body of at most `maxBytes`: empty, oversize, too deeply nested (MAX_BODY_DEPTH), malformed or
 * non-object bodies are 400s.
 */
export function parseJsonObject(text: string, maxBytes: number): Record<string, unknown> {
  if (Buffer.byteLength(text, "utf8") > maxBytes) throw tooLarge(maxBytes);
  if (text.trim() === "") throw bad("MissingBody", "The request needs a JSON body.");
  const depth = jsonNestingDepth(text);
  if (depth > MAX_BODY_DEPTH) {
    throw bad(
      "BodyTooDeep",
      `The body nests objects and arrays ${depth} levels deep; the limit is ${MAX_BODY_DEPTH}.`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw bad("InvalidJson", `The body is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bad("InvalidBody", "The body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

export function tooLarge(maxBytes: number): ApiError {
  return bad("BodyTooLarge", `The body is larger than ${maxBytes} bytes.`);
}

const TOP_FIELDS = new Set(["properties", "tags"]);
const PROPERTY_FIELDS = new Set(["sku", "nodeCount", "description"]);
const MAX_TAGS = 50;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function rejectUnknown(obj: Record<string, unknown>, allowed: Set<string>, at: string): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.has(key)) {
      throw bad(
        "UnknownField",
        `Unknown field '${at}${key}'; allowed: ${[...allowed].map((k) => `${at}${k}`).join(", ")}.`,
      );
    }
  }
}

/** Validates a full resource body (a PUT, or what a merge patch leaves) and fills in defaults. */
export function validateResourceInput(body: Record<string, unknown>): ResourceInput {
  rejectUnknown(body, TOP_FIELDS, "");
  const p = body.properties;
  if (!isObject(p)) throw bad("InvalidBody", "'properties' is required and must be an object.");
  rejectUnknown(p, PROPERTY_FIELDS, "properties.");
  if (!(SKUS as readonly unknown[]).includes(p.sku)) {
    throw bad(
      "InvalidBody",
      `'properties.sku' must be one of ${SKUS.join(", ")}; got ${JSON.stringify(p.sku)}.`,
    );
  }
  const nodeCount = p.nodeCount ?? 1;
  if (typeof nodeCount !== "number" || !Number.isInteger(nodeCount) || nodeCount < 1 || nodeCount > 100) {
    throw bad(
      "InvalidBody",
      `'properties.nodeCount' must be a whole number from 1 to 100; got ${JSON.stringify(p.nodeCount)}.`,
    );
  }
  if (p.description !== undefined && (typeof p.description !== "string" || p.description.length > 512)) {
    throw bad("InvalidBody", "'properties.description' must be a string of at most 512 characters.");
  }
  const tags = body.tags ?? {};
  if (!isObject(tags)) throw bad("InvalidBody", "'tags' must be an object of strings.");
  const entries = Object.entries(tags);
  if (entries.length > MAX_TAGS) throw bad("InvalidBody", `At most ${MAX_TAGS} tags.`);
  for (const [k, v] of entries) {
    if (k.length < 1 || k.length > 128 || typeof v !== "string" || v.length > 256) {
      throw bad(
        "InvalidBody",
        `Tag '${k}' is invalid: names 1–128 characters, values strings of at most 256.`,
      );
    }
  }
  return {
    properties: {
      sku: p.sku as Sku,
      nodeCount,
      ...(p.description !== undefined ? { description: p.description as string } : {}),
    },
    tags: tags as Record<string, string>,
  };
}

/** A merge patch may only name the fields a PUT may (checked before merging, so the error names the patch). */
export function validatePatchShape(patch: Record<string, unknown>): void {
  rejectUnknown(patch, TOP_FIELDS, "");
  if (isObject(patch.properties)) rejectUnknown(patch.properties, PROPERTY_FIELDS, "properties.");
}

/**
 * RFC 7396 JSON merge patch: objects merge, null removes, anything else replaces. Iterative (an explicit stack of
 * the objects still to merge), so no patch depth can overflow the call stack; neither input is modified. Keys are
 * defined as own properties, so a key such as `__proto__` is data, never a prototype change.
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const root: Record<string, unknown> = isObject(target) ? { ...target } : {};
  const pending: [Record<string, unknown>, Record<string, unknown>][] = [[root, patch]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [out, part] = next;
    for (const [key, value] of Object.entries(part)) {
      if (value === null) {
        delete out[key];
      } else if (isObject(value)) {
        const own = Object.hasOwn(out, key) ? out[key] : undefined;
        const merged: Record<string, unknown> = isObject(own) ? { ...own } : {};
        defineOwn(out, key, merged);
        pending.push([merged, value]);
      } else {
        defineOwn(out, key, value);
      }
    }
  }
  return root;
}

function defineOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

export function resourcePath(subscriptionId: string, name: string): string {
  return `/subscriptions/${subscriptionId}/resources/${name}`;
}

/** The ARM-shaped view clients see. */
export function toResourceView(doc: ResourceDocument & { _etag?: string }) {
  return {
    id: resourcePath(doc.subscriptionId, doc.name),
    name: doc.name,
    type: RESOURCE_TYPE,
    tags: doc.tags,
    properties: { ...doc.properties, provisioningState: doc.provisioningState },
    systemData: { createdAt: doc.createdAt, lastModifiedAt: doc.lastModifiedAt },
    ...(doc._etag ? { etag: doc._etag } : {}),
  };
}

/** The operation's path under the API's route prefix (its URL is the host's origin + `/api` + this). */
export function operationPath(subscriptionId: string, operationId: string): string {
  return `/subscriptions/${subscriptionId}/operations/${operationId}`;
}

export function toOperationView(op: OperationDocument) {
  return {
    id: operationPath(op.subscriptionId, op.operationId),
    name: op.operationId,
    status: op.status,
    resourceId: op.resourceId,
    operation: op.kind,
    startTime: op.startTime,
    lastUpdatedTime: op.lastUpdatedTime,
    ...(op.endTime ? { endTime: op.endTime } : {}),
    ...(op.observed ? { observed: op.observed } : {}),
    ...(op.orchestration ? { orchestration: op.orchestration } : {}),
    ...(op.error ? { error: op.error } : {}),
  };
}
