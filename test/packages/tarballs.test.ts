// The tarball check of test/packages/setup.ts (which refuses to install tarballs that fail it): what it refuses, on
// made-up file lists, and what it measured on the real tarballs.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { releaseManifest } from "../../scripts/release-manifest.mjs";
import { manifestProblems, tarballProblems } from "./setup.js";
import { outside } from "./support/outside.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const docs = ["package.json", "README.md", "CHANGELOG.md", "LICENSE"];
const noFile = (): string => {
  throw new Error("no file");
};

describe("the tarball check", () => {
  it("accepts dist/, the docs and the files `bin` names", () => {
    const files = [...docs, "dist/index.js", "dist/index.d.ts", "bin/cli.js"];
    expect(tarballProblems({ bin: { cli: "./bin/cli.js" } }, files, noFile)).toEqual([]);
  });

  it("refuses sources, tests, fixtures, build state and other strays, and a missing README or LICENSE", () => {
    const files = [
      "package.json",
      "CHANGELOG.md",
      "dist/index.js",
      "src/index.ts",
      "dist/index.test.js",
      "dist/fixtures/app.js",
      "tsconfig.tsbuildinfo",
      "dist/.DS_Store",
      "bin/other.js",
    ];
    const problems = tarballProblems({ bin: "./bin/cli.js" }, files, noFile).join("\n");
    for (const expected of [
      "src/index.ts: not dist/",
      "dist/index.test.js: a test or fixture",
      "dist/fixtures/app.js: a test or fixture",
      "tsconfig.tsbuildinfo: not dist/",
      "tsconfig.tsbuildinfo: build state",
      "dist/.DS_Store: build state or a stray file",
      "bin/other.js: not dist/, a bin or a doc",
      "README.md is missing",
      "LICENSE is missing",
    ])
      expect(problems).toContain(expected);
  });

  it("refuses a source map whose source is neither shipped nor embedded", () => {
    const maps: Record<string, string> = {
      "dist/a.js.map": JSON.stringify({ sources: ["../src/a.ts"] }),
      "dist/b.js.map": JSON.stringify({ sources: ["../src/b.ts"], sourcesContent: ["export {}"] }),
      "dist/c.js.map": JSON.stringify({ sources: ["../src/c.ts"] }),
    };
    const files = [
      ...docs,
      "dist/a.js",
      "dist/a.js.map",
      "dist/b.js",
      "dist/b.js.map",
      "dist/c.js.map",
      "src/c.ts",
    ];
    const problems = tarballProblems({}, files, (f) => maps[f]);
    expect(problems.filter((p) => p.includes("maps"))).toEqual([
      "dist/a.js.map: maps src/a.ts, which is not shipped, and has no sourcesContent for it",
    ]);
  });

  it('refuses a packed package.json with a "source" condition or an entry point into src/', () => {
    const manifest = {
      exports: {
        ".": { source: "./src/index.ts", types: "./dist/index.d.ts", default: "./dist/index.js" },
        "./x": { types: "./src/x.d.ts", default: ["./dist/x.js"] },
      },
      main: "./src/index.js",
      bin: { cli: "./bin/cli.js" },
    };
    expect(tarballProblems(manifest, [...docs, "bin/cli.js"], noFile)).toEqual([
      'package.json: exports["."] has a "source" condition',
      'package.json: exports["."]["source"] points into src/ (./src/index.ts), which is not shipped',
      'package.json: exports["./x"]["types"] points into src/ (./src/x.d.ts), which is not shipped',
      "package.json: main points into src/ (./src/index.js), which is not shipped",
    ]);
  });

  it('packed each package.json without "source" conditions, and left the working tree\'s as committed', () => {
    for (const [name, t] of Object.entries(outside().tarballs)) {
      const packed = JSON.parse(
        execFileSync("tar", ["-xzOf", t.file, "package/package.json"], { encoding: "utf8" }),
      );
      expect(manifestProblems(packed)).toEqual([]);
      // The repository's own package.json is back as committed: its conditions, its scripts, no backup beside it.
      const dir = join(repoRoot, "packages", name);
      const own = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      expect(own.exports["."].source).toMatch(/^\.\/src\//);
      expect(own.scripts.prepack).toBe("node ../../scripts/release-manifest.mjs strip");
      expect(existsSync(join(dir, "package.json.prepack"))).toBe(false);
      // What was packed is exactly the working tree's manifest as it ships.
      expect(packed).toEqual(releaseManifest(own));
    }
  });

  it("measured every tarball: packed, unpacked, entries", () => {
    const { tarballs } = outside();
    expect(Object.keys(tarballs).sort()).toEqual(["changefeed", "core", "devhost", "emulator", "locks"]);
    for (const t of Object.values(tarballs)) {
      expect(t.packedBytes).toBeGreaterThan(0);
      expect(t.unpackedBytes).toBeGreaterThan(t.packedBytes);
      expect(t.entries).toBeGreaterThan(4);
    }
  });
});
