#!/usr/bin/env node
// `npx cosmos-feed …`, `npm start`: runs the command line in this process (so signals reach the CLI directly), from
// the compiled JavaScript in dist-tools/ (`npm run build:tools`, run by `npm install`) when it is at least as new as
// every source it is compiled from; else from the TypeScript sources through tsx's loader, saying why in one line.
// COSMOS_FEED_FROM_SOURCE=1 always runs the sources, silently (the tests do: they test the working tree).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const compiledMain = join(root, "dist-tools", "src", "cli", "main.js");

/** The newest file of `dir` and below, as { path, mtimeMs }. */
function newest(dir, best) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return best;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) newest(path, best);
    else if (e.isFile()) {
      const mtimeMs = statSync(path).mtimeMs;
      if (mtimeMs > best.mtimeMs) Object.assign(best, { path, mtimeMs });
    }
  }
  return best;
}

/** Why the compiled CLI cannot run (missing, or older than a source), or undefined when it can. */
function whyNotCompiled() {
  const stamp = join(root, "dist-tools", "built-at");
  if (!existsSync(compiledMain) || !existsSync(stamp)) return "the compiled CLI (dist-tools/) is missing";
  const built = statSync(stamp).mtimeMs;
  const tsconfig = join(root, "tsconfig.tools.json");
  const best = { path: tsconfig, mtimeMs: statSync(tsconfig).mtimeMs };
  for (const f of ["tsconfig.json", "package.json"]) {
    const mtimeMs = statSync(join(root, f)).mtimeMs;
    if (mtimeMs > best.mtimeMs) Object.assign(best, { path: join(root, f), mtimeMs });
  }
  for (const dir of JSON.parse(readFileSync(tsconfig, "utf8")).include) newest(join(root, dir), best);
  if (best.mtimeMs <= built) return undefined;
  return `dist-tools/ is older than ${relative(root, best.path)} (changed ${new Date(best.mtimeMs).toISOString()})`;
}

const why = process.env.COSMOS_FEED_FROM_SOURCE === "1" ? "" : whyNotCompiled();
if (why === undefined) {
  await import(pathToFileURL(compiledMain).href);
} else {
  if (why)
    process.stderr.write(
      `cosmos-feed: ${why}; running from the TypeScript sources (tsx) — \`npm run build:tools\` compiles them.\n`,
    );
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
