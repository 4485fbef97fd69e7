#!/usr/bin/env node
// `npm run build:packages`, and npm's `prepare` (run by `npm install` and `npm ci` at the root): compiles every
// workspace package (packages/*: core, changefeed, locks, emulator, devhost) into its own dist/ with TypeScript's
// build mode (`tsc -b tsconfig.packages.json`: each package after the packages it references, incremental), then
// copies the files a package reads at run time that tsc does not emit (the dashboard's browser sources), and writes
// packages/devhost/dist/built-at, dated when this build began: the devhost's bin/cosmos-feed.js compares it with the
// sources. Where there is nothing to compile (a deployment package, an install without devDependencies) it says so
// and does nothing. docs/packages.md describes the build.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { restoreManifest } from "./release-manifest.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const project = join(root, "tsconfig.packages.json");
if (!existsSync(project) || !existsSync(tsc)) {
  console.log("build:packages: no tsconfig.packages.json or no typescript here; nothing to compile.");
  process.exit(0);
}
// A pack that failed midway left a package's package.json stripped of its "source" conditions, its original beside
// it (scripts/release-manifest.mjs): put back before anything reads it.
const packagesDir = join(root, "packages");
for (const name of existsSync(packagesDir) ? readdirSync(packagesDir) : []) {
  if (restoreManifest(join(packagesDir, name)))
    console.log(`build:packages: packages/${name}/package.json restored from the backup a failed pack left.`);
}
const began = new Date();
const r = spawnSync(process.execPath, [tsc, "-b", project], { stdio: "inherit" });
if (r.status !== 0) {
  console.error(
    `build:packages: tsc failed (${r.status ?? r.signal}); cosmos-feed runs from the TypeScript sources meanwhile.`,
  );
  process.exit(r.status ?? 1);
}
// Served to the browser, transpiled on request (packages/devhost/src/dashboard/assets.ts): shipped beside the build.
const client = join(root, "packages", "devhost", "src", "dashboard", "client");
cpSync(client, join(root, "packages", "devhost", "dist", "dashboard", "client"), {
  recursive: true,
  filter: (from) => !from.endsWith("tsconfig.json"),
});
const stamp = join(root, "packages", "devhost", "dist", "built-at");
mkdirSync(dirname(stamp), { recursive: true });
writeFileSync(stamp, `${began.toISOString()}\n`);
utimesSync(stamp, began, began);
