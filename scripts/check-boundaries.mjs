#!/usr/bin/env node
// `node scripts/check-boundaries.mjs [root]` (run by `npm run lint`, so by `npm test` and CI): the dependency rule of
// the workspace packages (docs/packages.md). Reads every import, export … from, dynamic import() and
// `typeof import()` of packages/*/src and packages/*/bin, functions/, src/, bench/ and scripts/ (TypeScript's own
// pre-processor finds them), and prints one line per violation — file:line, the specifier, why — then exits 1:
//   - a relative import that leaves its package's folder (packages/<name>/ for a package, the repository's root
//     outside packages/ for the app, bench and scripts): reach a package through its name and `exports`;
//   - packages/* importing the app's code (anything outside packages/), or any code but the tests importing test/;
//   - `@cosmos-feed/<name>/<subpath>` where <name> is no package here or its `exports` map does not name <subpath>;
//   - a package (or the app) importing a sibling package its package.json does not list as a dependency;
//   - the durable task hub's storage outside its Cosmos DB backend (docs/durable-design.md, "The backend"): a module
//     of packages/devhost/src/durable/ importing @azure/cosmos outside durable/cosmos-backend/, or any other module
//     importing the hub's documents (durable/documents) or the Cosmos backend's requests and queries (its store,
//     queries, commit-plan) — the engine, the client, the dashboard and the benchmarks go through the backend.
// The tests (test/**) may reach into a package's internals by relative path for now: they are not checked.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const ts = createRequire(join(here, "..", "package.json"))("typescript");

const SCOPE = "@cosmos-feed/";
const DURABLE = "packages/devhost/src/durable/";
const COSMOS_BACKEND = `${DURABLE}cosmos-backend/`;
/** The task hub's storage internals: only the backends (durable/cosmos-backend/, durable/memory-backend*) use them. */
const STORAGE_INTERNALS = [
  `${DURABLE}documents`,
  `${COSMOS_BACKEND}store`,
  `${COSMOS_BACKEND}queries`,
  `${COSMOS_BACKEND}commit-plan`,
];
const CODE = /\.(?:[cm]?[jt]s|tsx)$/;

/** The files of `dir` and below (no node_modules, no dist). */
function files(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === "node_modules" || e.name === "dist") continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) files(p, out);
    else if (e.isFile() && CODE.test(e.name)) out.push(p);
  }
  return out;
}

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));
const posix = (p) => p.split(sep).join("/");

/** Does an `exports` map name `subpath` ("." or "./x")? Keys with one `*` match as Node matches them. */
function exportsName(exportsMap, subpath) {
  if (exportsMap === undefined) return subpath === ".";
  if (typeof exportsMap === "string" || Array.isArray(exportsMap)) return subpath === ".";
  const keys = Object.keys(exportsMap);
  if (!keys.some((k) => k.startsWith("."))) return subpath === "."; // a map of conditions: "." only
  return keys.some((k) => {
    if (!k.includes("*")) return k === subpath;
    const [before, after] = k.split("*");
    return subpath.startsWith(before) && subpath.endsWith(after) && subpath.length >= k.length - 1;
  });
}

/** The violations under `root`, each as { file, line, specifier, why }. */
export function checkBoundaries(root) {
  const packagesDir = join(root, "packages");
  const packages = new Map(); // name → { dir, manifest }
  if (existsSync(packagesDir)) {
    for (const name of readdirSync(packagesDir)) {
      const manifestFile = join(packagesDir, name, "package.json");
      if (!existsSync(manifestFile)) continue;
      const manifest = readJson(manifestFile);
      packages.set(manifest.name, { dir: join(packagesDir, name), manifest });
    }
  }
  const rootManifest = existsSync(join(root, "package.json")) ? readJson(join(root, "package.json")) : {};
  const owners = [...packages.values()];
  /** The package folder a path is in, or undefined (the app, bench, scripts). */
  const ownerOf = (path) => owners.find((p) => path === p.dir || path.startsWith(p.dir + sep));
  const listed = (manifest) =>
    new Set(
      Object.keys({
        ...manifest.dependencies,
        ...manifest.peerDependencies,
        ...manifest.optionalDependencies,
        ...(manifest === rootManifest ? manifest.devDependencies : {}),
      }),
    );

  const checked = [
    ...owners.flatMap((p) => [...files(join(p.dir, "src")), ...files(join(p.dir, "bin"))]),
    ...["functions", "src", "bench", "scripts"].flatMap((d) => files(join(root, d))),
  ];
  const violations = [];
  for (const file of checked) {
    const text = readFileSync(file, "utf8");
    const owner = ownerOf(file);
    const manifest = owner ? owner.manifest : rootManifest;
    const who = owner ? owner.manifest.name : "the app";
    const lineOf = (pos) => text.slice(0, pos).split("\n").length;
    const { importedFiles } = ts.preProcessFile(text, true, true);
    for (const { fileName: specifier, pos } of importedFiles) {
      const report = (why) =>
        violations.push({ file: posix(relative(root, file)), line: lineOf(pos), specifier, why });
      const from = posix(relative(root, file));
      if (specifier === "@azure/cosmos" && from.startsWith(DURABLE) && !from.startsWith(COSMOS_BACKEND)) {
        report(
          "the durable task hub's storage is its backend's: only durable/cosmos-backend/ talks to Cosmos DB (go through TaskHubBackend)",
        );
      }
      if (specifier.startsWith(".") && !from.startsWith(DURABLE)) {
        const to = posix(relative(root, resolve(dirname(file), specifier))).replace(/\.[cm]?[jt]s$/, "");
        if (STORAGE_INTERNALS.includes(to)) {
          report(
            "reads the durable task hub's documents: go through its backend (TaskHubBackend) or the task hub's exports",
          );
        }
      }
      if (specifier.startsWith(".")) {
        const target = resolve(dirname(file), specifier);
        const targetOwner = ownerOf(target);
        if (owner && targetOwner !== owner) {
          report(
            targetOwner
              ? `reaches into ${targetOwner.manifest.name}'s internals from ${who}: import '${targetOwner.manifest.name}' (a subpath its exports name)`
              : `${who} imports the app's code (${posix(relative(root, target))}): a package may only use its own files and other packages' exports`,
          );
        } else if (!owner && targetOwner) {
          report(
            `reaches into ${targetOwner.manifest.name}'s internals from ${posix(relative(root, file)).split("/")[0]}/: import '${targetOwner.manifest.name}' (a subpath its exports name)`,
          );
        } else if (!owner && posix(relative(root, target)).startsWith("test/")) {
          report(
            "imports the tests' code: what it needs belongs in bench/lib, scripts or a package's exports",
          );
        } else if (!owner && relative(root, target).startsWith("..")) {
          report("leaves the repository");
        }
        continue;
      }
      if (!specifier.startsWith(SCOPE)) continue;
      const [scope, base, ...rest] = specifier.split("/");
      const name = `${scope}/${base}`;
      const subpath = rest.length ? `./${rest.join("/")}` : ".";
      const target = packages.get(name);
      if (!target) {
        report(`no workspace package is named ${name} (packages/*/package.json)`);
        continue;
      }
      if (!exportsName(target.manifest.exports, subpath)) {
        report(
          `${name}'s exports do not name '${subpath}' (they name ${Object.keys(
            target.manifest.exports ?? { ".": 0 },
          )
            .filter((k) => k !== "./package.json")
            .join(", ")})`,
        );
      }
      if (target !== owner && !listed(manifest).has(name)) {
        report(`${who} imports ${name}, which its package.json does not list as a dependency`);
      }
    }
  }
  return violations;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(here, ".."));
  if (!statSync(root).isDirectory()) throw new Error(`check-boundaries: ${root} is not a folder`);
  const violations = checkBoundaries(root);
  for (const v of violations) console.error(`${v.file}:${v.line}: '${v.specifier}' ${v.why}`);
  if (violations.length) {
    console.error(
      `check-boundaries: ${violations.length} import(s) break the dependency rule (docs/packages.md).`,
    );
    process.exit(1);
  }
  console.log("check-boundaries: every import keeps to the dependency rule.");
}
