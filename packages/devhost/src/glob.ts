import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * The part of globby's pattern language that `package.json` `main` uses in Functions apps: `*`, `?`, `**`,
 * `{a,b}` (nested too). Returns paths relative to `cwd` with "/" separators, files only, in pattern order
 * (each alternative's matches sorted), without duplicates; names starting with "." are skipped as globby does.
 */
export function globFiles(pattern: string, cwd: string): string[] {
  const seen = new Set<string>();
  for (const alternative of expandBraces(pattern.replace(/^\.\//, ""))) {
    const found: string[] = [];
    walk(cwd, "", alternative.split("/").filter(Boolean), found);
    for (const file of found.sort()) seen.add(file);
  }
  return [...seen];
}

/** `a/{b,c/{d,e}}.js` → `a/b.js`, `a/c/d.js`, `a/c/e.js`. */
export function expandBraces(pattern: string): string[] {
  const open = pattern.indexOf("{");
  if (open < 0) return [pattern];
  let depth = 0;
  const commas: number[] = [];
  for (let i = open; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "{") depth++;
    else if (c === "}" && --depth === 0) {
      const head = pattern.slice(0, open);
      const tail = pattern.slice(i + 1);
      const cuts = [open, ...commas, i];
      const parts = cuts.slice(1).map((end, k) => pattern.slice(cuts[k] + 1, end));
      return parts.flatMap((part) => expandBraces(head + part + tail));
    } else if (c === "," && depth === 1) commas.push(i);
  }
  return [pattern]; // unbalanced: a literal "{"
}

function segmentRegExp(segment: string): RegExp {
  const source = segment
    .split("")
    .map((c) => (c === "*" ? "[^/]*" : c === "?" ? "[^/]" : c.replace(/[.+^$()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`);
}

function entries(dir: string): { name: string; isDir: boolean }[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).map((e) => ({
      name: e.name,
      // Follow symlinks as globby does.
      isDir: e.isDirectory() || (e.isSymbolicLink() && statSync(join(dir, e.name)).isDirectory()),
    }));
  } catch {
    return [];
  }
}

function walk(root: string, rel: string, segments: string[], out: string[]): void {
  if (segments.length === 0) return;
  const [segment, ...rest] = segments;
  const dir = join(root, rel);
  if (segment === "**") {
    walk(root, rel, rest, out); // zero directories
    for (const e of entries(dir)) {
      if (e.isDir && !e.name.startsWith(".")) walk(root, rel ? `${rel}/${e.name}` : e.name, segments, out);
    }
    return;
  }
  const literal = !/[*?]/.test(segment);
  const re = literal ? undefined : segmentRegExp(segment);
  for (const e of entries(dir)) {
    if (literal ? e.name !== segment : e.name.startsWith(".") || !re?.test(e.name)) continue;
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (rest.length === 0) {
      if (!e.isDir && !out.includes(path)) out.push(path);
    } else if (e.isDir) walk(root, path, rest, out);
  }
}
