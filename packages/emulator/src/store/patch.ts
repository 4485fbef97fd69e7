import { badRequest } from "../errors.js";
import type { JsonObject } from "./types.js";

/** The service accepts at most this many operations in one patch request. */
export const MAX_PATCH_OPERATIONS = 10;

export interface PatchOperation {
  op: "add" | "set" | "replace" | "remove" | "incr" | "move";
  path: string;
  value?: unknown;
  from?: string;
}

export interface PatchRequest {
  operations: PatchOperation[];
  condition?: string;
}

const OPS = new Set(["add", "set", "replace", "remove", "incr", "move"]);

/** Accepts `{operations, condition}` or a bare operation array, as the SDK sends either. */
export function parsePatchRequest(body: unknown): PatchRequest {
  const req: PatchRequest = Array.isArray(body)
    ? { operations: body as PatchOperation[] }
    : body !== null && typeof body === "object" && Array.isArray((body as PatchRequest).operations)
      ? (body as PatchRequest)
      : (() => {
          throw badRequest(
            "The patch request body must be an array of operations or {operations, condition}.",
          );
        })();
  if (req.operations.length === 0) throw badRequest("The patch request has no operations.");
  if (req.operations.length > MAX_PATCH_OPERATIONS) {
    throw badRequest(`A patch request can have at most ${MAX_PATCH_OPERATIONS} operations.`);
  }
  for (const op of req.operations) {
    if (op === null || typeof op !== "object" || !OPS.has(op.op)) {
      throw badRequest(`Unknown patch operation '${(op as { op?: unknown })?.op}'.`);
    }
    if (typeof op.path !== "string" || !op.path.startsWith("/")) {
      throw badRequest(`Patch path '${String(op.path)}' must be a JSON pointer starting with '/'.`);
    }
    if (op.op !== "remove" && op.op !== "move" && !("value" in op)) {
      throw badRequest(`Patch operation '${op.op}' at '${op.path}' needs a value.`);
    }
    if (op.op === "move" && (typeof op.from !== "string" || !op.from.startsWith("/"))) {
      throw badRequest(`Patch operation 'move' to '${op.path}' needs a 'from' path.`);
    }
  }
  if (req.condition !== undefined && typeof req.condition !== "string") {
    throw badRequest("The patch condition must be a string such as 'FROM c WHERE c.status = \"open\"'.");
  }
  return req;
}

function tokens(path: string): string[] {
  return path
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

type Container = JsonObject | unknown[];

/** The operation a path belongs to, for the service's messages: its 1-based position and its name. */
interface OperationRef {
  index: number;
  name: string;
}

const OP_NAMES: Record<PatchOperation["op"], string> = {
  add: "Add",
  set: "Set",
  replace: "Replace",
  remove: "Remove",
  incr: "Increment",
  move: "Move",
};

/**
 * The container of the last token of `path`. An operation that creates (`creating` set: add, set, incr, move's
 * target) creates only the last token: a missing parent is a 400 in the service's words, as Microsoft's
 * CosmosItemTests.ItemPatchFailureTest reads them ("For Operation(1): Add Operation can only create a child object of
 * an existing node(array or object) and cannot create path recursively, no path found beyond: 'nonExistentParent'.").
 */
function parentOf(
  doc: JsonObject,
  path: string,
  creating?: OperationRef,
): { parent: Container; last: string } {
  const parts = tokens(path);
  let node: unknown = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    const part = parts[i];
    if (Array.isArray(node)) {
      node = node[Number(part)];
    } else if (node !== null && typeof node === "object") {
      const obj = node as JsonObject;
      if (!(part in obj) && creating) {
        throw badRequest(
          `For Operation(${creating.index}): ${creating.name} Operation can only create a child object of an existing node(array or object) and cannot create path recursively, no path found beyond: '${part}'. Learn more: https://aka.ms/cosmosdbpatchdocs`,
        );
      }
      node = obj[part];
    } else {
      node = undefined;
    }
    if (node === null || typeof node !== "object") {
      throw badRequest(
        `Patch path '${path}': '${parts.slice(0, i + 1).join("/")}' is not an object or array.`,
      );
    }
  }
  return { parent: node as Container, last: parts[parts.length - 1] };
}

function arrayIndex(arr: unknown[], token: string, path: string, allowEnd: boolean): number {
  if (token === "-" && allowEnd) return arr.length;
  if (!/^\d+$/.test(token)) throw badRequest(`Patch path '${path}': '${token}' is not an array index.`);
  const i = Number(token);
  if (i > arr.length || (!allowEnd && i >= arr.length)) {
    throw badRequest(`Patch path '${path}': index ${i} is out of bounds.`);
  }
  return i;
}

function getAt(doc: JsonObject, path: string): unknown {
  const { parent, last } = parentOf(doc, path);
  if (Array.isArray(parent)) return parent[arrayIndex(parent, last, path, false)];
  if (!(last in parent)) throw badRequest(`Patch path '${path}' does not exist in the document.`);
  return parent[last];
}

function removeAt(doc: JsonObject, path: string): unknown {
  const { parent, last } = parentOf(doc, path);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, last, path, false), 1)[0];
  if (!(last in parent)) throw badRequest(`Patch path '${path}' does not exist in the document.`);
  const old = parent[last];
  delete parent[last];
  return old;
}

/**
 * Applies patch operations to a deep copy of `doc` (Cosmos semantics: add inserts into arrays,
 * set creates or replaces, replace and remove need the path to exist, incr adds to a number and creates it; none
 * creates a missing parent).
 * Paths naming `id`, system properties or the partition key are refused by the caller.
 */
export function applyPatch(doc: JsonObject, operations: PatchOperation[]): JsonObject {
  const out = structuredClone(doc);
  for (const [i, op] of operations.entries()) {
    const creating = { index: i + 1, name: OP_NAMES[op.op] };
    switch (op.op) {
      case "add":
      case "set": {
        const { parent, last } = parentOf(out, op.path, creating);
        if (Array.isArray(parent)) {
          const at = arrayIndex(parent, last, op.path, true);
          if (op.op === "add") parent.splice(at, 0, op.value);
          else parent[at] = op.value;
        } else {
          parent[last] = op.value;
        }
        break;
      }
      case "replace": {
        const { parent, last } = parentOf(out, op.path);
        if (Array.isArray(parent)) parent[arrayIndex(parent, last, op.path, false)] = op.value;
        else if (last in parent) parent[last] = op.value;
        else throw badRequest(`Patch 'replace' path '${op.path}' does not exist in the document.`);
        break;
      }
      case "remove":
        removeAt(out, op.path);
        break;
      case "incr": {
        if (typeof op.value !== "number")
          throw badRequest(`Patch 'incr' at '${op.path}' needs a numeric value.`);
        const { parent, last } = parentOf(out, op.path, creating);
        const current = Array.isArray(parent)
          ? parent[arrayIndex(parent, last, op.path, false)]
          : (parent as JsonObject)[last];
        if (current !== undefined && typeof current !== "number") {
          throw badRequest(`Patch 'incr' at '${op.path}': the current value is not a number.`);
        }
        const next = ((current as number | undefined) ?? 0) + op.value;
        if (Array.isArray(parent)) parent[Number(last)] = next;
        else parent[last] = next;
        break;
      }
      case "move": {
        const from = op.from as string;
        const value = getAt(out, from);
        removeAt(out, from);
        const { parent, last } = parentOf(out, op.path, creating);
        if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, op.path, true), 0, value);
        else parent[last] = value;
        break;
      }
    }
  }
  return out;
}
