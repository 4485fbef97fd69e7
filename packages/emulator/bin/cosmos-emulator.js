#!/usr/bin/env node
// `npx cosmos-emulator …`: the Cosmos DB emulator in the foreground, in this process (so signals reach it
// directly), from the compiled JavaScript in dist/ (`npm run build:packages` at the repository's root, run by
// `npm install`; an install from a registry has only dist/). In the repository, COSMOS_FEED_FROM_SOURCE=1 — or a
// missing dist/ — runs the TypeScript sources through tsx's loader instead (the repository's devDependency), with
// the workspace packages resolved to their sources too (the "source" condition of their `exports`).
import { existsSync } from "node:fs";
import { register } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const pkg = fileURLToPath(new URL("..", import.meta.url));
const compiledMain = join(pkg, "dist", "cli", "main.js");
const sourceMain = join(pkg, "src", "cli", "main.ts");

const fromSource =
  existsSync(sourceMain) && (process.env.COSMOS_FEED_FROM_SOURCE === "1" || !existsSync(compiledMain));
if (!fromSource) {
  await import(pathToFileURL(compiledMain).href);
} else {
  if (process.env.COSMOS_FEED_FROM_SOURCE !== "1")
    process.stderr.write(
      "cosmos-emulator: the compiled command (dist/) is missing; running from the TypeScript sources (tsx) — `npm run build:packages` compiles them.\n",
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
  await import(pathToFileURL(sourceMain).href);
}
