#!/usr/bin/env node
// `npm run build:tools`, and npm's `prepare` (run by `npm install` and `npm ci` in this folder): compiles the tools
// — src/cli, src/devhost, src/emulator, src/shared (tsconfig.tools.json) — into dist-tools/, which
// bin/cosmos-feed.js runs (no TypeScript transpiled at each command). Incremental. Then writes dist-tools/built-at,
// dated when this build began: bin/cosmos-feed.js compares it with the sources. Where there is nothing to compile
// (a deployment package, an install without devDependencies) it says so and does nothing.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(join(root, "tsconfig.tools.json")) || !existsSync(tsc)) {
  console.log("build:tools: no tsconfig.tools.json or no typescript here; nothing to compile.");
  process.exit(0);
}
const began = new Date();
const r = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.tools.json")], { stdio: "inherit" });
if (r.status !== 0) {
  console.error(
    `build:tools: tsc failed (${r.status ?? r.signal}); bin/cosmos-feed.js runs from the TypeScript sources meanwhile.`,
  );
  process.exit(r.status ?? 1);
}
const stamp = join(root, "dist-tools", "built-at");
mkdirSync(dirname(stamp), { recursive: true });
writeFileSync(stamp, `${began.toISOString()}\n`);
utimesSync(stamp, began, began);
