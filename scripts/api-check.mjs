#!/usr/bin/env node
// `npm run api:check` (CI mode) and `npm run api:update` (`--update`, local mode): each workspace package's public
// API, as its compiled .d.ts declare it, against the API report checked in beside it. For every package in
// packages/ with an api-extractor.json (extending ../../api-extractor.base.json), and for every subpath its
// package.json `exports` names (but ./package.json), it runs API Extractor on that subpath's `types` file (dist/…d.ts)
// and compares the report with packages/<name>/review/<name>.api.md ("."), or review/<name>-<subpath>.api.md (the
// subpath's "/" as "-": ./cosmos/occ → core-cosmos-occ.api.md). One report per subpath because each is an import
// users write and API Extractor takes one entry point per run; the runs of one package share one TypeScript program.
//
// Check: a changed, missing or stale report, or any API Extractor message (an undocumented export, a type the API
// exposes but does not export, a TSDoc syntax error), prints one line naming the package and subpath, and the run
// exits 1. Update: rewrites the reports that changed, writes missing ones, deletes stale ones; it still exits 1 on
// the messages, which no report can accept.
//
// Options: --update; --no-build (skip `npm run build:packages`, which is incremental); --packages <dir> (the folder
// of the package folders, default packages/; the test points it at a copy); --only <name>[,<name>…] (unscoped
// names); --pending (print each pending message of scripts/api-pending.txt with its file and line). docs/packages.md, "Public API and its review", says how reports are made, checked and accepted.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values: opts } = parseArgs({
  options: {
    update: { type: "boolean", default: false },
    "no-build": { type: "boolean", default: false },
    packages: { type: "string", default: join(root, "packages") },
    only: { type: "string" },
    pending: { type: "boolean", default: false },
  },
});
const packagesDir = resolve(opts.packages);
const only = opts.only ? new Set(opts.only.split(",").map((s) => s.trim())) : undefined;
const update = opts.update;
const rel = (p) => relative(process.cwd(), p) || ".";

if (!opts["no-build"]) {
  const r = spawnSync(process.execPath, [join(root, "scripts", "build-packages.mjs")], { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const require = createRequire(import.meta.url);
const { CompilerState, Extractor, ExtractorConfig, ExtractorLogLevel } = require("@microsoft/api-extractor");

/** The report's base name for one `exports` subpath: "." → core, "./cosmos/occ" → core-cosmos-occ. */
function reportName(unscoped, subpath) {
  return subpath === "." ? unscoped : `${unscoped}-${subpath.slice(2).replaceAll("/", "-")}`;
}

/** The `types` file an `exports` entry names, or undefined (a plain string entry, ./package.json). */
function typesOf(entry) {
  return typeof entry === "object" && entry !== null && typeof entry.types === "string"
    ? entry.types
    : undefined;
}

// Messages owed before this check was strict (undocumented exports, unexported types), one a line as
// `<package> (<subpath>): <message> (<message id>)`: each is reported as pending, not as a problem. The list may only
// shrink: a line that no longer occurs is reported, to be deleted; a message not on it fails the check.
const pendingPath = join(root, "scripts", "api-pending.txt");
const pending = new Set(
  existsSync(pendingPath)
    ? readFileSync(pendingPath, "utf8")
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l !== "" && !l.startsWith("#"))
    : [],
);
const pendingSeen = new Set();
const problems = [];
let reports = 0;
const started = Date.now();
const folders = existsSync(packagesDir) ? readdirSync(packagesDir).sort() : [];
for (const folder of folders) {
  const dir = join(packagesDir, folder);
  const configPath = join(dir, "api-extractor.json");
  const packageJsonPath = join(dir, "package.json");
  if (!existsSync(configPath) || !existsSync(packageJsonPath)) continue;
  const pkg = JSON.parse(readFileSync(packageJsonPath, "utf8"));
  const unscoped = pkg.name.replace(/^@[^/]+\//, "");
  if (only && !only.has(unscoped)) continue;
  const entries = Object.entries(pkg.exports ?? {})
    .map(([subpath, entry]) => ({ subpath, types: typesOf(entry) }))
    .filter((e) => e.types !== undefined)
    .map((e) => ({ ...e, name: reportName(unscoped, e.subpath), dts: resolve(dir, e.types) }));
  const reportFolder = join(dir, "review");
  const missingDts = entries.filter((e) => !existsSync(e.dts));
  for (const e of missingDts) {
    problems.push(
      `${pkg.name} (${e.subpath}): ${rel(e.dts)} is missing: build the packages (npm run build:packages).`,
    );
  }
  if (missingDts.length > 0) continue;

  const base = ExtractorConfig.loadFile(configPath);
  const prepare = (e) =>
    ExtractorConfig.prepare({
      configObject: {
        ...base,
        mainEntryPointFilePath: e.dts,
        apiReport: { ...base.apiReport, reportFileName: e.name },
      },
      configObjectFullPath: configPath,
      packageJsonFullPath: packageJsonPath,
    });
  const configs = entries.map((e) => ({ e, config: prepare(e) }));
  if (configs.length === 0) continue;
  // One program for all of the package's entry points: the runs after the first cost only their analysis.
  const compilerState = CompilerState.create(configs[0].config, {
    additionalEntryPoints: entries.map((e) => e.dts),
  });
  for (const { e, config } of configs) {
    reports += 1;
    const where = `${pkg.name} (${e.subpath})`;
    const reportPath = join(reportFolder, `${e.name}.api.md`);
    const diff = [];
    const result = Extractor.invoke(config, {
      localBuild: update,
      compilerState,
      printApiReportDiff: !update,
      messageCallback: (message) => {
        message.handled = true;
        if (message.logLevel === ExtractorLogLevel.None || message.logLevel === ExtractorLogLevel.Verbose)
          return;
        if (message.logLevel === ExtractorLogLevel.Info) return;
        switch (message.messageId) {
          case "console-api-report-not-copied":
          case "console-api-report-copied":
          case "console-api-report-created":
            return; // Said below, once, in this script's words.
          case "console-api-report-diff":
            diff.push(message.text);
            return;
          case "console-compiler-version-notice":
            return; // API Extractor analyses with the TypeScript it bundles; the .d.ts are plain.
        }
        // A dependency's own TSDoc (e.g. @azure/cosmos's "@hidden" tag) is not ours to judge.
        if (message.category === "TSDoc" && message.sourceFilePath?.includes(`${sep}node_modules${sep}`))
          return;
        const key = `${where}: ${message.text} (${message.messageId})`;
        const at = message.sourceFilePath
          ? `${rel(message.sourceFilePath)}${message.sourceFileLine ? `:${message.sourceFileLine}` : ""}: `
          : "";
        if (pending.has(key)) {
          pendingSeen.add(key);
          if (opts.pending) console.log(`pending: ${where}: ${at}${message.text} (${message.messageId})`);
          return;
        }
        problems.push(`${where}: ${at}${message.text} (${message.messageId})`);
      },
    });
    if (result.apiReportChanged) {
      if (update) {
        console.log(`api:update: ${where}: wrote ${rel(reportPath)}`);
      } else {
        const existed = existsSync(reportPath);
        problems.push(
          `${where}: the API report ${rel(reportPath)} ${existed ? "differs from the API the build declares" : "is missing"}; ` +
            "if the change is meant, run `npm run api:update` and commit the report.",
        );
        for (const d of diff) console.log(d.replace(/^Changes to the API report:\n\n/, ""));
      }
    }
  }
  // A report no entry point writes any more (a subpath removed or renamed).
  const wanted = new Set(entries.map((e) => `${e.name}.api.md`));
  const existing = existsSync(reportFolder)
    ? readdirSync(reportFolder).filter((f) => f.endsWith(".api.md"))
    : [];
  for (const f of existing.filter((f) => !wanted.has(f))) {
    const p = join(reportFolder, f);
    if (update) {
      rmSync(p);
      console.log(`api:update: ${pkg.name}: deleted ${rel(p)} (no export subpath writes it)`);
    } else {
      problems.push(
        `${pkg.name}: ${rel(p)} is the report of no export subpath; run \`npm run api:update\` (deletes it) and commit.`,
      );
    }
  }
}

const mode = update ? "api:update" : "api:check";
if (!only && packagesDir === join(root, "packages")) {
  for (const key of pending)
    if (!pendingSeen.has(key)) console.log(`${mode}: fixed, delete from ${rel(pendingPath)}: ${key}`);
}
if (pendingSeen.size > 0)
  console.log(`${mode}: ${pendingSeen.size} message(s) pending in ${rel(pendingPath)}.`);
for (const p of problems) console.error(`${mode}: ${p}`);
const took = ((Date.now() - started) / 1000).toFixed(1);
if (problems.length > 0) {
  console.error(`${mode}: ${problems.length} problem(s) in ${reports} API report(s) (${took} s).`);
  process.exit(1);
}
console.log(`${mode}: ${reports} API report(s) ${update ? "written or unchanged" : "match"} (${took} s).`);
