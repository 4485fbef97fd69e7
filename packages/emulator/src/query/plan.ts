import {
  aggregateCall,
  type CallExpr,
  type CollectionExpr,
  containsAggregate,
  type Expr,
  type Query,
} from "./ast.js";
import { QueryCompileError } from "./parser.js";

/**
 * The query plan (`partitionedQueryExecutionInfo`) the gateway returns for `x-ms-cosmos-is-query-plan-request`:
 * what the SDK must merge client-side when it runs a query range by range (TOP, OFFSET/LIMIT, ORDER BY,
 * DISTINCT, aggregates, GROUP BY), and the rewritten query each range then executes. The shapes follow the
 * service's planner (its outputs are what the SDK's pipeline components consume: `orderByItems`/`payload`
 * for ORDER BY, `groupByItems`/`payload` and `{item, item2}` partial aggregates for GROUP BY and aggregates).
 */

export interface QueryInfo {
  distinctType: "None" | "Ordered" | "Unordered";
  top: number | null;
  offset: number | null;
  limit: number | null;
  orderBy: ("Ascending" | "Descending")[];
  orderByExpressions: string[];
  groupByExpressions: string[];
  groupByAliases: string[];
  aggregates: string[];
  groupByAliasToAggregateType: Record<string, string | null>;
  rewrittenQuery: string;
  hasSelectValue: boolean;
  dCountInfo: null;
  hasNonStreamingOrderBy: boolean;
}

export interface PartitionedQueryExecutionInfo {
  partitionedQueryExecutionInfoVersion: 2;
  queryInfo: QueryInfo;
  queryRanges: { min: string; max: string; isMinInclusive: boolean; isMaxInclusive: boolean }[];
}

/** The placeholder the SDK replaces with `true` or with its resume filter (OrderByQueryRangeStrategy). */
export const ORDER_BY_FILTER = "{documentdb-formattableorderbyquery-filter}";

const AGGREGATE_NAMES: Record<string, string> = {
  COUNT: "Count",
  SUM: "Sum",
  AVG: "Average",
  MIN: "Min",
  MAX: "Max",
};

export function queryPlan(q: Query, parameters: ReadonlyMap<string, unknown>): PartitionedQueryExecutionInfo {
  const count = (e: Expr | undefined): number | null => {
    if (!e) return null;
    const v = e.k === "lit" ? e.value : e.k === "param" ? parameters.get(e.name) : undefined;
    return typeof v === "number" ? v : null;
  };
  const offset = count(q.offset);
  const limit = count(q.limit);
  const info: QueryInfo = {
    distinctType: q.distinct ? (q.orderBy ? "Ordered" : "Unordered") : "None",
    top: count(q.top),
    offset,
    limit,
    orderBy: [],
    orderByExpressions: [],
    groupByExpressions: [],
    groupByAliases: [],
    aggregates: [],
    groupByAliasToAggregateType: {},
    rewrittenQuery: "",
    hasSelectValue: q.select.kind === "value",
    dCountInfo: null,
    hasNonStreamingOrderBy: false,
  };
  const grouped = q.groupBy !== undefined || selectExprs(q).some(containsAggregate);
  // OFFSET n LIMIT m runs as OFFSET 0 LIMIT n+m on every range; the SDK skips the first n of the merge.
  const rangeOffsetLimit = offset !== null && limit !== null ? { k: 0, n: offset + limit } : undefined;

  if (grouped) {
    if (q.orderBy)
      throw planError(
        "ORDER BY is not supported together with GROUP BY or aggregates in a cross-partition query.",
      );
    info.groupByExpressions = (q.groupBy ?? []).map(printExpr);
    const groupByItems = q.groupBy
      ? `[${q.groupBy.map((g) => `{"item": ${printExpr(g)}}`).join(", ")}] AS groupByItems, `
      : "";
    let payload: string;
    if (q.select.kind === "value") {
      const e = q.select.expr;
      const agg = aggregateCall(e);
      if (agg) {
        info.aggregates = [AGGREGATE_NAMES[agg.name]];
        payload = `[${partialAggregate(agg)}]`;
      } else {
        rejectComposedAggregate(e);
        payload = printExpr(e);
      }
      info.rewrittenQuery = q.groupBy
        ? `SELECT ${groupByItems}${payload} AS payload${printFromOn(q)}`
        : `SELECT VALUE ${payload}${printFromOn(q)}`;
    } else if (q.select.kind === "list") {
      let unnamed = 0;
      const fields = q.select.items.map((it) => {
        const alias = it.alias ?? implicitName(it.expr) ?? `$${++unnamed}`;
        info.groupByAliases.push(alias);
        const agg = aggregateCall(it.expr);
        if (agg) {
          info.groupByAliasToAggregateType[alias] = AGGREGATE_NAMES[agg.name];
          return `${JSON.stringify(alias)}: ${partialAggregate(agg)}`;
        }
        rejectComposedAggregate(it.expr);
        info.groupByAliasToAggregateType[alias] = null;
        return `${JSON.stringify(alias)}: ${printExpr(it.expr)}`;
      });
      payload = `{${fields.join(", ")}}`;
      info.rewrittenQuery = `SELECT ${groupByItems}${payload} AS payload${printFromOn(q)}`;
    } else {
      throw planError("'SELECT *' is not allowed with GROUP BY.");
    }
  } else if (q.orderBy) {
    info.orderBy = q.orderBy.map((s) => (s.desc ? "Descending" : "Ascending"));
    info.orderByExpressions = q.orderBy.map((s) => printExpr(s.expr));
    const root = q.from[0]?.alias ?? "c";
    const items = `[${q.orderBy.map((s) => `{"item": ${printExpr(s.expr)}}`).join(", ")}]`;
    let payload: string;
    let defined: string | undefined;
    if (q.select.kind === "star") payload = root;
    else if (q.select.kind === "value") {
      payload = printExpr(q.select.expr);
      defined = `IS_DEFINED(${payload})`;
    } else {
      let unnamed = 0;
      payload = `{${q.select.items
        .map(
          (it) =>
            `${JSON.stringify(it.alias ?? implicitName(it.expr) ?? `$${++unnamed}`)}: ${printExpr(it.expr)}`,
        )
        .join(", ")}}`;
    }
    let filter = q.where ? `(${printExpr(q.where)} AND (${ORDER_BY_FILTER}))` : `(${ORDER_BY_FILTER})`;
    if (defined) filter = `(${filter} AND ${defined})`;
    const top = q.top ? `TOP ${printExpr(q.top)} ` : "";
    info.rewrittenQuery =
      `SELECT ${top}${root}._rid, ${items} AS orderByItems, ${payload} AS payload\n` +
      `FROM ${printFrom(q)}\nWHERE ${filter}\nORDER BY ${printOrderBy(q)}` +
      (rangeOffsetLimit ? `\nOFFSET ${rangeOffsetLimit.k} LIMIT ${rangeOffsetLimit.n}` : "");
  } else if (q.distinct) {
    // Each range returns its distinct values; TOP and OFFSET/LIMIT apply after the merge.
    if (q.top || q.offset)
      info.rewrittenQuery = printQuery({ ...q, top: undefined, offset: undefined, limit: undefined });
  } else if (rangeOffsetLimit) {
    info.rewrittenQuery = printQuery({
      ...q,
      offset: { k: "lit", value: rangeOffsetLimit.k },
      limit: { k: "lit", value: rangeOffsetLimit.n },
    });
  }
  return {
    partitionedQueryExecutionInfoVersion: 2,
    queryInfo: info,
    queryRanges: [{ min: "", max: "FF", isMinInclusive: true, isMaxInclusive: false }],
  };
}

/**
 * Whether a query's rows are built by the SDK itself when it spans partitions: GROUP BY or aggregates with a
 * select list (not VALUE). The SDK's GroupByEndpointComponent makes each alias of the rewritten payload a key of
 * the row, and an aggregate over nothing (MIN/MAX/AVG of a missing field) keeps its key with the value
 * `undefined`, which no JSON answer can carry; so such a query is refused on the direct path as the gateway
 * refuses it (400/1004 with this plan), and the SDK runs its pipeline.
 */
export function isGroupedSelectList(q: Query): boolean {
  return q.select.kind === "list" && (q.groupBy !== undefined || selectExprs(q).some(containsAggregate));
}

/**
 * Whether a query aggregates its whole scope into one row (aggregates, no GROUP BY). A partition of the service
 * computes such a row only once it has read everything, so its page is the last: no continuation follows it even
 * when it fills a page of one (the SDK's GroupByEndpointComponent otherwise keeps hasMoreResults() true forever).
 */
export function isWholeAggregate(q: Query): boolean {
  return q.groupBy === undefined && selectExprs(q).some(containsAggregate);
}

function planError(message: string): QueryCompileError {
  return new QueryCompileError(message, 0, 0, "SC2100");
}

function rejectComposedAggregate(e: Expr): void {
  if (containsAggregate(e))
    throw planError("Compositions of aggregates and other expressions are not allowed.");
}

/** What each range returns for one aggregate so that the SDK's aggregators can combine ranges. */
function partialAggregate(call: CallExpr): string {
  const arg = call.args.map(printExpr).join(", ");
  switch (call.name) {
    case "AVG":
      return `{"item": {"sum": SUM(${arg}), "count": COUNT(${arg})}}`;
    case "MIN":
      return `{"item": MIN(${arg}), "item2": {"min": MIN(${arg}), "count": COUNT(${arg})}}`;
    case "MAX":
      return `{"item": MAX(${arg}), "item2": {"max": MAX(${arg}), "count": COUNT(${arg})}}`;
    default:
      return `{"item": ${call.name}(${arg})}`;
  }
}

function selectExprs(q: Query): Expr[] {
  if (q.select.kind === "value") return [q.select.expr];
  if (q.select.kind === "list") return q.select.items.map((i) => i.expr);
  return [];
}

function implicitName(e: Expr): string | undefined {
  if (e.k === "ref") return e.name;
  if (e.k === "member" && e.prop.k === "lit" && typeof e.prop.value === "string") return e.prop.value;
  return undefined;
}

/** `\nFROM ...[\nWHERE ...][\nGROUP BY ...]` for the grouped rewrites. */
function printFromOn(q: Query): string {
  let s = q.from.length > 0 ? `\nFROM ${printFrom(q)}` : "";
  if (q.where) s += `\nWHERE ${printExpr(q.where)}`;
  if (q.groupBy) s += `\nGROUP BY ${q.groupBy.map(printExpr).join(", ")}`;
  return s;
}

function printFrom(q: Query): string {
  return q.from
    .map((s, i) => {
      const body = s.iterate
        ? `${s.alias} IN ${printCollection(s.expr)}`
        : s.expr.k === "root" && s.expr.name === s.alias
          ? s.alias
          : `${printCollection(s.expr)} AS ${s.alias}`;
      return i === 0 ? body : `JOIN ${body}`;
    })
    .join(" ");
}

function printCollection(c: CollectionExpr): string {
  switch (c.k) {
    case "root":
      return c.name;
    case "path":
      return typeof c.prop === "number"
        ? `${printCollection(c.base)}[${c.prop}]`
        : /^[A-Za-z_][A-Za-z0-9_]*$/.test(c.prop)
          ? `${printCollection(c.base)}.${c.prop}`
          : `${printCollection(c.base)}[${JSON.stringify(c.prop)}]`;
    case "subquery":
      return `(${printQuery(c.query)})`;
  }
}

function printOrderBy(q: Query): string {
  return (q.orderBy ?? [])
    .map((s) => `${printExpr(s.expr)}${s.explicit ? (s.desc ? " DESC" : " ASC") : ""}`)
    .join(", ");
}

export function printQuery(q: Query): string {
  let s = "SELECT ";
  if (q.distinct) s += "DISTINCT ";
  if (q.top) s += `TOP ${printExpr(q.top)} `;
  if (q.select.kind === "star") s += "*";
  else if (q.select.kind === "value") s += `VALUE ${printExpr(q.select.expr)}`;
  else
    s += q.select.items
      .map((it) => (it.alias ? `${printExpr(it.expr)} AS ${it.alias}` : printExpr(it.expr)))
      .join(", ");
  s += printFromOn(q);
  if (q.orderBy) s += `\nORDER BY ${printOrderBy(q)}`;
  if (q.offset && q.limit) s += `\nOFFSET ${printExpr(q.offset)} LIMIT ${printExpr(q.limit)}`;
  return s;
}

/** Prints an expression as the service's planner does (every operation parenthesized). */
export function printExpr(e: Expr): string {
  switch (e.k) {
    case "lit":
      return e.value === undefined ? "undefined" : JSON.stringify(e.value);
    case "param":
      return e.name;
    case "ref":
      return e.name;
    case "member": {
      const obj = printExpr(e.obj);
      if (!e.computed) return `${obj}.${(e.prop as { value: string }).value}`;
      return `${obj}[${printExpr(e.prop)}]`;
    }
    case "unary":
      return e.op === "NOT" ? `(NOT ${printExpr(e.arg)})` : `(${e.op}${printExpr(e.arg)})`;
    case "binary":
      return `(${printExpr(e.left)} ${e.op} ${printExpr(e.right)})`;
    case "logical": {
      let s = printExpr(e.terms[0]);
      for (let i = 1; i < e.terms.length; i++) s = `(${s} ${e.op} ${printExpr(e.terms[i])})`;
      return s;
    }
    case "between":
      return `(${printExpr(e.value)} ${e.not ? "NOT " : ""}BETWEEN ${printExpr(e.low)} AND ${printExpr(e.high)})`;
    case "in":
      return `(${printExpr(e.value)} ${e.not ? "NOT " : ""}IN (${e.list.map(printExpr).join(", ")}))`;
    case "like":
      return `(${printExpr(e.value)} ${e.not ? "NOT " : ""}LIKE ${printExpr(e.pattern)}${e.escape ? ` ESCAPE ${printExpr(e.escape)}` : ""})`;
    case "cond":
      return `(${printExpr(e.test)} ? ${printExpr(e.then)} : ${printExpr(e.else)})`;
    case "array":
      return `[${e.items.map(printExpr).join(", ")}]`;
    case "object":
      return `{${e.props.map((p) => `${JSON.stringify(p.key)}: ${printExpr(p.value)}`).join(", ")}}`;
    case "call":
      return `${e.udf ? "udf." : ""}${e.name}(${e.args.map(printExpr).join(", ")})`;
    case "subquery": {
      const inner = printQuery(e.query);
      return e.mode === "scalar" ? `(${inner})` : `${e.mode.toUpperCase()}(${inner})`;
    }
  }
}

/** Whether a query is the SDK's per-range form of an ORDER BY query (it projects `orderByItems`). */
export function isRewrittenOrderByQuery(q: Query): boolean {
  return (
    q.select.kind === "list" &&
    q.select.items.some((it) => it.alias === "orderByItems") &&
    q.orderBy !== undefined
  );
}
