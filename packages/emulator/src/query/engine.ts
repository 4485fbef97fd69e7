import { badRequest, CosmosError } from "../errors.js";
import type { Query } from "./ast.js";
import { compileQuery } from "./compile.js";
import { type CompositeIndexPath, executeQuery, RowLimitExceeded } from "./evaluate.js";
import { WORKER_MAX_ROWS } from "./jobs.js";
import { QueryCompileError } from "./parser.js";
import { type PartitionedQueryExecutionInfo, queryPlan } from "./plan.js";
import { runInWorker } from "./pool.js";
import { parseResumeFilter, type ResumeFilter } from "./resume-filter.js";

/**
 * The emulator's query engine: its own parser and evaluator of the NoSQL query language (parser.ts,
 * evaluate.ts), the query plan the gateway hands the SDK (plan.ts), and the policy of where a query runs:
 * small queries inline, expensive ones in a worker thread (pool.ts) so the event loop keeps serving others.
 */

export interface QueryParameter {
  name: string;
  value: unknown;
}

export interface SqlQuerySpec {
  query: string;
  parameters?: QueryParameter[];
  /** Where a resumed ORDER BY query starts (sent by the .NET SDK; see resume-filter.ts). */
  resumeFilter?: ResumeFilter;
}

/**
 * The service's query text limit: 256 KB (`maxSqlQueryInputLength` 262144 in the account's
 * queryEngineConfiguration; https://learn.microsoft.com/azure/cosmos-db/concepts-limits#sql-query-limits).
 */
export const MAX_QUERY_TEXT_BYTES = 262_144;

/** Rows a query may produce on the event loop before it moves to a worker thread (a few ms of work). */
const INLINE_MAX_ROWS = 50_000;
/** Documents × query text size (in 512-byte units) above which a query goes straight to a worker. */
const INLINE_MAX_WORK = 20_000;

export function parseQuerySpec(body: unknown): SqlQuerySpec {
  if (typeof body === "string") return checkLength({ query: body });
  if (body === null || typeof body !== "object" || typeof (body as SqlQuerySpec).query !== "string") {
    throw badRequest("The query body must be {query: string, parameters?: [{name, value}]}.");
  }
  const spec = body as SqlQuerySpec;
  if (spec.parameters !== undefined && spec.parameters !== null) {
    if (!Array.isArray(spec.parameters))
      throw badRequest("Query parameters must be an array of {name, value}.");
    for (const p of spec.parameters) {
      if (p === null || typeof p !== "object" || typeof p.name !== "string" || !p.name.startsWith("@")) {
        throw badRequest("Each query parameter needs a name starting with '@'.");
      }
    }
  }
  const resumeFilter = parseResumeFilter((body as { resumeFilter?: unknown }).resumeFilter);
  return checkLength({ query: spec.query, parameters: spec.parameters ?? undefined, resumeFilter });
}

function checkLength(spec: SqlQuerySpec): SqlQuerySpec {
  const bytes = Buffer.byteLength(spec.query);
  if (bytes > MAX_QUERY_TEXT_BYTES) {
    throw badRequest(
      `The query text is ${bytes} bytes long, which exceeds the maximum allowed query text length of ${MAX_QUERY_TEXT_BYTES} bytes (256 KB).`,
    );
  }
  return spec;
}

function parametersOf(spec: SqlQuerySpec): Map<string, unknown> {
  return new Map((spec.parameters ?? []).map((p) => [p.name, p.value]));
}

/** Parses a query; a syntax error is a 400 in the service's shape (`{"errors":[...]}`). */
export function compile(spec: SqlQuerySpec): Query {
  try {
    return compileQuery(spec.query);
  } catch (e) {
    throw asCosmosError(e, spec.query);
  }
}

function asCosmosError(e: unknown, text: string): unknown {
  if (e instanceof QueryCompileError || (e as Error)?.name === "QueryCompileError") {
    const err = e as QueryCompileError;
    const detail = JSON.stringify({
      errors: [
        {
          severity: "Error",
          location: { start: err.start ?? 0, end: err.end ?? 0 },
          code: err.code ?? "SC1001",
          message: err.message,
        },
      ],
    });
    const shown = text.length > 1000 ? `${text.slice(0, 1000)}…` : text;
    return badRequest(`Message: ${detail}\r\nQuery: ${shown}`);
  }
  if (e instanceof RowLimitExceeded || (e as Error)?.name === "RowLimitExceeded") {
    return badRequest(
      `${(e as Error).message} This emulator refuses such queries; narrow the JOINs or the filter.`,
    );
  }
  return e;
}

export interface QueryDocument {
  body: unknown;
  /** The document's stored JSON (what a worker thread receives). */
  json: string;
  /** Its physical range's position (ORDER BY ties: ranges left to right, as the SDKs merge them). */
  tieGroup?: number;
}

export interface QueryOutcome {
  /** Result rows: values, or their JSON text when `rowsAreJson` (rows computed in a worker). */
  rows: unknown[];
  rowsAreJson: boolean;
  /** Per row, the index in `docs` of the document it came from (-1 when none: aggregates). */
  sources: number[];
  compileMs: number;
  executionMs: number;
}

export interface RunOptions {
  compositeIndexes?: CompositeIndexPath[][];
  /** The query already parsed (see `compileTimed`), so that a long text is not parsed twice. */
  parsed?: { query: Query; compileMs: number };
}

/** `compile`, timed (for the query metrics). */
export function compileTimed(spec: SqlQuerySpec): { query: Query; compileMs: number } {
  const t0 = performance.now();
  const query = compile(spec);
  return { query, compileMs: performance.now() - t0 };
}

/** Runs a query over a few resources (databases, containers, offers) on the event loop; all results. */
export function runQuery(spec: SqlQuerySpec, items: readonly unknown[]): unknown[] {
  try {
    return executeQuery(compile(spec), items, { parameters: parametersOf(spec), maxRows: INLINE_MAX_ROWS })
      .rows;
  } catch (e) {
    throw asCosmosError(e, spec.query);
  }
}

/**
 * Runs a query over documents (given in the order results should take when the query has no ORDER BY).
 * Answers synchronously when the query is cheap, otherwise from a worker thread.
 */
export function runDocumentQuery(
  spec: SqlQuerySpec,
  docs: readonly QueryDocument[],
  options: RunOptions = {},
): QueryOutcome | Promise<QueryOutcome> {
  const { query, compileMs } = options.parsed ?? compileTimed(spec);
  const work = docs.length * Math.max(1, spec.query.length / 512) * Math.max(1, query.from.length);
  if (work <= INLINE_MAX_WORK) {
    try {
      const t1 = performance.now();
      const { rows, sources } = executeQuery(
        query,
        docs.map((d) => d.body),
        {
          parameters: parametersOf(spec),
          compositeIndexes: options.compositeIndexes,
          maxRows: INLINE_MAX_ROWS,
          tieGroups: tieGroupsOf(docs),
        },
      );
      return { rows, rowsAreJson: false, sources, compileMs, executionMs: performance.now() - t1 };
    } catch (e) {
      if (!(e instanceof RowLimitExceeded)) throw asCosmosError(e, spec.query);
      // Too much for the event loop: start over in a worker.
    }
  }
  return runOffThread(spec, docs, options, compileMs);
}

function tieGroupsOf(docs: readonly QueryDocument[]): number[] | undefined {
  return docs.some((d) => d.tieGroup !== undefined) ? docs.map((d) => d.tieGroup ?? 0) : undefined;
}

async function runOffThread(
  spec: SqlQuerySpec,
  docs: readonly QueryDocument[],
  options: RunOptions,
  compileMs: number,
): Promise<QueryOutcome> {
  let result: Awaited<ReturnType<typeof runInWorker>>;
  try {
    result = await runInWorker({
      text: spec.query,
      parameters: spec.parameters ?? [],
      docs: docs.map((d) => d.json),
      compositeIndexes: options.compositeIndexes,
      tieGroups: tieGroupsOf(docs),
    });
  } catch (e) {
    throw new CosmosError(
      503,
      "ServiceUnavailable",
      `The query worker failed while running this query (${(e as Error).message}); it was likely too large for this emulator (limit: ${WORKER_MAX_ROWS} rows).`,
    );
  }
  if ("error" in result) {
    const err = Object.assign(new Error(result.error.message), result.error);
    throw asCosmosError(err, spec.query);
  }
  return {
    rows: result.rows,
    rowsAreJson: true,
    sources: result.sources,
    compileMs,
    executionMs: result.executionMs,
  };
}

/** The query plan for the SDK; the query is also checked as the service checks it (400 when invalid). */
export function planQuery(spec: SqlQuerySpec, options: RunOptions = {}): PartitionedQueryExecutionInfo {
  const query = compile(spec);
  const parameters = parametersOf(spec);
  try {
    // Executing over no documents runs every compile-time check (identifiers, functions, GROUP BY, indexes).
    executeQuery(query, [], { parameters, compositeIndexes: options.compositeIndexes });
    return queryPlan(query, parameters);
  } catch (e) {
    throw asCosmosError(e, spec.query);
  }
}

/** Evaluates a patch/batch condition `FROM c WHERE ...` against one document. */
export function conditionHolds(condition: string, doc: unknown): boolean {
  const text = /^\s*select\b/i.test(condition) ? condition : `SELECT * ${condition}`;
  const spec = checkLength({ query: text });
  try {
    return (
      executeQuery(compile(spec), [doc], { parameters: new Map(), maxRows: INLINE_MAX_ROWS }).rows.length > 0
    );
  } catch (e) {
    throw asCosmosError(e, text);
  }
}
