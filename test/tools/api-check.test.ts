/**
 * scripts/api-check.mjs, the API report check `npm test` runs (docs/packages.md, "Public API and its review"), on a
 * copy of @cosmos-feed/locks (its package.json, compiled dist/ and checked-in review/): the copy as built matches;
 * a changed exported signature fails the check with a line naming the package, the subpath, the report and
 * `npm run api:update`, and shows the changed line; an undocumented export fails it too (and --update cannot accept
 * it); a report no subpath writes fails it; `--update` rewrites and deletes reports until the check passes again. The copy lives in the
 * repository's test-output/ (git-ignored) so that its .d.ts resolve their dependencies (@cosmos-feed/core,
 * @azure/cosmos) from the repository's node_modules as the package's own do; never under a node_modules folder,
 * whose files API Extractor takes for another package's.
 */
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";

const script = join(repoRoot, "scripts", "api-check.mjs");
const source = join(repoRoot, "packages", "locks");
let packagesDir = "";
let pkgDir = "";

const run = (...args: string[]) =>
  promisify(execFile)(process.execPath, [script, "--no-build", "--packages", packagesDir, ...args], {
    cwd: repoRoot,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );

beforeAll(() => {
  const output = join(repoRoot, "test-output");
  mkdirSync(output, { recursive: true });
  packagesDir = join(mkdtempSync(join(output, "api-check-")), "packages");
  pkgDir = join(packagesDir, "locks");
  mkdirSync(pkgDir, { recursive: true });
  // The main entry point only (one API Extractor run per check, to keep the test short).
  const manifest = JSON.parse(readFileSync(join(source, "package.json"), "utf8"));
  manifest.exports = { ".": manifest.exports["."] };
  writeFileSync(join(pkgDir, "package.json"), JSON.stringify(manifest, null, 2));
  cpSync(join(source, "dist"), join(pkgDir, "dist"), { recursive: true });
  mkdirSync(join(pkgDir, "review"));
  cpSync(join(source, "review", "locks.api.md"), join(pkgDir, "review", "locks.api.md"));
  // The package's configs with their relative `extends` made absolute (the copy is two folders deeper).
  writeFileSync(
    join(pkgDir, "api-extractor.json"),
    JSON.stringify({ extends: join(repoRoot, "api-extractor.base.json") }),
  );
  writeFileSync(
    join(pkgDir, "tsconfig.json"),
    JSON.stringify({ extends: join(repoRoot, "tsconfig.base.json"), include: ["dist"] }),
  );
});
afterAll(() => {
  if (packagesDir) rmSync(join(packagesDir, ".."), { recursive: true, force: true });
});

const edit = (file: string, from: string, to: string) => {
  const text = readFileSync(file, "utf8");
  expect(text).toContain(from);
  writeFileSync(file, text.replace(from, to));
};

describe("npm run api:check", () => {
  it("fails on a changed signature, an undocumented export and a stale report; api:update accepts what it can", async () => {
    const clean = await run();
    expect(clean.stderr).toBe("");
    expect(clean.stdout).toContain("api:check: 1 API report(s) match");
    expect(clean.code).toBe(0);

    edit(
      join(pkgDir, "dist", "names.d.ts"),
      "validateLockName(name: unknown): asserts name is string;",
      "validateLockName(name: unknown, reserved?: string[]): asserts name is string;",
    );
    const index = join(pkgDir, "dist", "index.d.ts");
    const indexBefore = readFileSync(index, "utf8");
    writeFileSync(index, `${indexBefore}\nexport declare function undocumentedAddition(): void;\n`);
    const stale = join(pkgDir, "review", "locks-gone.api.md");
    writeFileSync(stale, '## API Report File for "@cosmos-feed/locks/gone"\n');
    const report = join(pkgDir, "review", "locks.api.md");

    const failed = await run();
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      /^api:check: @cosmos-feed\/locks \(\.\): the API report .*review\/locks\.api\.md differs from the API the build declares; if the change is meant, run `npm run api:update` and commit the report\.$/m,
    );
    expect(failed.stdout).toContain("+export function validateLockName(name: unknown, reserved?: string[])");
    expect(failed.stderr).toMatch(
      /^api:check: @cosmos-feed\/locks \(\.\): .*Missing documentation for "undocumentedAddition"\. \(ae-undocumented\)$/m,
    );
    expect(failed.stderr).toMatch(
      /^api:check: @cosmos-feed\/locks: .*locks-gone\.api\.md is the report of no export subpath; run `npm run api:update`/m,
    );
    expect(readFileSync(report, "utf8")).not.toContain("reserved?: string[]");

    // No report accepts an undocumented export: --update still fails on it.
    const refused = await run("--update");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Missing documentation for "undocumentedAddition"');

    writeFileSync(index, indexBefore);
    const updated = await run("--update");
    expect(updated.stderr).toBe("");
    expect(updated.code).toBe(0);
    expect(updated.stdout).toMatch(/api:update: @cosmos-feed\/locks \(\.\): wrote .*review\/locks\.api\.md/);
    expect(existsSync(stale)).toBe(false);
    expect(readFileSync(report, "utf8")).toContain("reserved?: string[]");
    expect(readFileSync(report, "utf8")).not.toContain("undocumentedAddition");
    expect((await run()).code).toBe(0);
  });
});
