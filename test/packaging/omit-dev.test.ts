/**
 * What a deployment ships: the built app (npm run build → dist/) with the production dependencies only. The app's
 * package.json and lockfile are installed with `npm ci --omit=dev` into a clean folder outside the repository, the
 * compiled output copied beside them, and a child process loads every function through the worker contract (the
 * dev host's loader provides @azure/functions-core as the Node worker does). The emulator, the dev host and the
 * tooling are devDependencies: none of them may be installed, and .funcignore keeps them out of the package.
 */
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../e2e/support/app-child.js";

const run = promisify(execFile);
const DEV_ONLY = [
  "better-sqlite3",
  "@zeit/cosmosdb-query",
  "commander",
  "vitest",
  "azurite",
  "tsx",
  "typescript",
  "@biomejs/biome",
  "fast-check",
  "@vercel/cosmosdb-server",
];
const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

let dir: string;
let loaded: { functions: { name: string; trigger: string }[]; errors: unknown[]; packages: string[] };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "omit-dev-"));
  const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");
  for (const f of ["package.json", "package-lock.json", "host.json"])
    copyFileSync(join(repoRoot, f), join(dir, f));
  await Promise.all([
    run(process.execPath, [tsc, "-p", join(repoRoot, "tsconfig.build.json"), "--outDir", join(dir, "dist")], {
      cwd: repoRoot,
    }),
    // From the npm cache the project's own install filled (CI runs npm ci first): nothing is downloaded.
    run("npm", ["ci", "--omit=dev", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], {
      cwd: dir,
      env: { ...process.env, npm_config_loglevel: "error" },
    }),
  ]);
  const { stdout } = await run(
    process.execPath,
    ["--import", "tsx", join(repoRoot, "test/packaging/support/load-app.ts"), dir],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        COSMOS_CONNECTION: "AccountEndpoint=https://example.documents.azure.com:443/;AccountKey=a2V5;",
      },
    },
  );
  loaded = JSON.parse(stdout.trim().split("\n").pop() as string);
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a production install (npm ci --omit=dev) + the built output", () => {
  it("installs the runtime dependencies and none of the devDependencies", () => {
    for (const name of Object.keys(pkg.dependencies))
      expect(existsSync(join(dir, "node_modules", name)), name).toBe(true);
    for (const name of DEV_ONLY) {
      expect(Object.keys(pkg.devDependencies)).toContain(name);
      expect(existsSync(join(dir, "node_modules", name)), name).toBe(false);
    }
  });

  it("registers every function of the app through the worker contract, from its own node_modules", () => {
    expect(loaded.errors).toEqual([]);
    const byName = new Map(loaded.functions.map((f) => [f.name, f.trigger]));
    for (const [name, trigger] of [
      ["putResource", "httpTrigger"],
      ["getOperation", "httpTrigger"],
      ["getHealth", "httpTrigger"],
      ["reactToResources", "cosmosDBTrigger"],
      ["summarizeResources", "cosmosDBTrigger"],
      ["reportLag", "timerTrigger"],
      ["provisioning", "orchestrationTrigger"],
      ["deprovisioning", "orchestrationTrigger"],
      ["provisionResource", "activityTrigger"],
    ]) {
      expect(byName.get(name), name).toBe(trigger);
    }
    expect(loaded.functions.length).toBeGreaterThanOrEqual(20);
    expect(loaded.packages.length).toBeGreaterThan(0);
    for (const p of loaded.packages) expect(p.startsWith(join(dir, "node_modules"))).toBe(true);
  });

  it(".funcignore leaves the sources, tests, tooling and the dev host out of the package", () => {
    const ignored = readFileSync(join(repoRoot, ".funcignore"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    for (const entry of [
      "src",
      "test",
      "bench",
      "functions",
      "dist/src/emulator",
      "dist/src/devhost",
      "dist/src/cli",
      "local.settings.json",
    ]) {
      expect(ignored).toContain(entry);
    }
    // What stays is what the app needs: its compiled functions and library.
    expect(existsSync(join(dir, "dist", "functions", "resources.js"))).toBe(true);
    expect(existsSync(join(dir, "dist", "src", "shared", "settings.js"))).toBe(true);
  });
});
