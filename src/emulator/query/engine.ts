import { createRequire } from "node:module";
import { badRequest } from "../errors.js";

/**
 * Adapter over @zeit/cosmosdb-query, the maintained Cosmos SQL parser/executor (it compiles a query to a
 * JS function once; compiled queries are cached here by text).
 */
interface ZeitQuery {
  exec(
    coll: unknown[],
    options?: { parameters?: QueryParameter[]; udf?: Record<string, unknown> },
  ): { result: unknown[]; continuation: unknown };
}

export interface QueryParameter {
  name: string;
  value: unknown;
}

const require = createRequire(import.meta.url);
const compile = (require("@zeit/cosmosdb-query") as { default: (q: string) => ZeitQuery }).default;

/** Compiled queries kept, least recently used evicted first. */
const CACHE_LIMIT = 512;
const cache = new Map<string, ZeitQuery>();

function compiled(text: string): ZeitQuery {
  let q = cache.get(text);
  if (q) {
    cache.delete(text);
    cache.set(text, q);
    return q;
  }
  try {
    q = compile(text);
  } catch (e) {
    throw badRequest(`Syntax error in query '${text}': ${(e as Error).message}`);
  }
  cache.set(text, q);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  return q;
}

export interface SqlQuerySpec {
  query: string;
  parameters?: QueryParameter[];
}

export function parseQuerySpec(body: unknown): SqlQuerySpec {
  if (typeof body === "string") return { query: body };
  if (body === null || typeof body !== "object" || typeof (body as SqlQuerySpec).query !== "string") {
    throw badRequest("The query body must be {query: string, parameters?: [{name, value}]}.");
  }
  const spec = body as SqlQuerySpec;
  if (spec.parameters !== undefined) {
    if (!Array.isArray(spec.parameters))
      throw badRequest("Query parameters must be an array of {name, value}.");
    for (const p of spec.parameters) {
      if (p === null || typeof p !== "object" || typeof p.name !== "string" || !p.name.startsWith("@")) {
        throw badRequest("Each query parameter needs a name starting with '@'.");
      }
    }
  }
  return spec;
}

/** Runs a Cosmos SQL query over documents and returns every result (paging is the caller's). */
export function runQuery(spec: SqlQuerySpec, docs: readonly unknown[]): unknown[] {
  const distinct = splitDistinct(spec);
  const q = compiled(distinct ? distinct.query : spec.query);
  let result: unknown[];
  try {
    result = q.exec(docs as unknown[], { parameters: spec.parameters ?? [] }).result;
  } catch (e) {
    throw badRequest(`The query '${spec.query}' failed: ${(e as Error).message}`);
  }
  return distinct ? applyDistinct(result, distinct.top) : result;
}

/** `SELECT [TOP n] DISTINCT [TOP n] ...` (the TOP may stand on either side; n a literal or a parameter). */
const SELECT_DISTINCT = /^(\s*select\s+)(?:top\s+(\d+|@\w+)\s+)?distinct\s+(?:top\s+(\d+|@\w+)\s+)?/i;

/**
 * @zeit/cosmosdb-query 0.7.2 cannot parse DISTINCT: the query runs without it (and without its TOP,
 * which applies after duplicates are removed), then both are applied here.
 */
function splitDistinct(spec: SqlQuerySpec): { query: string; top?: number } | undefined {
  const m = SELECT_DISTINCT.exec(spec.query);
  if (!m) return undefined;
  const query = m[1] + spec.query.slice(m[0].length);
  const raw = m[2] ?? m[3];
  if (raw === undefined) return { query };
  const top = raw.startsWith("@") ? spec.parameters?.find((p) => p.name === raw)?.value : Number(raw);
  if (typeof top !== "number" || !Number.isInteger(top) || top < 0)
    throw badRequest(`The TOP value ${raw} in '${spec.query}' must be a non-negative integer.`);
  return { query, top };
}

/** Keeps the first of structurally equal results (object key order does not matter), then applies TOP. */
function applyDistinct(results: unknown[], top: number | undefined): unknown[] {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const r of results) {
    if (top !== undefined && out.length >= top) break;
    const key = canonicalJson(r);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(r);
  }
  return out;
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "undefined";
}

/** Evaluates a patch/batch condition `FROM c WHERE ...` against one document. */
export function conditionHolds(condition: string, doc: unknown): boolean {
  const text = /^\s*select\b/i.test(condition) ? condition : `SELECT * ${condition}`;
  return runQuery({ query: text }, [doc]).length > 0;
}
