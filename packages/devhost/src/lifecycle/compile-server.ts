import { dirname } from "node:path";
import type * as TS from "typescript";
import { loadTypeScript } from "./sources.js";
import type { FileChange } from "./watch.js";

/** The dev host → compiler messages, and back (Node's IPC channel). */
export type ToCompiler = { kind: "compile"; changes: FileChange[] };
export type FromCompiler =
  | { kind: "ready" }
  | { kind: "compiled"; errors: number }
  | { kind: "failed"; reason: string };

/** TypeScript's own paths: forward slashes, also on Windows. */
const tsPath = (p: string) => p.replace(/\\/g, "/");

const EVENT = { Created: 0, Changed: 1, Deleted: 2 } as const;

/**
 * The --watch build kept alive (runs in a child process, see app-compiler.ts): tsc's watch program on the app's
 * tsconfig, as `tsc -p <tsconfig> --watch` has it, except that it watches nothing itself — the dev host's watcher
 * tells it what changed, and it compiles then and answers with the error count. Between saves the program stays
 * in memory, so a save re-parses and re-checks only what changed (and what depends on it), not the packages' type
 * declarations. Diagnostics are written to stdout as tsc writes them.
 */
export function serveCompiles(
  appDir: string,
  tsconfig: string,
  send: (m: FromCompiler) => void,
): (m: ToCompiler) => void {
  const ts = loadTypeScript(appDir);
  if (!ts) {
    send({ kind: "failed", reason: "no typescript package found" });
    return () => {};
  }
  const files = new Map<string, Set<TS.FileWatcherCallback>>();
  const folders = new Map<string, Set<{ cb: TS.DirectoryWatcherCallback; recursive: boolean }>>();
  const timers = new Set<{ run: () => void }>();
  let errors = 0;
  const pretty = process.stdout.isTTY === true;
  const formatHost: TS.FormatDiagnosticsHost = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => appDir,
    getNewLine: () => "\n",
  };
  const system: TS.System = {
    ...ts.sys,
    watchFile(path, cb) {
      const set = files.get(path) ?? new Set();
      files.set(path, set.add(cb));
      return { close: () => void set.delete(cb) };
    },
    watchDirectory(path, cb, recursive = false) {
      const entry = { cb, recursive };
      const set = folders.get(path) ?? new Set();
      folders.set(path, set.add(entry));
      return { close: () => void set.delete(entry) };
    },
    // tsc waits 250 ms after a change before it rebuilds; here the rebuild runs as soon as the dev host asks.
    setTimeout(cb, _ms, ...args) {
      const timer = { run: () => cb(...args) };
      timers.add(timer);
      return timer;
    },
    clearTimeout(timer) {
      timers.delete(timer as { run: () => void });
    },
    clearScreen: undefined,
  };
  const host = ts.createWatchCompilerHost(
    tsconfig,
    {},
    system,
    ts.createEmitAndSemanticDiagnosticsBuilderProgram,
    (d) =>
      process.stdout.write(
        pretty
          ? ts.formatDiagnosticsWithColorAndContext([d], formatHost)
          : ts.formatDiagnostic(d, formatHost),
      ),
    (_d, _newLine, _options, errorCount) => {
      if (errorCount !== undefined) errors = errorCount;
    },
  );
  ts.createWatchProgram(host); // the first build, from the incremental state when the tsconfig keeps one

  return (m) => {
    for (const change of m.changes) {
      const path = tsPath(change.path);
      for (const cb of files.get(path) ?? []) cb(path, EVENT[change.type]);
      for (const [dir, set] of folders) {
        const below = path.startsWith(`${dir}/`);
        for (const { cb, recursive } of set) if (below && (recursive || dirname(path) === dir)) cb(path);
      }
    }
    // Run what the changes scheduled (the rebuild, which may schedule more) until nothing is left.
    for (let guard = 0; timers.size > 0 && guard < 100; guard++) {
      const due = [...timers];
      timers.clear();
      for (const t of due) t.run();
    }
    send({ kind: "compiled", errors });
  };
}
