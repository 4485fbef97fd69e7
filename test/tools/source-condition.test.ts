/**
 * The "source" condition (vitest.shared.ts, docs/packages.md): in the tests, a package imported by name and the same
 * module imported by relative path are one module (one class: instanceof holds across them); a child process the
 * tests start with tsx resolves the packages to their sources too (NODE_OPTIONS); without the condition, Node
 * resolves them to the compiled dist/ — what the deployed app and a compiled CLI load.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";

const run = promisify(execFile);
const probe = `console.log(import.meta.resolve("@cosmos-feed/core/errors"))`;

describe('the "source" condition', () => {
  it("a package by name and by relative path is one module in the tests", async () => {
    const byName = await import("@cosmos-feed/core/errors");
    const byPath = await import("../../packages/core/src/errors.js");
    expect(byName.CosmosFeedError).toBe(byPath.CosmosFeedError);
    const { LockClient } = await import("@cosmos-feed/locks");
    const relative = await import("../../packages/locks/src/lock.js");
    expect(LockClient).toBe(relative.LockClient);
  });

  it("child processes get it from NODE_OPTIONS; without it Node resolves the compiled dist/", async () => {
    expect(process.env.NODE_OPTIONS).toContain("--conditions=source");
    const withIt = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", probe], {
      cwd: repoRoot,
    });
    expect(withIt.stdout.trim()).toBe(`file://${join(repoRoot, "packages", "core", "src", "errors.ts")}`);
    const without = await run(process.execPath, ["--input-type=module", "-e", probe], {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "" },
    });
    expect(without.stdout.trim()).toBe(`file://${join(repoRoot, "packages", "core", "dist", "errors.js")}`);
  });
});
