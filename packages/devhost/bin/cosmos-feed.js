#!/usr/bin/env node
// `npx cosmos-feed …`, `npm start`: runs the command line in this process (so signals reach the CLI directly), from
// the compiled JavaScript in dist/ (`npm run build:packages` at the repository's root, run by `npm install`) when
// it is at least as new as every source it is compiled from — this package's and, in the repository, its sibling
// packages' (packages/*/src) — else from the TypeScript sources through tsx's loader, saying why in one line.
// COSMOS_FEED_FROM_SOURCE=1 always runs the sources, silently (the tests do: they test the working tree). From the
// sources, the workspace packages resolve to their sources too (the "source" condition of their `exports`, here and
// in every child process: NODE_OPTIONS), so no compiled copy is mixed in. Installed from a registry (no src/), the
// compiled CLI always runs.
import { existsSync, readdirSync, statSync } from "node:fs";
import { register } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const pkg = fileURLToPath(new URL("..", import.meta.url));
const compiledMain = join(pkg, "dist", "cli", "main.js");
const sources = join(pkg, "src");

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
  const stamp = join(pkg, "dist", "built-at");
  if (!existsSync(compiledMain) || !existsSync(stamp)) return "the compiled CLI (dist/) is missing";
  if (!existsSync(sources)) return undefined;
  const built = statSync(stamp).mtimeMs;
  const best = { path: stamp, mtimeMs: 0 };
  // This package and its siblings in the repository (packages/<name>/): their sources, package.json, tsconfig.json.
  const packages = join(pkg, "..");
  for (const name of readdirSync(packages)) {
    const dir = join(packages, name);
    if (!existsSync(join(dir, "package.json"))) continue;
    newest(join(dir, "src"), best);
    for (const f of ["package.json", "tsconfig.json"]) {
      const path = join(dir, f);
      if (existsSync(path) && statSync(path).mtimeMs > best.mtimeMs)
        Object.assign(best, { path, mtimeMs: statSync(path).mtimeMs });
    }
  }
  if (best.mtimeMs <= built) return undefined;
  return `dist/ is older than ${relative(packages, best.path)} (changed ${new Date(best.mtimeMs).toISOString()})`;
}

const why = process.env.COSMOS_FEED_FROM_SOURCE === "1" ? "" : whyNotCompiled();
if (why === undefined) {
  await import(pathToFileURL(compiledMain).href);
} else {
  if (why)
    process.stderr.write(
      `cosmos-feed: ${why}; running from the TypeScript sources (tsx) — \`npm run build:packages\` compiles them.\n`,
    );
  if (!(process.env.NODE_OPTIONS ?? "").includes("--conditions=source")) {
    process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, "--conditions=source"].filter(Boolean).join(" ");
  }
  const { register: registerTsx } = await import("tsx/esm/api");
  registerTsx();
  // Registered after tsx, so it runs first: every resolution in this process gets the "source" condition.
  register(
    `data:text/javascript,${encodeURIComponent(
      'export async function resolve(s, c, next) { return next(s, c.conditions.includes("source") ? c : { ...c, conditions: [...c.conditions, "source"] }); }',
    )}`,
  );
  await import("../src/cli/main.ts");
}
