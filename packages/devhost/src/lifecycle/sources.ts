import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import type * as TS from "typescript";
import type { AppConfig } from "../appConfig.js";
import { resolveEntryPoints } from "../loader.js";

/** What the app's build compiles and where it writes, as its tsconfig says. */
export interface BuildSources {
  /** The tsconfig the build uses (the build script's `-p`/`--project`, else tsconfig.json). */
  tsconfig: string;
  /** Every file the build compiles (tsconfig `files`/`include`/`exclude`, `extends` followed), absolute. */
  files: string[];
  /** `outDir`, absolute, when the tsconfig sets one. */
  outDir?: string;
  /**
   * The folders the tsconfig's `include` globs search (what `tsc --watch` watches for new files), absolute, each
   * with whether the globs reach below it.
   */
  folders: { dir: string; recursive: boolean }[];
}

/** The tsconfig the app's `build` script names (`tsc -p <file>` / `--project <file>`), else tsconfig.json. */
export function buildTsconfigPath(config: AppConfig): string {
  const script = config.packageJson.scripts?.build ?? "";
  const named = /\btsc\b[^&|;]*?\s(?:-p|--project)[\s=]+("?)([^\s"]+)\1/.exec(script)?.[2];
  const path = resolve(config.appDir, named ?? "tsconfig.json");
  // `-p` may name a folder (tsc then reads its tsconfig.json).
  return existsSync(path) && statSync(path).isDirectory() ? join(path, "tsconfig.json") : path;
}

/** TypeScript as the app would build with it: the app's own copy first, else this project's. */
export function loadTypeScript(appDir: string): typeof TS | undefined {
  for (const from of [join(appDir, "package.json"), import.meta.url]) {
    try {
      return createRequire(from)("typescript") as typeof TS;
    } catch {
      // not installed there
    }
  }
  return undefined;
}

/** The files the app's TypeScript build compiles; undefined when it has no tsconfig (or no TypeScript is at hand). */
export function readBuildSources(config: AppConfig): BuildSources | undefined {
  const tsconfig = buildTsconfigPath(config);
  if (!existsSync(tsconfig)) return undefined;
  const ts = loadTypeScript(config.appDir);
  if (!ts) return undefined;
  const parsed = ts.getParsedCommandLineOfConfigFile(
    tsconfig,
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  );
  if (!parsed) return undefined;
  return {
    tsconfig,
    files: parsed.fileNames.map((f) => resolve(f)),
    outDir: parsed.options.outDir ? resolve(parsed.options.outDir) : undefined,
    folders: Object.entries(parsed.wildcardDirectories ?? {}).map(([dir, flags]) => ({
      dir: resolve(dir),
      recursive: (flags & ts.WatchDirectoryFlags.Recursive) !== 0,
    })),
  };
}

function newestUnder(dir: string, best: { path: string; mtimeMs: number }): void {
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) newestUnder(path, best);
    else if (e.isFile()) {
      const mtimeMs = statSync(path).mtimeMs;
      if (mtimeMs > best.mtimeMs) Object.assign(best, { path, mtimeMs });
    }
  }
}

/** A source file newer than everything the last build wrote. */
export interface StaleBuild {
  /** The newest source, relative to the app folder. */
  source: string;
  sourceTime: Date;
  /** The build output it is newer than: `outDir` (or the entry files of `main`), relative to the app folder. */
  output: string;
  outputTime: Date;
}

/**
 * Whether the build output is older than the sources the build compiles: the newest source file against the
 * newest file of `outDir` (tsc rewrites what it compiles, so a build after an edit leaves an output at least as new
 * as the edited file), or against the entry files of `main` when there is no `outDir`. Undefined when up to date,
 * when there is no tsconfig, or when there is no output at all (the missing-build path handles that).
 */
export function findStaleBuild(config: AppConfig, sources: BuildSources): StaleBuild | undefined {
  const newestSource = { path: "", mtimeMs: -1 };
  for (const file of sources.files) {
    try {
      const mtimeMs = statSync(file).mtimeMs;
      if (mtimeMs > newestSource.mtimeMs) Object.assign(newestSource, { path: file, mtimeMs });
    } catch {
      // listed by the tsconfig but gone since
    }
  }
  const newestOutput = { path: "", mtimeMs: -1 };
  let output: string;
  if (sources.outDir) {
    newestUnder(sources.outDir, newestOutput);
    output = `${relative(config.appDir, sources.outDir) || "."}${sep}`;
  } else {
    let entries: string[];
    try {
      entries = resolveEntryPoints(config);
    } catch {
      return undefined;
    }
    for (const file of entries) {
      const mtimeMs = statSync(join(config.appDir, file)).mtimeMs;
      if (mtimeMs > newestOutput.mtimeMs) Object.assign(newestOutput, { path: file, mtimeMs });
    }
    output = `the files of "main" (${config.packageJson.main})`;
  }
  if (newestSource.mtimeMs < 0 || newestOutput.mtimeMs < 0) return undefined;
  if (newestSource.mtimeMs <= newestOutput.mtimeMs) return undefined;
  return {
    source: relative(config.appDir, newestSource.path),
    sourceTime: new Date(newestSource.mtimeMs),
    output,
    outputTime: new Date(newestOutput.mtimeMs),
  };
}

/**
 * The folders to watch for source changes: the tsconfig's include folders (`folders`, inside the app folder), then,
 * for a source outside them, its top folder (below the app folder), watched recursively, and the app folder itself,
 * not recursively, when a source sits there. node_modules and the build output are never among them.
 */
export function watchRoots(
  appDir: string,
  files: string[],
  folders: { dir: string; recursive: boolean }[] = [],
): { dir: string; recursive: boolean }[] {
  const roots = new Map<string, boolean>();
  const inside = folders.filter((f) => isUnder(f.dir, appDir) && f.dir !== appDir);
  for (const f of inside) roots.set(f.dir, f.recursive);
  for (const file of files) {
    if (inside.some((f) => (f.recursive ? isUnder(file, f.dir) : dirname(file) === f.dir))) continue;
    const rel = relative(appDir, file);
    if (rel.startsWith("..")) continue; // outside the app folder (a shared tsconfig's include)
    const parts = rel.split(sep);
    if (parts.length === 1) roots.set(appDir, roots.get(appDir) ?? false);
    else roots.set(join(appDir, parts[0]), true);
  }
  return [...roots].map(([dir, recursive]) => ({ dir, recursive }));
}

/** The entry files of `main` as absolute paths (a plain JavaScript app's sources), or none when nothing matches. */
export function entryFiles(config: AppConfig): string[] {
  try {
    return resolveEntryPoints(config).map((f) => join(config.appDir, f));
  } catch {
    return [];
  }
}

/** `path` is `dir` or below it. */
export function isUnder(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}
