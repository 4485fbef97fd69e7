import { DevHostError } from "../errors.js";

/**
 * HTTP route templates as the Functions host (ASP.NET Core routing) reads them: literal segments
 * (case-insensitive), `{name}`, constraints `{id:int}` `{n:alpha}` `{d:regex(^\d+$)}` `{s:minlength(2)}` …,
 * optional `{x?}`, defaults `{x=1}`, catch-all `{*rest}` / `{**rest}`, and complex segments like `{name}.{ext}`.
 */

type Check = (value: string) => boolean;

interface Param {
  name: string;
  optional: boolean;
  catchAll: boolean;
  defaultValue?: string;
  checks: Check[];
}

interface Segment {
  /** One parameter filling the whole segment, or undefined for literal/complex segments. */
  param?: Param;
  /** For literal and complex segments: a regex over the whole segment with one group per parameter. */
  regex?: RegExp;
  params: Param[];
  rank: number;
}

export interface CompiledRoute {
  template: string;
  segments: Segment[];
  /** ASP.NET's inbound precedence: lower ranks first (literal 1 … catch-all 5). */
  precedence: number[];
}

const INT32 = [-(2 ** 31), 2 ** 31 - 1];
const number = (v: string) => v.trim() !== "" && Number.isFinite(Number(v));
const integerIn = (v: string, [min, max]: number[]) =>
  /^-?\d+$/.test(v) && Number(v) >= min && Number(v) <= max;

function constraint(spec: string, template: string): Check {
  const m = /^([A-Za-z]+)(?:\((.*)\))?$/s.exec(spec);
  const name = m?.[1].toLowerCase();
  const args = m?.[2]?.split(",").map((a) => a.trim()) ?? [];
  const n = args.map(Number);
  switch (name) {
    case "int":
      return (v) => integerIn(v, INT32);
    case "long":
      return (v) => /^-?\d+$/.test(v) && BigInt(v) >= -(2n ** 63n) && BigInt(v) < 2n ** 63n;
    case "bool":
      return (v) => /^(true|false)$/i.test(v);
    case "alpha":
      return (v) => /^[a-z]+$/i.test(v);
    case "guid":
      return (v) => /^[{(]?[0-9a-f]{8}-?([0-9a-f]{4}-?){3}[0-9a-f]{12}[})]?$/i.test(v);
    case "datetime":
      return (v) => !Number.isNaN(Date.parse(v));
    case "decimal":
    case "double":
    case "float":
      return number;
    case "min":
      return (v) => /^-?\d+$/.test(v) && Number(v) >= n[0];
    case "max":
      return (v) => /^-?\d+$/.test(v) && Number(v) <= n[0];
    case "range":
      return (v) => /^-?\d+$/.test(v) && Number(v) >= n[0] && Number(v) <= n[1];
    case "minlength":
      return (v) => v.length >= n[0];
    case "maxlength":
      return (v) => v.length <= n[0];
    case "length":
      return args.length === 2 ? (v) => v.length >= n[0] && v.length <= n[1] : (v) => v.length === n[0];
    case "regex": {
      // ASP.NET: case-insensitive, not anchored unless the pattern anchors itself.
      const re = new RegExp(m?.[2] ?? "", "i");
      return (v) => re.test(v);
    }
    default:
      throw new DevHostError(
        `Route '${template}': the constraint reference '${spec}' could not be resolved.`,
        {
          code: "InvalidRoute",
        },
      );
  }
}

/** Splits on `sep` outside parentheses (constraint arguments may contain ':' or '='). */
function splitOutsideParens(text: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")") depth--;
    else if (text[i] === sep && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

function parseParam(inner: string, template: string): Param {
  let body = inner;
  const catchAll = body.startsWith("*");
  body = body.replace(/^\*{1,2}/, "");
  const [beforeDefault, ...defaultParts] = splitOutsideParens(body, "=");
  let head = beforeDefault;
  const optional = head.endsWith("?");
  if (optional) head = head.slice(0, -1);
  const [name, ...constraints] = splitOutsideParens(head, ":");
  if (!/^[A-Za-z_][\w-]*$/.test(name)) {
    throw new DevHostError(`Route '${template}': '{${inner}}' is not a valid parameter.`, {
      code: "InvalidRoute",
    });
  }
  return {
    name,
    optional,
    catchAll,
    defaultValue: defaultParts.length ? defaultParts.join("=") : undefined,
    checks: constraints.map((c) => constraint(c, template)),
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Splits a segment into literal text and `{parameter}` tokens; `{{` and `}}` escape braces, also inside. */
function tokenize(text: string, template: string): { literal?: string; param?: string }[] {
  const tokens: { literal?: string; param?: string }[] = [];
  let literal = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if ((c === "{" || c === "}") && text[i + 1] === c) {
      literal += c;
      i++;
    } else if (c === "{") {
      let inner = "";
      for (i++; i < text.length; i++) {
        if ((text[i] === "{" || text[i] === "}") && text[i + 1] === text[i]) inner += text[i++];
        else if (text[i] === "}") break;
        else inner += text[i];
      }
      if (i >= text.length) {
        throw new DevHostError(`Route '${template}': unbalanced '{'.`, { code: "InvalidRoute" });
      }
      if (literal) tokens.push({ literal });
      literal = "";
      tokens.push({ param: inner });
    } else if (c === "}") {
      throw new DevHostError(`Route '${template}': unbalanced '}'.`, { code: "InvalidRoute" });
    } else literal += c;
  }
  if (literal) tokens.push({ literal });
  return tokens;
}

export function compileRoute(template: string): CompiledRoute {
  const segments: Segment[] = [];
  const parts = template
    .replace(/^\/+|\/+$/g, "")
    .split("/")
    .filter((s) => s !== "");
  for (const [i, text] of parts.entries()) {
    const tokens = tokenize(text, template);
    if (tokens.length === 1 && tokens[0].param !== undefined) {
      const param = parseParam(tokens[0].param, template);
      if (param.catchAll && i !== parts.length - 1) {
        throw new DevHostError(`Route '${template}': a catch-all parameter must be the last segment.`, {
          code: "InvalidRoute",
        });
      }
      const rank = param.catchAll ? 5 : param.checks.length ? 3 : 4;
      segments.push({ param, params: [param], rank });
      continue;
    }
    const params: Param[] = [];
    const source = tokens
      .map((t) => {
        if (t.param === undefined) return escapeRegExp(t.literal ?? "");
        params.push(parseParam(t.param, template));
        return "(.+?)";
      })
      .join("");
    segments.push({ regex: new RegExp(`^${source}$`, "i"), params, rank: params.length ? 2 : 1 });
  }
  return { template, segments, precedence: segments.map((s) => s.rank) };
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Matches a path (without query, prefix already removed) → route values, or undefined. */
export function matchRoute(route: CompiledRoute, pathSegments: string[]): Record<string, string> | undefined {
  const values: Record<string, string> = {};
  for (const [i, segment] of route.segments.entries()) {
    const param = segment.param;
    if (param?.catchAll) {
      // A catch-all takes the rest of the path, also when it is empty.
      const rest = pathSegments.slice(i).map(decode).join("/");
      const value = rest === "" ? param.defaultValue : rest;
      if (value !== undefined) {
        if (!param.checks.every((c) => c(value))) return undefined;
        values[param.name] = value;
      }
      return values;
    }
    const text = pathSegments[i];
    if (text === undefined) {
      if (!param || !(param.optional || param.defaultValue !== undefined)) return undefined;
      if (param.defaultValue !== undefined) values[param.name] = param.defaultValue;
      continue;
    }
    if (param) {
      const value = decode(text);
      if (!param.checks.every((c) => c(value))) return undefined;
      values[param.name] = value;
      continue;
    }
    const m = segment.regex?.exec(decode(text));
    if (!m) return undefined;
    for (const [k, p] of segment.params.entries()) {
      if (!p.checks.every((c) => c(m[k + 1]))) return undefined;
      values[p.name] = m[k + 1];
    }
  }
  return pathSegments.length > route.segments.length ? undefined : values;
}

export function comparePrecedence(a: CompiledRoute, b: CompiledRoute): number {
  for (let i = 0; i < Math.max(a.precedence.length, b.precedence.length); i++) {
    const d = (a.precedence[i] ?? 0) - (b.precedence[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
