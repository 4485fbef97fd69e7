/** JSON value helpers shared by the evaluator, the functions and the aggregates (Cosmos DB type rules). */

export type TypeName = "undefined" | "null" | "boolean" | "number" | "string" | "array" | "object";

export function typeOf(v: unknown): TypeName {
  if (v === undefined) return "undefined";
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  const t = typeof v;
  if (t === "boolean" || t === "number" || t === "string") return t;
  return "object";
}

/** Cross-type sort order: undefined < null < boolean < number < string < array < object. */
const TYPE_RANK: Record<TypeName, number> = {
  undefined: 0,
  null: 1,
  boolean: 2,
  number: 3,
  string: 4,
  array: 5,
  object: 6,
};

/** Total order used by ORDER BY, MIN/MAX and DISTINCT ordering. */
export function compareValues(a: unknown, b: unknown): number {
  const ta = typeOf(a);
  const tb = typeOf(b);
  if (ta !== tb) return TYPE_RANK[ta] - TYPE_RANK[tb];
  switch (ta) {
    case "boolean":
    case "number":
      return a === b ? 0 : (a as number) < (b as number) ? -1 : 1;
    case "string":
      // Ordinal (UTF-16 code unit) order, as the service compares strings.
      return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
    case "array":
    case "object": {
      const ja = canonicalJson(a);
      const jb = canonicalJson(b);
      return ja === jb ? 0 : ja < jb ? -1 : 1;
    }
    default:
      return 0;
  }
}

/** Structural equality of two defined JSON values (object key order ignored). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const ta = typeOf(a);
  if (ta !== typeOf(b)) return false;
  if (ta === "array") {
    const x = a as unknown[];
    const y = b as unknown[];
    return x.length === y.length && x.every((v, i) => deepEqual(v, y[i]));
  }
  if (ta === "object") {
    const x = a as Record<string, unknown>;
    const y = b as Record<string, unknown>;
    const kx = Object.keys(x).filter((k) => x[k] !== undefined);
    const ky = Object.keys(y).filter((k) => y[k] !== undefined);
    return kx.length === ky.length && kx.every((k) => deepEqual(x[k], y[k]));
  }
  return false;
}

/** JSON with object keys sorted (undefined members dropped): a key for DISTINCT and GROUP BY. */
export function canonicalJson(v: unknown): string {
  if (v === undefined) return "u";
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? "null" : canonicalJson(x))).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}
