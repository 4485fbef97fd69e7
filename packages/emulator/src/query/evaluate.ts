import {
  aggregateCall,
  type CallExpr,
  type CollectionExpr,
  containsAggregate,
  type Expr,
  type FromSource,
  forEachChild,
  isAggregateCall,
  type Query,
} from "./ast.js";
import { BUILTINS } from "./functions.js";
import { QueryCompileError } from "./parser.js";
import { isWholeAggregate } from "./plan.js";
import { canonicalJson, compareValues, deepEqual, typeOf } from "./values.js";

/**
 * Executes a parsed query over documents. Expressions are compiled once into closures over an environment
 * (alias → bound value; correlated subqueries see their enclosing row through the prototype chain).
 * Semantics follow the service: https://learn.microsoft.com/azure/cosmos-db/nosql/query/ (a comparison of
 * values of different types, or arithmetic on non-numbers, is undefined; WHERE keeps rows whose condition
 * is exactly true; undefined values are left out of projections).
 */

type Env = Record<string | symbol, unknown>;
type Fn = (env: Env) => unknown;

/** A composite index as in the container's indexing policy. */
export interface CompositeIndexPath {
  path: string;
  order?: string;
}

export interface ExecuteOptions {
  parameters: ReadonlyMap<string, unknown>;
  /** The container's composite indexes: several ORDER BY items need a matching one. */
  compositeIndexes?: readonly (readonly CompositeIndexPath[])[];
  /** Stop with RowLimitExceeded once FROM/JOIN have produced this many rows. */
  maxRows?: number;
  /**
   * Per document: its physical range's position. Rows whose ORDER BY items tie come range by range, left to right
   * (as the SDKs merge ranges), and within a range in index order in the first item's direction (reversed for DESC,
   * as the service returns them and as the .NET SDK expects when it resumes between equal values).
   */
  tieGroups?: readonly number[];
}

/** Thrown when a query produces more rows than `maxRows` allows. */
export class RowLimitExceeded extends Error {
  constructor(readonly limit: number) {
    super(`The query produced more than ${limit} rows (FROM/JOIN combinations).`);
    this.name = "RowLimitExceeded";
  }
}

export interface ExecuteResult {
  rows: unknown[];
  /** Per row, the index of the document it came from (-1: an aggregate or a query without FROM). */
  sources: number[];
}

const AGG = Symbol("aggregates");
/** Where a top-level row carries its document before FROM binds it to an alias. */
const DOC = Symbol("document");
const EMPTY_ENV: Env = Object.freeze(Object.create(null)) as Env;

interface Row {
  env: Env;
  src: number;
}

type CompiledQuery = (input: readonly unknown[] | Env) => { values: unknown[]; sources: number[] };

export function executeQuery(query: Query, docs: readonly unknown[], options: ExecuteOptions): ExecuteResult {
  const compiler = new Compiler(options);
  const run = compiler.query(query, [], true);
  const { values, sources } = run(docs);
  return { rows: values, sources };
}

function fail(message: string, code = "SC2001"): never {
  throw new QueryCompileError(message, 0, 0, code);
}

/** The path `/a/b` an ORDER BY item names, relative to the root alias, or undefined when it is not a path. */
export function documentPath(e: Expr, rootAlias: string | undefined): string | undefined {
  const parts: string[] = [];
  let cur = e;
  while (cur.k === "member") {
    if (cur.prop.k !== "lit" || (typeof cur.prop.value !== "string" && typeof cur.prop.value !== "number"))
      return undefined;
    parts.unshift(String(cur.prop.value));
    cur = cur.obj;
  }
  if (cur.k !== "ref" || cur.name !== rootAlias || parts.length === 0) return undefined;
  return `/${parts.join("/")}`;
}

class Compiler {
  private rowsProduced = 0;
  private readonly maxRows: number;

  constructor(private readonly options: ExecuteOptions) {
    this.maxRows = options.maxRows ?? Number.POSITIVE_INFINITY;
  }

  /** Counts rows as FROM/JOIN produce them (the unit of work a query is bounded by). */
  private produced(): void {
    if (++this.rowsProduced > this.maxRows) throw new RowLimitExceeded(this.maxRows);
  }

  /** Compiles a query; `scope` lists the aliases of enclosing queries (for correlated subqueries). */
  query(q: Query, scope: readonly string[], top: boolean): CompiledQuery {
    const sources = q.from;
    const aliases = [...scope];
    const expanders: ((rows: Row[]) => Row[])[] = [];
    sources.forEach((s, i) => {
      expanders.push(this.source(s, aliases, top && i === 0));
      aliases.push(s.alias);
    });
    if (q.where && containsAggregate(q.where))
      fail("Aggregate functions are not allowed in the WHERE clause.", "SC2101");
    const where = q.where ? this.expr(q.where, aliases) : undefined;

    const grouped = q.groupBy !== undefined || selectHasAggregate(q);
    if (q.select.kind === "star") {
      if (sources.length === 0) fail("'SELECT *' is not valid if FROM clause is omitted.", "SC2040");
      if (sources.length > 1) fail("'SELECT *' is only valid with a single input set.", "SC2040");
      if (q.groupBy) fail("'SELECT *' is not allowed with GROUP BY.", "SC2041");
    }
    if (grouped) this.checkGroupedSelect(q);
    const project = this.projection(q, aliases, grouped);
    const sortKeys = (q.orderBy ?? []).map((s) => ({
      key: this.expr(s.expr, aliases, grouped),
      desc: s.desc,
    }));
    if (top && q.orderBy) this.checkOrderBy(q);
    const groupKeys = (q.groupBy ?? []).map((g) => this.expr(g, aliases));
    const aggregates = grouped ? this.aggregates(q, aliases) : [];
    const countOf = (e: Expr | undefined, clause: string) => (e ? this.count(e, clause) : undefined);

    return (input) => {
      let rows: Row[];
      if (!Array.isArray(input)) rows = [{ env: input as Env, src: -1 }];
      else if (sources.length === 0) rows = [{ env: EMPTY_ENV, src: -1 }];
      else {
        // Top-level: one row per document; the first FROM source binds it to its alias.
        rows = new Array(input.length);
        for (let i = 0; i < input.length; i++) rows[i] = { env: { [DOC]: input[i] }, src: i };
      }
      for (const expand of expanders) rows = expand(rows);
      if (where) rows = rows.filter((r) => where(r.env) === true);

      let units: Row[];
      if (grouped) {
        const groups = new Map<string, Row[]>();
        if (groupKeys.length === 0) groups.set("", rows);
        else {
          for (const r of rows) {
            // Each key on its own: a missing value (undefined) is its own group, apart from null.
            const k = groupKeys.map((g) => canonicalJson(g(r.env))).join("\u0000");
            const list = groups.get(k);
            if (list) list.push(r);
            else groups.set(k, [r]);
          }
        }
        units = [];
        for (const members of groups.values()) {
          const env: Env = Object.create(
            members[0]?.env ?? (Array.isArray(input) ? EMPTY_ENV : (input as Env)),
          );
          const values = new Map<Expr, unknown>();
          for (const a of aggregates) values.set(a.node, a.compute(members.map((m) => a.arg(m.env))));
          env[AGG] = values;
          units.push({ env, src: -1 });
        }
      } else units = rows;

      if (sortKeys.length > 0) {
        const keyed = units.map((u, i) => ({ u, i, keys: sortKeys.map((s) => s.key(u.env)) }));
        keyed.sort((a, b) => {
          for (let i = 0; i < sortKeys.length; i++) {
            const c = compareValues(a.keys[i], b.keys[i]);
            if (c !== 0) return sortKeys[i].desc ? -c : c;
          }
          // Ties: see ExecuteOptions.tieGroups.
          const groups = this.options.tieGroups;
          if (groups && a.u.src >= 0 && b.u.src >= 0) {
            const g = (groups[a.u.src] ?? 0) - (groups[b.u.src] ?? 0);
            if (g !== 0) return g;
          }
          return sortKeys[0].desc ? b.i - a.i : a.i - b.i;
        });
        units = keyed.map((k) => k.u);
      }

      let values: unknown[] = [];
      let srcs: number[] = [];
      for (const u of units) {
        const v = project(u.env);
        if (v === undefined) continue;
        values.push(v);
        srcs.push(u.src);
      }
      if (q.distinct) {
        const seen = new Set<string>();
        const keptValues: unknown[] = [];
        const keptSrcs: number[] = [];
        values.forEach((v, i) => {
          const key = canonicalJson(v);
          if (seen.has(key)) return;
          seen.add(key);
          keptValues.push(v);
          keptSrcs.push(srcs[i]);
        });
        values = keptValues;
        srcs = keptSrcs;
      }
      const offset = countOf(q.offset, "OFFSET");
      const limit = countOf(q.limit, "LIMIT");
      if (offset !== undefined && limit !== undefined) {
        values = values.slice(offset, offset + limit);
        srcs = srcs.slice(offset, offset + limit);
      }
      const topN = countOf(q.top, "TOP");
      if (topN !== undefined) {
        values = values.slice(0, topN);
        srcs = srcs.slice(0, topN);
      }
      return { values, sources: srcs };
    };
  }

  /** TOP, OFFSET and LIMIT: a non-negative integer (a literal, or a parameter's value). */
  private count(e: Expr, clause: string): number {
    const v = e.k === "lit" ? e.value : e.k === "param" ? this.options.parameters.get(e.name) : undefined;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 2 ** 31 - 1)
      fail(`The count value provided for a ${clause} clause must be an integer.`, "SC2060");
    return v;
  }

  /** How one FROM/JOIN source turns each incoming row into zero or more rows. */
  private source(s: FromSource, scope: readonly string[], containerRoot: boolean): (rows: Row[]) => Row[] {
    const value = this.collection(s.expr, scope, containerRoot);
    const alias = s.alias;
    if (s.expr.k === "subquery") {
      // Each result of the subquery is bound in turn.
      return (rows) => {
        const out: Row[] = [];
        for (const r of rows) {
          for (const v of value(r.env) as unknown[]) {
            this.produced();
            out.push(bind(r, alias, v));
          }
        }
        return out;
      };
    }
    if (s.iterate) {
      // `alias IN expr`: one row per array element; a value that is not an array yields no rows (the
      // service skips the document instead of failing the query).
      return (rows) => {
        const out: Row[] = [];
        for (const r of rows) {
          const v = value(r.env);
          if (!Array.isArray(v)) continue;
          for (const item of v) {
            if (item === undefined) continue;
            this.produced();
            out.push(bind(r, alias, item));
          }
        }
        return out;
      };
    }
    return (rows) => {
      const out: Row[] = [];
      for (const r of rows) {
        const v = value(r.env);
        if (v === undefined) continue;
        this.produced();
        out.push(bind(r, alias, v));
      }
      return out;
    };
  }

  /** What a collection expression evaluates to for a row. At the top level FROM's first name is the container. */
  private collection(c: CollectionExpr, scope: readonly string[], containerRoot: boolean): Fn {
    switch (c.k) {
      case "root": {
        if (containerRoot) return (env) => env[DOC];
        if (!scope.includes(c.name)) fail(`Identifier '${c.name}' could not be resolved.`, "SC2001");
        const name = c.name;
        return (env) => env[name];
      }
      case "path": {
        const base = this.collection(c.base, scope, containerRoot);
        const prop = c.prop;
        return (env) => member(base(env), prop);
      }
      case "subquery": {
        const run = this.query(c.query, scope, false);
        return (env) => run(env).values;
      }
    }
  }

  private checkOrderBy(q: Query): void {
    const root = q.from[0]?.expr.k === "root" ? q.from[0].alias : undefined;
    const items = q.orderBy ?? [];
    const paths = items.map((s) => documentPath(s.expr, root));
    if (paths.some((p) => p === undefined))
      fail(
        "Unsupported ORDER BY clause. ORDER BY item expression could not be mapped to a document path.",
        "SC2203",
      );
    // An aggregate over the whole scope has one row, so nothing is sorted and no composite index is needed:
    // Microsoft's aggregateQuery.spec.ts runs `SELECT VALUE AVG(r.key) … ORDER BY r.key, r.field` on a container
    // without one, and expects this error only for rows ordered on two fields.
    if (items.length < 2 || isWholeAggregate(q)) return;
    // https://learn.microsoft.com/azure/cosmos-db/index-policy#composite-indexes: an ORDER BY on several
    // properties needs a composite index with the same paths in the same order, and either the same
    // directions or all of them inverted.
    const served = (this.options.compositeIndexes ?? []).some((index) => {
      if (index.length !== items.length) return false;
      const same = index.every((p, i) => p.path === paths[i] && isDescending(p.order) === items[i].desc);
      const inverted = index.every((p, i) => p.path === paths[i] && isDescending(p.order) !== items[i].desc);
      return same || inverted;
    });
    if (!served)
      throw new QueryCompileError(
        "The order by query does not have a corresponding composite index that it can be served from.",
        0,
        0,
        "SC2206",
      );
  }

  /** In a grouped query, the select list may only combine GROUP BY expressions, aggregates and constants. */
  private checkGroupedSelect(q: Query): void {
    const keys = new Set((q.groupBy ?? []).map((g) => canonicalJson(g)));
    const check = (e: Expr): void => {
      const agg = aggregateCall(e);
      if (keys.has(canonicalJson(e)) || agg) {
        if (agg)
          for (const a of agg.args)
            if (containsAggregate(a))
              fail(
                "Cannot perform an aggregate function on an expression containing an aggregate.",
                "SC2103",
              );
        return;
      }
      if (e.k === "ref" || e.k === "member") {
        fail(
          `Property reference '${refText(e)}' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause.`,
          "SC2102",
        );
      }
      forEachChild(e, check);
    };
    if (q.select.kind === "value") check(q.select.expr);
    else if (q.select.kind === "list") for (const it of q.select.items) check(it.expr);
  }

  private aggregates(q: Query, scope: readonly string[]) {
    const nodes: CallExpr[] = [];
    const collect = (e: Expr): void => {
      const agg = aggregateCall(e);
      if (agg) nodes.push(agg);
      else forEachChild(e, collect);
    };
    if (q.select.kind === "value") collect(q.select.expr);
    else if (q.select.kind === "list") for (const it of q.select.items) collect(it.expr);
    for (const s of q.orderBy ?? []) collect(s.expr);
    return nodes.map((node) => {
      if (node.args.length !== 1) fail(`The ${node.name} function requires 1 argument(s).`, "SC2050");
      return { node, arg: this.expr(node.args[0], scope), compute: AGGREGATE_FUNCTIONS[node.name] };
    });
  }

  private projection(q: Query, scope: readonly string[], grouped: boolean): Fn {
    const sel = q.select;
    if (sel.kind === "star") {
      const alias = q.from[0].alias;
      return (env) => env[alias];
    }
    if (sel.kind === "value") return this.expr(sel.expr, scope, grouped);
    const names = new Set<string>();
    let unnamed = 0;
    const fields = sel.items.map((it) => {
      const name = it.alias ?? implicitName(it.expr) ?? `$${++unnamed}`;
      if (names.has(name)) fail(`Duplicate alias '${name}' in the select list.`, "SC2002");
      names.add(name);
      return { name, fn: this.expr(it.expr, scope, grouped) };
    });
    return (env) => {
      const out: Record<string, unknown> = {};
      for (const f of fields) {
        const v = f.fn(env);
        if (v !== undefined) out[f.name] = v;
      }
      return out;
    };
  }

  expr(e: Expr, scope: readonly string[], grouped = false): Fn {
    switch (e.k) {
      case "lit": {
        const v = e.value;
        return () => v;
      }
      case "param": {
        const v = this.options.parameters.get(e.name);
        return () => v;
      }
      case "ref": {
        if (!scope.includes(e.name)) fail(`Identifier '${e.name}' could not be resolved.`, "SC2001");
        const name = e.name;
        return (env) => env[name];
      }
      case "member": {
        const obj = this.expr(e.obj, scope, grouped);
        if (!e.computed) {
          const name = (e.prop as { value: string }).value;
          return (env) => {
            const o = obj(env);
            return o !== null && typeof o === "object" && !Array.isArray(o) && Object.hasOwn(o, name)
              ? (o as Record<string, unknown>)[name]
              : undefined;
          };
        }
        const prop = this.expr(e.prop, scope, grouped);
        return (env) => member(obj(env), prop(env));
      }
      case "unary": {
        const arg = this.expr(e.arg, scope, grouped);
        switch (e.op) {
          case "NOT":
            return (env) => {
              const v = arg(env);
              return typeof v === "boolean" ? !v : undefined;
            };
          case "-":
            return (env) => {
              const v = arg(env);
              return typeof v === "number" ? -v : undefined;
            };
          case "+":
            return (env) => {
              const v = arg(env);
              return typeof v === "number" ? v : undefined;
            };
          case "~":
            return (env) => {
              const v = arg(env);
              return typeof v === "number" ? ~v : undefined;
            };
        }
        break;
      }
      case "binary":
        return this.binary(e.op, this.expr(e.left, scope, grouped), this.expr(e.right, scope, grouped));
      case "logical": {
        const terms = e.terms.map((x) => this.expr(x, scope, grouped));
        // Three-valued: OR is true if any term is, false if all are false, else undefined (AND dually).
        const decisive = e.op === "OR";
        return (env) => {
          let allOpposite = true;
          for (const term of terms) {
            const v = term(env);
            if (v === decisive) return decisive;
            if (v !== !decisive) allOpposite = false;
          }
          return allOpposite ? !decisive : undefined;
        };
      }
      case "between": {
        const value = this.expr(e.value, scope, grouped);
        const low = this.expr(e.low, scope, grouped);
        const high = this.expr(e.high, scope, grouped);
        const not = e.not;
        return (env) => {
          const v = value(env);
          const lo = compare(v, low(env));
          const hi = compare(v, high(env));
          if (lo === undefined || hi === undefined) return undefined;
          const inside = lo >= 0 && hi <= 0;
          return not ? !inside : inside;
        };
      }
      case "in": {
        const value = this.expr(e.value, scope, grouped);
        const list = e.list.map((x) => this.expr(x, scope, grouped));
        const not = e.not;
        return (env) => {
          const v = value(env);
          if (v === undefined) return undefined;
          const found = list.some((l) => {
            const x = l(env);
            return x !== undefined && typeOf(x) === typeOf(v) && deepEqual(x, v);
          });
          return not ? !found : found;
        };
      }
      case "like": {
        const value = this.expr(e.value, scope, grouped);
        const pattern = this.expr(e.pattern, scope, grouped);
        const escapeChar = e.escape ? this.expr(e.escape, scope, grouped) : undefined;
        const not = e.not;
        return (env) => {
          const v = value(env);
          const p = pattern(env);
          const esc = escapeChar ? escapeChar(env) : undefined;
          if (typeof v !== "string" || typeof p !== "string") return undefined;
          if (escapeChar && (typeof esc !== "string" || esc.length !== 1)) return undefined;
          const matched = likeRegex(p, esc as string | undefined).test(v);
          return not ? !matched : matched;
        };
      }
      case "cond": {
        const test = this.expr(e.test, scope, grouped);
        const a = this.expr(e.then, scope, grouped);
        const b = this.expr(e.else, scope, grouped);
        return (env) => (test(env) === true ? a(env) : b(env));
      }
      case "array": {
        const items = e.items.map((x) => this.expr(x, scope, grouped));
        return (env) => {
          const out: unknown[] = [];
          for (const it of items) {
            const v = it(env);
            if (v !== undefined) out.push(v);
          }
          return out;
        };
      }
      case "object": {
        const props = e.props.map((p) => ({ key: p.key, fn: this.expr(p.value, scope, grouped) }));
        return (env) => {
          const out: Record<string, unknown> = {};
          for (const p of props) {
            const v = p.fn(env);
            if (v !== undefined) out[p.key] = v;
          }
          return out;
        };
      }
      case "call":
        return this.call(e, scope, grouped);
      case "subquery": {
        const run = this.query(e.query, scope, false);
        switch (e.mode) {
          case "array":
            return (env) => run(env).values;
          case "exists":
            return (env) => run(env).values.length > 0;
          case "scalar":
            return (env) => run(env).values[0];
        }
      }
    }
    return fail("Unsupported expression.");
  }

  private call(e: CallExpr, scope: readonly string[], grouped: boolean): Fn {
    if (e.udf) fail(`User-defined functions are not supported by this emulator: 'udf.${e.name}'.`, "SC2005");
    if (isAggregateCall(e)) {
      if (!grouped) fail(`The aggregate function ${e.name} is not allowed in this context.`, "SC2101");
      // Computed per group before projection (see `query`), looked up here.
      return (env) => (env[AGG] as Map<Expr, unknown>).get(e);
    }
    const f = BUILTINS[e.name];
    if (!f) fail(`'${e.name}' is not a recognized built-in function name.`, "SC2005");
    if (e.args.length < f.minArgs || e.args.length > f.maxArgs)
      fail(
        `The ${e.name} function requires ${f.minArgs === f.maxArgs ? "" : "at least "}${f.minArgs} argument(s).`,
        "SC2050",
      );
    const args = e.args.map((a) => this.expr(a, scope, grouped));
    const fn = f.fn;
    if (args.length === 1) {
      const a0 = args[0];
      return (env) => fn(a0(env));
    }
    return (env) => fn(...args.map((a) => a(env)));
  }

  private binary(op: string, left: Fn, right: Fn): Fn {
    switch (op) {
      case "??":
        return (env) => {
          const a = left(env);
          return a !== undefined ? a : right(env);
        };
      case "=":
        return (env) => equals(left(env), right(env));
      case "!=":
        return (env) => {
          const eq = equals(left(env), right(env));
          return eq === undefined ? undefined : !eq;
        };
      case "<":
        return (env) => {
          const c = compare(left(env), right(env));
          return c === undefined ? undefined : c < 0;
        };
      case "<=":
        return (env) => {
          const c = compare(left(env), right(env));
          return c === undefined ? undefined : c <= 0;
        };
      case ">":
        return (env) => {
          const c = compare(left(env), right(env));
          return c === undefined ? undefined : c > 0;
        };
      case ">=":
        return (env) => {
          const c = compare(left(env), right(env));
          return c === undefined ? undefined : c >= 0;
        };
      case "||":
        return (env) => {
          const a = left(env);
          const b = right(env);
          return typeof a === "string" && typeof b === "string" ? a + b : undefined;
        };
      default: {
        const f = ARITHMETIC[op];
        return (env) => {
          const a = left(env);
          const b = right(env);
          if (typeof a !== "number" || typeof b !== "number") return undefined;
          const r = f(a, b);
          return Number.isFinite(r) ? r : undefined;
        };
      }
    }
  }
}

const ARITHMETIC: Record<string, (a: number, b: number) => number> = {
  "+": (a, b) => a + b,
  "-": (a, b) => a - b,
  "*": (a, b) => a * b,
  "/": (a, b) => a / b,
  "%": (a, b) => a % b,
  "|": (a, b) => a | b,
  "&": (a, b) => a & b,
  "^": (a, b) => a ^ b,
  "<<": (a, b) => a << b,
  ">>": (a, b) => a >> b,
  ">>>": (a, b) => a >>> b,
};

/** Equality: undefined when either side is undefined or the types differ. */
function equals(a: unknown, b: unknown): boolean | undefined {
  if (a === undefined || b === undefined) return undefined;
  const ta = typeOf(a);
  if (ta !== typeOf(b)) return undefined;
  return deepEqual(a, b);
}

/** Ordering comparison: only between two numbers, two strings, two booleans or two nulls. */
function compare(a: unknown, b: unknown): number | undefined {
  const ta = typeOf(a);
  if (ta !== typeOf(b) || ta === "undefined" || ta === "array" || ta === "object") return undefined;
  return compareValues(a, b);
}

function member(obj: unknown, prop: unknown): unknown {
  if (Array.isArray(obj)) return typeof prop === "number" && Number.isInteger(prop) ? obj[prop] : undefined;
  if (obj !== null && typeof obj === "object" && typeof prop === "string")
    return Object.hasOwn(obj, prop) ? (obj as Record<string, unknown>)[prop] : undefined;
  return undefined;
}

function bind(r: Row, alias: string, value: unknown): Row {
  const env: Env = Object.create(r.env === EMPTY_ENV ? null : r.env);
  env[alias] = value;
  return { env, src: r.src };
}

function isDescending(order: string | undefined): boolean {
  return typeof order === "string" && order.toLowerCase() === "descending";
}

/** The property name a select item gets without AS: the last path segment (`c.a.b` → `b`), else `$n`. */
function implicitName(e: Expr): string | undefined {
  if (e.k === "ref") return e.name;
  if (e.k === "member" && e.prop.k === "lit" && typeof e.prop.value === "string") return e.prop.value;
  return undefined;
}

function refText(e: Expr): string {
  if (e.k === "ref") return e.name;
  if (e.k === "member") {
    const p = e.prop.k === "lit" ? e.prop.value : "?";
    return e.computed ? `${refText(e.obj)}[${JSON.stringify(p)}]` : `${refText(e.obj)}.${p}`;
  }
  return "?";
}

function selectHasAggregate(q: Query): boolean {
  if (q.select.kind === "value") return containsAggregate(q.select.expr);
  if (q.select.kind === "list") return q.select.items.some((it) => containsAggregate(it.expr));
  return false;
}

const likeCache = new Map<string, RegExp>();
/** LIKE: `%` any run, `_` one character, `[...]` a set, ESCAPE for literal wildcards. */
function likeRegex(pattern: string, escapeChar: string | undefined): RegExp {
  const key = `${escapeChar ?? ""}\u0000${pattern}`;
  let re = likeCache.get(key);
  if (re) return re;
  let src = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (escapeChar !== undefined && c === escapeChar && i + 1 < pattern.length) {
      src += escapeRegex(pattern[++i]);
    } else if (c === "%") src += "[\\s\\S]*";
    else if (c === "_") src += "[\\s\\S]";
    else if (c === "[") {
      const close = pattern.indexOf("]", i + 1);
      if (close < 0) src += "\\[";
      else {
        let set = pattern.slice(i + 1, close);
        const negated = set.startsWith("^");
        if (negated) set = set.slice(1);
        src += `[${negated ? "^" : ""}${set.replace(/[\\\]]/g, "\\$&")}]`;
        i = close;
      }
    } else src += escapeRegex(c);
  }
  re = new RegExp(`^${src}$`);
  if (likeCache.size > 256) likeCache.clear();
  likeCache.set(key, re);
  return re;
}

function escapeRegex(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

/**
 * Aggregates over the values of a group (https://learn.microsoft.com/azure/cosmos-db/nosql/query/aggregate-functions):
 * undefined values are ignored; SUM/AVG of anything but numbers is undefined; SUM of nothing is 0.
 */
const AGGREGATE_FUNCTIONS: Record<string, (values: unknown[]) => unknown> = {
  COUNT: (vs) => vs.filter((v) => v !== undefined).length,
  SUM: (vs) => {
    let sum = 0;
    for (const v of vs) {
      if (v === undefined) continue;
      if (typeof v !== "number") return undefined;
      sum += v;
    }
    return sum;
  },
  AVG: (vs) => {
    let sum = 0;
    let n = 0;
    for (const v of vs) {
      if (v === undefined) continue;
      if (typeof v !== "number") return undefined;
      sum += v;
      n++;
    }
    return n === 0 ? undefined : sum / n;
  },
  MIN: (vs) => extreme(vs, -1),
  MAX: (vs) => extreme(vs, 1),
};

function extreme(vs: unknown[], sign: 1 | -1): unknown {
  let best: unknown;
  for (const v of vs) {
    if (v === undefined) continue;
    const t = typeOf(v);
    if (t === "array" || t === "object") return undefined;
    if (best === undefined || compareValues(v, best) * sign > 0) best = v;
  }
  return best;
}
