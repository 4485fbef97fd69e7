import { createRequire } from "node:module";
import { canonicalJson, deepEqual, type TypeName, typeOf } from "./values.js";

/**
 * Built-in scalar functions of the NoSQL query language
 * (https://learn.microsoft.com/azure/cosmos-db/nosql/query/functions). An argument of the wrong type makes
 * the result undefined, as the service does; a wrong number of arguments is a compile error.
 */

export interface BuiltinFunction {
  minArgs: number;
  maxArgs: number;
  fn: (...args: unknown[]) => unknown;
}

type ArgType = TypeName | "any";

/** A function whose arguments must have the given types (extra optional ones may be undefined). */
function typed(types: ArgType[], optional: number, fn: (...args: never[]) => unknown): BuiltinFunction {
  const minArgs = types.length - optional;
  return {
    minArgs,
    maxArgs: types.length,
    fn: (...args: unknown[]) => {
      for (let i = 0; i < args.length; i++) {
        const want = types[i];
        if (want !== "any" && typeOf(args[i]) !== want) return undefined;
      }
      return (fn as (...a: unknown[]) => unknown)(...args);
    },
  };
}

/** A function of any number (≥ min) of arguments of one type. */
function variadic(type: ArgType, min: number, fn: (...args: never[]) => unknown): BuiltinFunction {
  return {
    minArgs: min,
    maxArgs: Number.POSITIVE_INFINITY,
    fn: (...args: unknown[]) => {
      if (type !== "any" && args.some((a) => typeOf(a) !== type)) return undefined;
      return (fn as (...a: unknown[]) => unknown)(...args);
    },
  };
}

const num = (f: (x: number) => number) => typed(["number"], 0, (x: number) => finiteOrUndefined(f(x)));

function finiteOrUndefined(x: number): number | undefined {
  return Number.isFinite(x) ? x : undefined;
}

function optionalBool(v: unknown): boolean | undefined {
  if (v === undefined) return false;
  return typeof v === "boolean" ? v : undefined;
}

function strCompare(
  ignoreCase: unknown,
  a: string,
  b: string,
  f: (x: string, y: string) => boolean,
): unknown {
  const ic = optionalBool(ignoreCase);
  if (ic === undefined) return undefined;
  return ic ? f(a.toLowerCase(), b.toLowerCase()) : f(a, b);
}

function parseJsonLiteral(s: string, want: TypeName): unknown {
  try {
    const v = JSON.parse(s.trim());
    return typeOf(v) === want ? v : undefined;
  } catch {
    return undefined;
  }
}

const TICKS_AT_EPOCH = 621355968000000000n;

function isoNow(): string {
  return `${new Date().toISOString().slice(0, -1)}0000Z`;
}

/** Spatial functions come from @zeit/cosmosdb-query (loaded on first use: it pulls in turf). */
let spatial: Record<string, (...a: unknown[]) => unknown> | undefined;
function spatialFn(name: string, arity: number): BuiltinFunction {
  return {
    minArgs: arity,
    maxArgs: arity,
    fn: (...args: unknown[]) => {
      if (!spatial) {
        const require = createRequire(import.meta.url);
        spatial = require("@zeit/cosmosdb-query/lib/builtin-functions") as typeof spatial;
      }
      try {
        return spatial?.[name](...args);
      } catch {
        return undefined;
      }
    },
  };
}

export const BUILTINS: Record<string, BuiltinFunction> = {
  // Mathematical
  ABS: num(Math.abs),
  ACOS: num(Math.acos),
  ASIN: num(Math.asin),
  ATAN: num(Math.atan),
  ATN2: typed(["number", "number"], 0, (a: number, b: number) => Math.atan2(b, a)),
  CEILING: num(Math.ceil),
  COS: num(Math.cos),
  COT: num((x) => 1 / Math.tan(x)),
  DEGREES: num((x) => (x * 180) / Math.PI),
  EXP: num(Math.exp),
  FLOOR: num(Math.floor),
  LOG: typed(["number", "number"], 1, (x: number, base?: number) =>
    finiteOrUndefined(base === undefined ? Math.log(x) : Math.log(x) / Math.log(base)),
  ),
  LOG10: num(Math.log10),
  PI: typed([], 0, () => Math.PI),
  POWER: typed(["number", "number"], 0, (a: number, b: number) => finiteOrUndefined(a ** b)),
  RADIANS: num((x) => (x * Math.PI) / 180),
  RAND: typed([], 0, () => Math.random()),
  ROUND: num((x) => Math.sign(x) * Math.round(Math.abs(x))),
  SIGN: num(Math.sign),
  SIN: num(Math.sin),
  SQRT: num(Math.sqrt),
  SQUARE: num((x) => x * x),
  TAN: num(Math.tan),
  TRUNC: num(Math.trunc),
  NUMBERBIN: typed(["number", "number"], 1, (x: number, size = 1) =>
    size > 0 ? Math.floor(x / size) * size : undefined,
  ),
  // Type checking
  IS_ARRAY: typed(["any"], 0, (v: unknown) => Array.isArray(v)),
  IS_BOOL: typed(["any"], 0, (v: unknown) => typeof v === "boolean"),
  IS_DEFINED: typed(["any"], 0, (v: unknown) => v !== undefined),
  IS_NULL: typed(["any"], 0, (v: unknown) => v === null),
  IS_NUMBER: typed(["any"], 0, (v: unknown) => typeof v === "number"),
  IS_OBJECT: typed(["any"], 0, (v: unknown) => typeOf(v) === "object"),
  IS_PRIMITIVE: typed(["any"], 0, (v: unknown) =>
    ["null", "boolean", "number", "string"].includes(typeOf(v)),
  ),
  IS_STRING: typed(["any"], 0, (v: unknown) => typeof v === "string"),
  IS_FINITE_NUMBER: typed(["any"], 0, (v: unknown) => typeof v === "number" && Number.isFinite(v)),
  IS_INTEGER: typed(["any"], 0, (v: unknown) => typeof v === "number" && Number.isSafeInteger(v)),
  // String
  CONCAT: variadic("string", 2, (...s: string[]) => s.join("")),
  CONTAINS: typed(["string", "string", "any"], 1, (a: string, b: string, ic?: unknown) =>
    strCompare(ic, a, b, (x, y) => x.includes(y)),
  ),
  ENDSWITH: typed(["string", "string", "any"], 1, (a: string, b: string, ic?: unknown) =>
    strCompare(ic, a, b, (x, y) => x.endsWith(y)),
  ),
  STARTSWITH: typed(["string", "string", "any"], 1, (a: string, b: string, ic?: unknown) =>
    strCompare(ic, a, b, (x, y) => x.startsWith(y)),
  ),
  STRINGEQUALS: typed(["string", "string", "any"], 1, (a: string, b: string, ic?: unknown) =>
    strCompare(ic, a, b, (x, y) => x === y),
  ),
  INDEX_OF: typed(["string", "string", "number"], 1, (a: string, b: string, from?: number) =>
    a.indexOf(b, from ?? 0),
  ),
  LEFT: typed(["string", "number"], 0, (s: string, n: number) => s.slice(0, Math.max(0, n))),
  RIGHT: typed(["string", "number"], 0, (s: string, n: number) => (n <= 0 ? "" : s.slice(-n))),
  LENGTH: typed(["string"], 0, (s: string) => s.length),
  LOWER: typed(["string"], 0, (s: string) => s.toLowerCase()),
  UPPER: typed(["string"], 0, (s: string) => s.toUpperCase()),
  LTRIM: typed(["string"], 0, (s: string) => s.trimStart()),
  RTRIM: typed(["string"], 0, (s: string) => s.trimEnd()),
  TRIM: typed(["string"], 0, (s: string) => s.trim()),
  REPLACE: typed(["string", "string", "string"], 0, (s: string, find: string, by: string) =>
    find === "" ? s : s.split(find).join(by),
  ),
  REPLICATE: typed(["string", "number"], 0, (s: string, n: number) =>
    n >= 0 && Number.isInteger(n) && s.length * n <= 10_000 ? s.repeat(n) : undefined,
  ),
  REVERSE: typed(["string"], 0, (s: string) => [...s].reverse().join("")),
  SUBSTRING: typed(["string", "number", "number"], 0, (s: string, start: number, len: number) =>
    s.substring(Math.max(0, start), Math.max(0, start) + Math.max(0, len)),
  ),
  TOSTRING: typed(["any"], 0, (v: unknown) => {
    const t = typeOf(v);
    if (t === "undefined") return undefined;
    if (t === "string") return v;
    return JSON.stringify(v);
  }),
  STRINGTOARRAY: typed(["string"], 0, (s: string) => parseJsonLiteral(s, "array")),
  STRINGTOBOOLEAN: typed(["string"], 0, (s: string) => parseJsonLiteral(s, "boolean")),
  STRINGTONULL: typed(["string"], 0, (s: string) => parseJsonLiteral(s, "null")),
  STRINGTONUMBER: typed(["string"], 0, (s: string) => parseJsonLiteral(s, "number")),
  STRINGTOOBJECT: typed(["string"], 0, (s: string) => parseJsonLiteral(s, "object")),
  STRINGSPLIT: typed(["string", "string"], 0, (s: string, sep: string) => s.split(sep)),
  STRINGJOIN: typed(["array", "string"], 0, (a: unknown[], sep: string) =>
    a.every((x) => typeof x === "string") ? a.join(sep) : undefined,
  ),
  REGEXMATCH: typed(["string", "string", "string"], 1, (s: string, pattern: string, modifiers?: string) => {
    let flags = "";
    let p = pattern;
    for (const m of modifiers ?? "") {
      if (m === "x") p = p.replace(/\s+/g, "");
      else if (m === "m" || m === "s" || m === "i") flags += flags.includes(m) ? "" : m;
      else return undefined;
    }
    try {
      return new RegExp(p, flags).test(s);
    } catch {
      return undefined;
    }
  }),
  // Array
  ARRAY_CONCAT: variadic("array", 2, (...a: unknown[][]) => a.flat(1)),
  ARRAY_CONTAINS: typed(["array", "any", "any"], 1, (a: unknown[], v: unknown, partial?: unknown) => {
    const p = optionalBool(partial);
    if (p === undefined || v === undefined) return p === undefined ? undefined : false;
    return a.some((x) => (p ? partialMatch(x, v) : deepEqual(x, v)));
  }),
  ARRAY_CONTAINS_ANY: {
    minArgs: 2,
    maxArgs: Number.POSITIVE_INFINITY,
    fn: (a: unknown, ...vs: unknown[]) =>
      Array.isArray(a) ? vs.some((v) => v !== undefined && a.some((x) => deepEqual(x, v))) : undefined,
  },
  ARRAY_CONTAINS_ALL: {
    minArgs: 2,
    maxArgs: Number.POSITIVE_INFINITY,
    fn: (a: unknown, ...vs: unknown[]) =>
      Array.isArray(a) ? vs.every((v) => v !== undefined && a.some((x) => deepEqual(x, v))) : undefined,
  },
  ARRAY_LENGTH: typed(["array"], 0, (a: unknown[]) => a.length),
  ARRAY_SLICE: typed(["array", "number", "number"], 1, (a: unknown[], start: number, len?: number) => {
    const from = start < 0 ? Math.max(0, a.length + start) : start;
    return a.slice(from, len === undefined ? undefined : from + Math.max(0, len));
  }),
  SETINTERSECT: typed(["array", "array"], 0, (a: unknown[], b: unknown[]) =>
    uniqueValues(a).filter((x) => b.some((y) => deepEqual(x, y))),
  ),
  SETUNION: typed(["array", "array"], 0, (a: unknown[], b: unknown[]) => uniqueValues([...a, ...b])),
  // Conditional
  IIF: {
    minArgs: 3,
    maxArgs: 3,
    fn: (cond: unknown, a: unknown, b: unknown) => (cond === true ? a : b),
  },
  // Date and time
  GETCURRENTDATETIME: typed([], 0, isoNow),
  GETCURRENTTIMESTAMP: typed([], 0, () => Date.now()),
  GETCURRENTTICKS: typed([], 0, () => Number(BigInt(Date.now()) * 10000n + TICKS_AT_EPOCH)),
  GETCURRENTDATETIMESTATIC: typed([], 0, isoNow),
  GETCURRENTTIMESTAMPSTATIC: typed([], 0, () => Date.now()),
  DATETIMETOTIMESTAMP: typed(["string"], 0, (s: string) => {
    const t = Date.parse(s);
    return Number.isNaN(t) ? undefined : t;
  }),
  TIMESTAMPTODATETIME: typed(["number"], 0, (ms: number) => {
    const d = new Date(ms);
    return Number.isNaN(d.getTime()) ? undefined : `${d.toISOString().slice(0, -1)}0000Z`;
  }),
  // Spatial
  ST_DISTANCE: spatialFn("ST_DISTANCE", 2),
  ST_WITHIN: spatialFn("ST_WITHIN", 2),
  ST_INTERSECTS: spatialFn("ST_INTERSECTS", 2),
};

function partialMatch(candidate: unknown, want: unknown): boolean {
  if (typeOf(want) !== "object" || typeOf(candidate) !== "object") return deepEqual(candidate, want);
  const c = candidate as Record<string, unknown>;
  const w = want as Record<string, unknown>;
  return Object.keys(w).every((k) => w[k] === undefined || partialMatch(c[k], w[k]));
}

function uniqueValues(a: unknown[]): unknown[] {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const x of a) {
    const k = canonicalJson(x);
    if (!seen.has(k)) {
      seen.add(k);
      out.push(x);
    }
  }
  return out;
}
