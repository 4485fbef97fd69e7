// scripts/release-manifest.mjs, the packages' prepack/postpack: what a tarball's package.json keeps of the working
// tree's, that the tarball check (test/packages/setup.ts) refuses the manifests as committed and accepts them as
// shipped, and that a pack — a real `npm pack`, one that fails midway included — leaves package.json as it was.
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import {
  BACKUP_NAME,
  releaseManifest,
  restoreManifest,
  stripManifest,
} from "../../scripts/release-manifest.mjs";
import { manifestProblems, type PackedManifest, tarballProblems } from "../packages/setup.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const PACKAGES = ["core", "changefeed", "locks", "emulator", "devhost"];
const readManifest = (dir: string) =>
  JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackedManifest & {
    exports: Record<string, Record<string, string> | string>;
    scripts?: Record<string, string>;
    name: string;
  };

const temps: string[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) rmSync(t, { recursive: true, force: true });
});

/** A package folder like packages/<name>/ (the script at ../../scripts, as the packages' scripts name it). */
function fakeRepo(): { dir: string; original: string } {
  const root = mkdtempSync(join(tmpdir(), "release-manifest-"));
  temps.push(root);
  mkdirSync(join(root, "scripts"));
  cpSync(join(repoRoot, "scripts", "release-manifest.mjs"), join(root, "scripts", "release-manifest.mjs"));
  const dir = join(root, "packages", "x");
  mkdirSync(join(dir, "dist"), { recursive: true });
  writeFileSync(join(dir, "dist", "index.js"), "export const x = 1;\n");
  const original = `${JSON.stringify(
    {
      name: "x",
      version: "0.0.1",
      type: "module",
      exports: {
        ".": { source: "./src/index.ts", types: "./dist/index.d.ts", default: "./dist/index.js" },
        "./package.json": "./package.json",
      },
      files: ["dist"],
      scripts: {
        prepack: "node ../../scripts/release-manifest.mjs strip",
        postpack: "node ../../scripts/release-manifest.mjs restore",
        other: "echo kept",
      },
    },
    null,
    1, // not the script's own formatting: restore must give back these very bytes
  )}\n`;
  writeFileSync(join(dir, "package.json"), original);
  return { dir, original };
}

const npmPack = (dir: string, destination: string) =>
  spawnSync("npm", ["pack", "--json", "--pack-destination", destination], { cwd: dir, encoding: "utf8" });
const packedManifest = (tarball: string) =>
  JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" }));

describe("the manifest a package ships", () => {
  it("the tarball check refuses every package's package.json as committed, and accepts it as released", () => {
    for (const name of PACKAGES) {
      const manifest = readManifest(join(repoRoot, "packages", name));
      // Without the stripping the check fails: the repository's manifests carry "source" conditions into src/.
      expect(manifestProblems(manifest)).toContain('package.json: exports["."] has a "source" condition');
      const released = releaseManifest(manifest);
      expect(tarballProblems(released, ["package.json", "README.md", "LICENSE"], () => "")).toEqual([]);
      // Only the conditions go: every subpath, its other conditions and the rest of the manifest stay.
      expect(Object.keys(released.exports as object)).toEqual(Object.keys(manifest.exports));
      expect({ ...released, exports: undefined }).toEqual({ ...manifest, exports: undefined });
      expect(manifest.scripts).toEqual({
        prepack: "node ../../scripts/release-manifest.mjs strip",
        postpack: "node ../../scripts/release-manifest.mjs restore",
      });
      expect(existsSync(join(repoRoot, "packages", name, BACKUP_NAME))).toBe(false);
    }
  });

  it("strip backs up and rewrites; restore gives back the same bytes; a second strip never backs up a stripped file", () => {
    const { dir, original } = fakeRepo();
    stripManifest(dir);
    expect(readFileSync(join(dir, BACKUP_NAME), "utf8")).toBe(original);
    const stripped = readManifest(dir);
    expect(stripped.exports).toEqual({
      ".": { types: "./dist/index.d.ts", default: "./dist/index.js" },
      "./package.json": "./package.json",
    });
    // The pack scripts stay: npm runs the ones of the file on disk, and a stripped one must restore itself.
    expect(stripped.scripts?.postpack).toBe("node ../../scripts/release-manifest.mjs restore");
    // A pack that failed before its postpack, then another pack: its strip starts from the original.
    stripManifest(dir);
    expect(readFileSync(join(dir, BACKUP_NAME), "utf8")).toBe(original);
    expect(restoreManifest(dir)).toBe(true);
    expect(readFileSync(join(dir, "package.json"), "utf8")).toBe(original);
    expect(existsSync(join(dir, BACKUP_NAME))).toBe(false);
    expect(restoreManifest(dir)).toBe(false);
  });

  it("npm pack ships the stripped manifest and leaves package.json as it was, after a pack that failed midway too", () => {
    const { dir, original } = fakeRepo();
    // Fails after its prepack (nowhere to write the tarball): no postpack ran, the stripped file and its backup stay.
    const failed = npmPack(dir, join(dir, "no", "such", "folder"));
    expect(failed.status).not.toBe(0);
    expect(existsSync(join(dir, BACKUP_NAME))).toBe(true);
    expect(readManifest(dir).exports["."]).not.toHaveProperty("source");

    const out = join(dir, "..", "out");
    mkdirSync(out);
    const packed = npmPack(dir, out);
    expect(packed.status, packed.stderr).toBe(0);
    const [{ filename }] = JSON.parse(packed.stdout) as { filename: string }[];
    const shipped = packedManifest(join(out, filename));
    expect(manifestProblems(shipped)).toEqual([]);
    expect(shipped.exports["."]).toEqual({ types: "./dist/index.d.ts", default: "./dist/index.js" });
    expect(readFileSync(join(dir, "package.json"), "utf8")).toBe(original);
    expect(existsSync(join(dir, BACKUP_NAME))).toBe(false);
  });
});
