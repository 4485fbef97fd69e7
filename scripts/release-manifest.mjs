#!/usr/bin/env node
// The package.json a workspace package ships, apart from the one the repository runs. Each `exports` entry carries
// a "source" condition (`"source": "./src/index.ts"`) for the repository's own runs (tsx, vitest and tsc resolve it
// with `--conditions=source` / `customConditions`); the tarball has no src/, so a user whose tooling sets that
// condition would resolve a file that is not there. Every package's `prepack` runs `strip` and its `postpack` runs
// `restore` (cwd: the package folder, as npm runs them):
//
//   node ../../scripts/release-manifest.mjs strip     package.json → package.json.prepack (the backup), then
//                                                     package.json rewritten without "source" conditions
//   node ../../scripts/release-manifest.mjs restore   package.json.prepack → package.json (nothing to do without one)
//
// A pack that fails after its prepack never runs its postpack, and leaves the stripped package.json with its backup
// beside it: the next `strip` restores the backup first (it never backs up a stripped file) — which is why the
// stripped file keeps its prepack and postpack: npm reads the scripts it runs from the package.json on disk before
// the prepack, so a stripped file without them would be packed as it is and never restored. (They are inert in the
// tarball: npm runs prepack only when packing a folder or installing a git dependency, never from a tarball.) And
// scripts/build-packages.mjs (run by `npm install`, `npm run build:packages` and every pack the tests make) restores
// any backup it finds. The backup's name is git-ignored. scripts/package.mjs (the deployed Functions zip) copies the
// packages through `releaseManifest` too. docs/packages.md, "What a tarball holds".
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The backup of a package's package.json while a pack runs. */
export const BACKUP_NAME = "package.json.prepack";
/** The condition only the repository resolves. */
export const SOURCE_CONDITION = "source";

/** `exports` (or any part of it) without "source" conditions. */
function withoutSource(value) {
  if (Array.isArray(value)) return value.map(withoutSource);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== SOURCE_CONDITION)
      .map(([key, v]) => [key, withoutSource(v)]),
  );
}

/** The manifest as it ships: the same, but for the "source" conditions of its `exports`. */
export function releaseManifest(manifest) {
  return manifest.exports === undefined
    ? { ...manifest }
    : { ...manifest, exports: withoutSource(manifest.exports) };
}

/** Puts back the package.json a pack that failed midway left stripped; false when there was no backup. */
export function restoreManifest(dir) {
  const backup = join(dir, BACKUP_NAME);
  if (!existsSync(backup)) return false;
  renameSync(backup, join(dir, "package.json"));
  return true;
}

/** Backs the package.json up and rewrites it as it ships (`releaseManifest`). */
export function stripManifest(dir) {
  const file = join(dir, "package.json");
  restoreManifest(dir);
  copyFileSync(file, join(dir, BACKUP_NAME));
  const shipped = releaseManifest(JSON.parse(readFileSync(file, "utf8")));
  // Written beside and renamed over: a crash leaves the original or the stripped file whole, never half of one.
  const temp = `${file}.tmp`;
  writeFileSync(temp, `${JSON.stringify(shipped, null, 2)}\n`);
  renameSync(temp, file);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, dir = process.cwd()] = process.argv.slice(2);
  if (command === "strip") stripManifest(resolve(dir));
  else if (command === "restore") restoreManifest(resolve(dir));
  else {
    console.error("usage: release-manifest.mjs strip|restore [package folder]");
    process.exit(2);
  }
}
