import type { Query } from "./ast.js";
import { parseQuery } from "./parser.js";

/** Parsed queries kept, least recently used evicted first (parsing is cheap; repeated queries are common). */
const CACHE_LIMIT = 512;
/** Longer texts are parsed each time (a few of them would otherwise hold megabytes). */
const CACHEABLE_LENGTH = 16 * 1024;
const cache = new Map<string, Query>();

/** Parses a query text (cached). Throws QueryCompileError. The returned tree is shared: never mutate it. */
export function compileQuery(text: string): Query {
  let q = cache.get(text);
  if (q) {
    cache.delete(text);
    cache.set(text, q);
    return q;
  }
  q = parseQuery(text.trim());
  if (text.length > CACHEABLE_LENGTH) return q;
  cache.set(text, q);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  return q;
}
