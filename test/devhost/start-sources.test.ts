import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { readAppConfig } from "../../packages/devhost/src/appConfig.js";
import { isPlainTsc } from "../../packages/devhost/src/lifecycle/app-compiler.js";
import {
  buildTsconfigPath,
  findStaleBuild,
  readBuildSources,
  watchRoots,
} from "../../packages/devhost/src/lifecycle/sources.js";
import { type FileChange, watchSources } from "../../packages/devhost/src/lifecycle/watch.js";
import { copyFixture, removeScratch, scratchDir } from "../support/start-cli.js";

afterAll(removeScratch);

/** Sets a file's modification time to `at` (seconds since the epoch). */
function touch(path: string, at: number): void {
  utimesSync(path, at, at);
}

describe("what the build compiles (tsconfig) and whether its output is older", () => {
  it("reads the tsconfig the build script names, its sources and outDir", () => {
    const app = copyFixture("app-ts");
    const config = readAppConfig(app);
    expect(buildTsconfigPath(config)).toBe(join(app, "tsconfig.json"));
    const sources = readBuildSources(config);
    expect(sources?.files).toEqual([join(app, "src", "functions", "hello.ts")]);
    expect(sources?.outDir).toBe(join(app, "dist"));
    expect(sources?.folders).toEqual([{ dir: join(app, "src"), recursive: true }]);

    writeFileSync(join(app, "tsconfig.build.json"), JSON.stringify({ extends: "./tsconfig.json" }));
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({ main: "dist/src/functions/*.js", scripts: { build: "tsc -p tsconfig.build.json" } }),
    );
    expect(buildTsconfigPath(readAppConfig(app))).toBe(join(app, "tsconfig.build.json"));
  });

  it("names the newest source when it is newer than the newest output, and nothing otherwise", () => {
    const app = copyFixture("app-ts");
    const source = join(app, "src", "functions", "hello.ts");
    const out = join(app, "dist", "src", "functions");
    mkdirSync(out, { recursive: true });
    const output = join(out, "hello.js");
    writeFileSync(output, "export {};");
    const config = readAppConfig(app);
    const sources = readBuildSources(config);
    if (!sources) throw new Error("no sources");

    touch(source, 1_000_000);
    touch(output, 1_000_010);
    expect(findStaleBuild(config, sources)).toBeUndefined();
    touch(source, 1_000_010); // as new as the output: built from it
    expect(findStaleBuild(config, sources)).toBeUndefined();
    touch(source, 1_000_020);
    expect(findStaleBuild(config, sources)).toEqual({
      source: join("src", "functions", "hello.ts"),
      sourceTime: new Date(1_000_020_000),
      output: "dist/",
      outputTime: new Date(1_000_010_000),
    });
    rmSync(join(app, "dist"), { recursive: true });
    expect(findStaleBuild(config, sources)).toBeUndefined(); // nothing built: the missing-build path's case
  });

  it("watches each source's top folder recursively, and the app folder itself only for files there", () => {
    expect(
      watchRoots("/app", ["/app/src/a.ts", "/app/src/x/b.ts", "/app/functions/c.ts", "/app/d.ts"]),
    ).toEqual([
      { dir: "/app/src", recursive: true },
      { dir: "/app/functions", recursive: true },
      { dir: "/app", recursive: false },
    ]);
    expect(watchRoots("/app", ["/elsewhere/e.ts"])).toEqual([]);
    // The include folders (tsconfig.build.json's functions and src/shared), not their top folder (src, which holds
    // the dev host too); a source outside them still gets its top folder.
    expect(
      watchRoots(
        "/app",
        ["/app/functions/a.ts", "/app/src/shared/b.ts", "/app/src/shared/x/c.ts", "/app/lib/d.ts"],
        [
          { dir: "/app/functions", recursive: true },
          { dir: "/app/src/shared", recursive: true },
        ],
      ),
    ).toEqual([
      { dir: "/app/functions", recursive: true },
      { dir: "/app/src/shared", recursive: true },
      { dir: "/app/lib", recursive: true },
    ]);
  });
});

describe("watching sources", () => {
  it("hands over a saved source, not a temporary file that came and went, nor the build output", async () => {
    const dir = scratchDir("watch-");
    const src = join(dir, "src");
    const dist = join(src, "dist");
    mkdirSync(dist, { recursive: true });
    const known = join(src, "a.ts");
    writeFileSync(known, "1");
    const batches: FileChange[][] = [];
    const errors: string[] = [];
    const watcher = watchSources({
      roots: [{ dir: src, recursive: true }],
      ignoreUnder: [dist],
      known: [known],
      debounceMs: 100,
      onChange: async (changes) => {
        batches.push(changes);
      },
      onError: (m) => errors.push(m),
    });
    try {
      const temporary = join(src, "sedXyZ12");
      writeFileSync(temporary, "tmp");
      rmSync(temporary);
      writeFileSync(join(dist, "a.js"), "built");
      writeFileSync(known, "2");
      await waitUntil("a batch", () => batches.length > 0);
      expect(batches[0]).toEqual([{ path: known, type: "Changed" }]);

      const added = join(src, "b.ts");
      writeFileSync(added, "new");
      await waitUntil("a second batch", () => batches.length > 1);
      expect(batches[1]).toEqual([{ path: added, type: "Created" }]);
      expect(errors).toEqual([]);
    } finally {
      watcher.close();
    }
  });
});

describe("which builds --watch keeps a compiler alive for", () => {
  it("a build script that is tsc alone on a tsconfig, nothing more", () => {
    for (const script of [
      "tsc",
      "tsc -p tsconfig.build.json",
      "tsc --project=cfg/tsconfig.json",
      'tsc -p "my app.json"',
    ])
      expect(isPlainTsc(script), script).toBe(true);
    for (const script of [
      undefined,
      "",
      "tsc && node copy.js",
      "tsc -b",
      "tsc -p a.json --outDir out",
      "vite build",
      "npx tsc",
    ])
      expect(isPlainTsc(script), String(script)).toBe(false);
  });
});
