import type { TaskHubError } from "./errors.js";
import { refused } from "./http-errors.js";
import { payloadProblem } from "./limits.js";
import type { EntityFilter, InstanceFilter, RuntimeStatus } from "./types.js";

/**
 * What the durable HTTP API (client-api.ts) reads from a request, checked at the door: query parameters (a malformed
 * one is a 400 naming it, where the extension would use a silent default) and payloads (input, event data, reasons:
 * over DURABLE_MAX_PAYLOAD_BYTES → 413 PayloadTooLarge, nested deeper than DURABLE_LIMITS.payloadDepth → 400
 * PayloadTooDeep), so that nothing the task hub cannot store reaches it.
 */

export const RUNTIME_STATUSES: readonly RuntimeStatus[] = [
  "Pending",
  "Running",
  "Completed",
  "ContinuedAsNew",
  "Failed",
  "Terminated",
  "Suspended",
];
/** The longest create-and-wait a request may ask for (s); the extension has none, but a request must end. */
export const MAX_WAIT_SECONDS = 3600;
/**
 * The largest page a list may ask for (`top`). The extension takes any int; here one page is one query whose
 * instances each may carry an input and output of DURABLE_MAX_PAYLOAD_BYTES, so a page is bounded.
 */
export const MAX_LIST_PAGE_SIZE = 1000;
/**
 * The longest `x-ms-continuation-token` accepted. Node's HTTP parser limits all headers to 16 KiB together, so a
 * token this long could not come back from Cosmos DB through a request anyway.
 */
export const MAX_CONTINUATION_TOKEN_CHARS = 16_384;

const bad = (message: string): TaskHubError => refused(400, "InvalidParameter", message);

/** A query parameter's single value (the extension reads the first); names are case-insensitive. */
export function single(query: URLSearchParams, name: string): string | undefined {
  for (const [k, v] of query) if (k.toLowerCase() === name.toLowerCase()) return v;
  return undefined;
}
function all(query: URLSearchParams, name: string): string[] {
  const out: string[] = [];
  for (const [k, v] of query) if (k.toLowerCase() === name.toLowerCase()) out.push(v);
  return out;
}

/** bool.TryParse: true/false, any case, surrounding spaces allowed; anything else → 400. */
export function boolParam(query: URLSearchParams, name: string, fallback: boolean): boolean {
  const v = single(query, name);
  if (v === undefined || v === "") return fallback;
  const t = v.trim().toLowerCase();
  if (t === "true") return true;
  if (t === "false") return false;
  throw bad(`Query parameter '${name}' must be true or false; got ${JSON.stringify(v.slice(0, 100))}.`);
}

function dateParam(query: URLSearchParams, name: string): string | undefined {
  const v = single(query, name);
  if (v === undefined || v === "") return undefined;
  const ms = Date.parse(v.trim());
  if (Number.isNaN(ms)) {
    throw bad(
      `Query parameter '${name}' must be an ISO 8601 date-time; got ${JSON.stringify(v.slice(0, 100))}.`,
    );
  }
  return new Date(ms).toISOString();
}

/** Seconds (TimeSpan.FromSeconds(double)), 0 … MAX_WAIT_SECONDS. */
export function secondsParam(query: URLSearchParams, name: string): number | undefined {
  const v = single(query, name);
  if (v === undefined || v === "") return undefined;
  const n = Number(v.trim());
  if (v.trim() === "" || !Number.isFinite(n) || n < 0 || n > MAX_WAIT_SECONDS) {
    throw bad(
      `Query parameter '${name}' must be a number of seconds from 0 to ${MAX_WAIT_SECONDS}; got ${JSON.stringify(v.slice(0, 100))}.`,
    );
  }
  return n;
}

/**
 * runtimeStatus=A,B (also repeated): names of OrchestrationRuntimeStatus, any case. "Canceled" is a valid
 * name that no instance has. Returns undefined when absent, [] when only Canceled was asked for.
 */
function statusesParam(query: URLSearchParams): RuntimeStatus[] | undefined {
  const names = all(query, "runtimeStatus")
    .flatMap((v) => v.split(","))
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length === 0) return undefined;
  const out = new Set<RuntimeStatus>();
  for (const name of names) {
    if (name.toLowerCase() === "canceled") continue;
    const found = RUNTIME_STATUSES.find((s) => s.toLowerCase() === name.toLowerCase());
    if (!found) {
      throw bad(
        `runtimeStatus ${JSON.stringify(name.slice(0, 100))} is not one of ${[...RUNTIME_STATUSES, "Canceled"].join(", ")}.`,
      );
    }
    out.add(found);
  }
  return [...out];
}

/** A continuation token as a header may carry it: printable ASCII, bounded; anything else → 400 at the door. */
function continuationTokenOf(token: string | undefined): string | undefined {
  if (token === undefined || token === "") return undefined;
  if (token.length > MAX_CONTINUATION_TOKEN_CHARS || !/^[\x20-\x7e]+$/.test(token)) {
    throw refused(
      400,
      "InvalidContinuationToken",
      `The x-ms-continuation-token header must be printable ASCII of at most ${MAX_CONTINUATION_TOKEN_CHARS} characters, as the previous page returned it.`,
    );
  }
  return token;
}

/** The list (or purge) filter of a request; `none` when only Canceled was asked for (nothing can match). */
export function filterOf(
  query: URLSearchParams,
  continuationToken: string | undefined,
  forPurge: boolean,
): { filter: InstanceFilter; none: boolean } {
  const filter: InstanceFilter = {};
  const from = dateParam(query, "createdTimeFrom");
  const to = dateParam(query, "createdTimeTo");
  if (from !== undefined) filter.createdTimeFrom = from;
  if (to !== undefined) filter.createdTimeTo = to;
  const statuses = statusesParam(query);
  if (statuses !== undefined && statuses.length > 0) filter.runtimeStatus = statuses;
  if (forPurge) {
    // The extension refuses a purge without a lower bound and bounds it above by now.
    if (from === undefined) throw bad("Please provide value for 'createdTimeFrom' parameter.");
    filter.createdTimeTo ??= new Date().toISOString();
  } else {
    const prefix = single(query, "instanceIdPrefix");
    if (prefix !== undefined && prefix !== "") filter.instanceIdPrefix = prefix;
    const top = topParam(query);
    if (top !== undefined) filter.top = top;
    filter.showInput = boolParam(query, "showInput", true);
    const token = continuationTokenOf(continuationToken);
    if (token !== undefined) filter.continuationToken = token;
  }
  return { filter, none: statuses !== undefined && statuses.length === 0 };
}

/** A page size (`top`): a whole number 1 … MAX_LIST_PAGE_SIZE; anything else → 400. */
function topParam(query: URLSearchParams): number | undefined {
  const top = single(query, "top");
  if (top === undefined || top === "") return undefined;
  const n = /^\s*\d{1,12}\s*$/.test(top) ? Number(top) : Number.NaN;
  if (!(n >= 1 && n <= MAX_LIST_PAGE_SIZE)) {
    throw bad(
      `Query parameter 'top' must be a whole number from 1 to ${MAX_LIST_PAGE_SIZE}; got ${JSON.stringify(top.slice(0, 100))}.`,
    );
  }
  return n;
}

/**
 * The entity listing's query (`GET entities[/{name}]`, the extension's EntityQuery): lastOperationTimeFrom/To,
 * top, fetchState, and the continuation token of the previous page; a malformed one is a 400 naming it.
 */
export function entityFilterOf(
  query: URLSearchParams,
  name: string | undefined,
  continuationToken: string | undefined,
): EntityFilter {
  const filter: EntityFilter = { fetchState: boolParam(query, "fetchState", false) };
  if (name !== undefined) filter.name = name;
  const from = dateParam(query, "lastOperationTimeFrom");
  const to = dateParam(query, "lastOperationTimeTo");
  if (from !== undefined) filter.lastOperationTimeFrom = from;
  if (to !== undefined) filter.lastOperationTimeTo = to;
  const top = topParam(query);
  if (top !== undefined) filter.top = top;
  const token = continuationTokenOf(continuationToken);
  if (token !== undefined) filter.continuationToken = token;
  return filter;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A request body as JSON text for the task hub; null when empty. Checked in this order, so that nothing large or
 * deep is decoded or parsed: its size (413 PayloadTooLarge, before decoding), UTF-8, then size and nesting of the
 * text (payloadProblem: the depth is counted on the text, without recursion), and only then JSON.parse (400).
 * `what` names the payload in the answer ("The orchestration input").
 */
export function jsonPayload(body: Uint8Array, what: string, maxBytes: number): string | null {
  if (body.length > maxBytes) {
    // The same answer payloadProblem gives, without decoding a body that may be up to the server's 100 MB.
    throw refused(
      413,
      "PayloadTooLarge",
      `${what} is ${body.length} bytes; the task hub stores at most ${maxBytes} (DURABLE_MAX_PAYLOAD_BYTES).`,
    );
  }
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw refused(400, "InvalidJson", `${what} is not UTF-8 text.`);
  }
  if (text.trim() === "") return null;
  checkText(text, what, maxBytes);
  try {
    JSON.parse(text);
  } catch (e) {
    throw refused(400, "InvalidJson", `Invalid JSON content: ${(e as Error).message}`);
  }
  return text;
}

/** payloadProblem of a JSON text (a reason, a stored input) as the refusal the API answers. */
export function checkText(text: string | null, what: string, maxBytes: number): void {
  const p = payloadProblem(text, what, maxBytes);
  if (p) throw refused(p.statusCode, p.code, p.message);
}
