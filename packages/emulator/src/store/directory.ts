import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * Creates a directory and its parents one level at a time. Node's `mkdirSync(…, {recursive: true})` can loop
 * forever on some unwritable paths (under /proc, for one); this always ends with the directory or an error.
 */
export function ensureDirectory(dir: string): void {
  const path = resolve(dir);
  const missing: string[] = [];
  let at = path;
  for (;;) {
    try {
      if (!statSync(at).isDirectory()) {
        throw Object.assign(new Error(`'${at}' is not a directory`), { code: "ENOTDIR" });
      }
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      missing.push(at);
      const parent = dirname(at);
      if (parent === at) break;
      at = parent;
    }
  }
  for (const d of missing.reverse()) mkdirSync(d);
}
