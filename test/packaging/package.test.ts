/**
 * What a deployment ships: `npm run package` builds the zip Flex Consumption takes — the compiled app, package.json,
 * host.json and the production dependencies only (npm ci --omit=dev), .funcignore applied. The test unzips it into a
 * clean folder outside the repository, installs nothing more, and a child process loads every function through the
 * worker contract (the dev host's loader provides @azure/functions-core as the Node worker does), from that folder's
 * node_modules. The emulator, the dev host and the tooling are devDependencies: none of them may be in the package.
 * The workspace packages the app uses at run time (@cosmos-feed/core, locks, changefeed) are in it as real folders —
 * their package.json (without the "source" export conditions) and compiled dist/, no sources, no symlink
 * (docs/packages.md).
 */
import { execFile } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";
import { releaseManifest } from "../../scripts/release-manifest.mjs";
import { manifestProblems } from "../packages/setup.js";
import { extractZip, symlinkEntries } from "./support/unzip.js";

const run = promisify(execFile);
const withoutSourceCondition = (options: string | undefined) =>
  (options ?? "").replace(/--conditions=source/g, "").trim();
const DEV_ONLY = [
  "@cosmos-feed/devhost",
  "@cosmos-feed/emulator",
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

let entries: string[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "package-"));
  const zipFile = join(dir, "app.zip");
  await run(process.execPath, [join(repoRoot, "scripts", "package.mjs"), "--out", zipFile], {
    cwd: repoRoot,
  });
  entries = extractZip(readFileSync(zipFile), join(dir, "app"));
  const { stdout } = await run(
    process.execPath,
    ["--import", "tsx", join(repoRoot, "test/packaging/support/load-app.ts"), join(dir, "app")],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        // As Azure runs it: the packages' "default" (compiled) condition, not the tests' "source" (vitest.shared.ts).
        NODE_OPTIONS: withoutSourceCondition(process.env.NODE_OPTIONS),
        COSMOS_CONNECTION: "AccountEndpoint=https://example.documents.azure.com:443/;AccountKey=a2V5;",
      },
    },
  );
  loaded = JSON.parse(stdout.trim().split("\n").pop() as string);
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("npm run package: the deployment zip", () => {
  it("installs the runtime dependencies and none of the devDependencies", () => {
    for (const name of Object.keys(pkg.dependencies))
      expect(existsSync(join(dir, "app", "node_modules", name)), name).toBe(true);
    for (const name of DEV_ONLY) {
      expect(Object.keys(pkg.devDependencies)).toContain(name);
      expect(existsSync(join(dir, "app", "node_modules", name)), name).toBe(false);
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
      ["reconcileOperations", "timerTrigger"],
      ["provisioning", "orchestrationTrigger"],
      ["deprovisioning", "orchestrationTrigger"],
      ["provisionResource", "activityTrigger"],
    ]) {
      expect(byName.get(name), name).toBe(trigger);
    }
    expect(loaded.functions.length).toBeGreaterThanOrEqual(20);
    // The postdeploy hook checks that the deployed app lists these: exactly what the package registers.
    const expected = JSON.parse(
      readFileSync(join(repoRoot, "scripts", "hooks", "expected-functions.json"), "utf8"),
    ) as { functions: { name: string; trigger: string }[] };
    const key = (f: { name: string; trigger: string }) => `${f.name} ${f.trigger}`;
    expect(expected.functions.map(key).sort()).toEqual(loaded.functions.map(key).sort());
    expect(loaded.packages.length).toBeGreaterThan(0);
    for (const p of loaded.packages) expect(p.startsWith(join(dir, "app", "node_modules"))).toBe(true);
  });

  it(".funcignore leaves the sources, tests, tooling and the dev host out of the package", () => {
    const ignored = readFileSync(join(repoRoot, ".funcignore"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    // Anchored ('/src'): a bare 'src' would also drop dist/src, the compiled app, under gitignore rules.
    for (const entry of ["/src", "/test", "/bench", "/functions", "/packages", "/local.settings.json"]) {
      expect(ignored).toContain(entry);
    }
    expect(ignored.filter((l) => /^(src|functions|test)$/.test(l))).toEqual([]);
    // What stays is what the app needs: its compiled functions and library.
    expect(entries).toContain("dist/functions/resources.js");
    expect(entries).toContain("dist/src/shared/settings.js");
    expect(entries).toContain("host.json");
    expect(entries).toContain("package.json");
    // Without npm's `prepare` (it compiles the tools, which are not in the package): a remote npm install works.
    const shipped = JSON.parse(readFileSync(join(dir, "app", "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(shipped.scripts.prepare).toBeUndefined();
    expect(shipped.scripts.start).toBe("cosmos-feed start .");
    // … and it is applied: nothing of the sources, tests, tooling or the dev host is in the zip.
    for (const prefix of [
      "src/",
      "test/",
      "bench/",
      "functions/",
      "infra/",
      "scripts/",
      "packages/",
      "node_modules/@cosmos-feed/devhost/",
      "node_modules/@cosmos-feed/emulator/",
      "local.settings",
    ]) {
      expect(
        entries.filter((e) => e.startsWith(prefix)),
        prefix,
      ).toEqual([]);
    }
  });

  it("ships the workspace packages the app imports as real folders: package.json, dist/, no sources, no symlink", () => {
    const runtime = Object.keys(pkg.dependencies).filter((n) => n.startsWith("@cosmos-feed/"));
    expect(runtime.sort()).toEqual(["@cosmos-feed/changefeed", "@cosmos-feed/core", "@cosmos-feed/locks"]);
    for (const name of runtime) {
      expect(entries).toContain(`node_modules/${name}/package.json`);
      expect(entries).toContain(`node_modules/${name}/dist/index.js`);
      expect(entries).toContain(`node_modules/${name}/LICENSE`);
      expect(entries.filter((e) => e.startsWith(`node_modules/${name}/src/`))).toEqual([]);
      // Its package.json as the tarball has it: no "source" condition pointing into the src/ it does not ship
      // (the repository's own keeps them: scripts/release-manifest.mjs).
      const shipped = JSON.parse(
        readFileSync(join(dir, "app", "node_modules", ...name.split("/"), "package.json"), "utf8"),
      );
      expect(manifestProblems(shipped)).toEqual([]);
      const own = JSON.parse(
        readFileSync(join(repoRoot, "packages", name.replace("@cosmos-feed/", ""), "package.json"), "utf8"),
      );
      expect(manifestProblems(own)).not.toEqual([]);
      expect(shipped).toEqual(releaseManifest(own));
      expect(lstatSync(join(dir, "app", "node_modules", ...name.split("/"))).isSymbolicLink()).toBe(false);
    }
    // Every entry of the archive is a regular file (extractZip reads the mode each was written with).
    expect(symlinkEntries(readFileSync(join(dir, "app.zip")))).toEqual([]);
    // The functions loaded (the test above) from a folder outside the repository, without the "source" condition:
    // the app's imports of these packages resolved to their compiled JavaScript in that folder's node_modules.
    expect(loaded.errors).toEqual([]);
  });
});
