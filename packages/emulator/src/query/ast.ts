/** The syntax tree of a Cosmos DB (NoSQL) query, as produced by parser.ts. */

export type Expr =
  | { k: "lit"; value: unknown }
  | { k: "param"; name: string }
  /** An alias bound by FROM/JOIN (or by an enclosing query, for correlated subqueries). */
  | { k: "ref"; name: string }
  /** `obj.name` (prop a string, computed false) or `obj[expr]` (computed true). */
  | { k: "member"; obj: Expr; prop: Expr; computed: boolean }
  | { k: "unary"; op: "-" | "+" | "~" | "NOT"; arg: Expr }
  | { k: "binary"; op: BinaryOp; left: Expr; right: Expr }
  /** `a AND b AND ...` / `a OR b OR ...` kept flat: generated queries chain thousands of terms. */
  | { k: "logical"; op: "AND" | "OR"; terms: Expr[] }
  | { k: "between"; value: Expr; low: Expr; high: Expr; not: boolean }
  | { k: "in"; value: Expr; list: Expr[]; not: boolean }
  | { k: "like"; value: Expr; pattern: Expr; escape?: Expr; not: boolean }
  | { k: "cond"; test: Expr; then: Expr; else: Expr }
  | { k: "array"; items: Expr[] }
  | { k: "object"; props: { key: string; value: Expr }[] }
  /** A built-in function (name upper-cased) or `udf.name(...)`. */
  | { k: "call"; name: string; args: Expr[]; udf: boolean }
  /** `(SELECT ...)` as a value, `ARRAY(SELECT ...)` or `EXISTS(SELECT ...)`. */
  | { k: "subquery"; mode: "scalar" | "array" | "exists"; query: Query };

export type BinaryOp =
  | "="
  | "!="
  | "<"
  | "<="
  | ">"
  | ">="
  | "+"
  | "-"
  | "*"
  | "/"
  | "%"
  | "|"
  | "&"
  | "^"
  | "<<"
  | ">>"
  | ">>>"
  | "||"
  | "??";

/** What FROM or a JOIN iterates: the container, a path into a bound value, or a subquery. */
export type CollectionExpr =
  | { k: "root"; name: string }
  | { k: "path"; base: CollectionExpr; prop: string | number }
  | { k: "subquery"; query: Query };

export interface FromSource {
  alias: string;
  /** `alias IN expr` iterates an array; otherwise the value itself is bound (subquery: each result). */
  iterate: boolean;
  expr: CollectionExpr;
}

export type SelectClause =
  | { kind: "star" }
  | { kind: "value"; expr: Expr }
  | { kind: "list"; items: { expr: Expr; alias?: string }[] };

export interface SortItem {
  expr: Expr;
  desc: boolean;
  /** Whether ASC/DESC was written (the rewritten query echoes it as given). */
  explicit: boolean;
}

export interface Query {
  distinct: boolean;
  top?: Expr;
  select: SelectClause;
  /** FROM source first, then each JOIN. Empty when the query has no FROM. */
  from: FromSource[];
  where?: Expr;
  groupBy?: Expr[];
  orderBy?: SortItem[];
  offset?: Expr;
  limit?: Expr;
}

export const AGGREGATES = new Set(["COUNT", "SUM", "AVG", "MIN", "MAX"]);

export type CallExpr = Extract<Expr, { k: "call" }>;

/** The aggregate call `e` is, if it is one. */
export function aggregateCall(e: Expr): CallExpr | undefined {
  return e.k === "call" && !e.udf && AGGREGATES.has(e.name) ? e : undefined;
}

export function isAggregateCall(e: Expr): boolean {
  return aggregateCall(e) !== undefined;
}

/** Whether an expression contains an aggregate call outside of subqueries. */
export function containsAggregate(e: Expr): boolean {
  if (isAggregateCall(e)) return true;
  let found = false;
  forEachChild(e, (c) => {
    if (!found && containsAggregate(c)) found = true;
  });
  return found;
}

/** Visits the direct sub-expressions of `e` (not the inside of subqueries). */
export function forEachChild(e: Expr, visit: (child: Expr) => void): void {
  switch (e.k) {
    case "member":
      visit(e.obj);
      if (e.computed) visit(e.prop);
      return;
    case "unary":
      visit(e.arg);
      return;
    case "binary":
      visit(e.left);
      visit(e.right);
      return;
    case "logical":
      for (const x of e.terms) visit(x);
      return;
    case "between":
      visit(e.value);
      visit(e.low);
      visit(e.high);
      return;
    case "in":
      visit(e.value);
      for (const x of e.list) visit(x);
      return;
    case "like":
      visit(e.value);
      visit(e.pattern);
      if (e.escape) visit(e.escape);
      return;
    case "cond":
      visit(e.test);
      visit(e.then);
      visit(e.else);
      return;
    case "array":
      for (const x of e.items) visit(x);
      return;
    case "object":
      for (const p of e.props) visit(p.value);
      return;
    case "call":
      for (const x of e.args) visit(x);
      return;
    default:
      return;
  }
}

/**
 * How deeply a query's expressions and subqueries nest (measured without recursion, so that any parsed
 * text can be measured safely before recursive passes walk it).
 */
export function nestingDepth(q: Query): number {
  let max = 0;
  const stack: [Expr | Query, number][] = [[q, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [Expr | Query, number];
    if (depth > max) max = depth;
    if ("k" in node) {
      if (node.k === "subquery") stack.push([node.query, depth + 1]);
      else forEachChild(node, (c) => stack.push([c, depth + 1]));
      continue;
    }
    const exprs: (Expr | undefined)[] = [node.top, node.where, node.offset, node.limit];
    if (node.select.kind === "value") exprs.push(node.select.expr);
    if (node.select.kind === "list") for (const it of node.select.items) exprs.push(it.expr);
    for (const g of node.groupBy ?? []) exprs.push(g);
    for (const o of node.orderBy ?? []) exprs.push(o.expr);
    for (const e of exprs) if (e) stack.push([e, depth + 1]);
    for (const s of node.from) {
      let c: CollectionExpr = s.expr;
      let d = depth + 1;
      while (c.k === "path") {
        c = c.base;
        d++;
      }
      if (c.k === "subquery") stack.push([c.query, d + 1]);
      else if (d > max) max = d;
    }
  }
  return max;
}
