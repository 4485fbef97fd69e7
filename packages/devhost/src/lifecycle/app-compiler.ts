import { type ChildProcess, spawn } from "node:child_process";
import { setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import type { AppConfig } from "../appConfig.js";
import type { FromCompiler, ToCompiler } from "./compile-server.js";
import type { BuildSources } from "./sources.js";
import type { FileChange } from "./watch.js";

/** The --watch build of an app whose build is tsc alone, kept running between saves. */
export interface AppCompiler {
  /**
   * Compiles after these changes; resolves with tsc's exit code (0, or 2 when there are errors), or undefined when
   * the compiler's process has failed (the caller then builds with `npm run build`).
   */
  build(changes: FileChange[]): Promise<number | undefined>;
  close(): void;
}

/** A build script that is only tsc on a tsconfig (`tsc`, `tsc -p <file>`, `tsc --project <file>`): what it compiles. */
export function isPlainTsc(script: string | undefined): boolean {
  return /^\s*tsc(\s+(-p|--project)[\s=]+("[^"]+"|\S+))?\s*$/.test(script ?? "");
}

// From the TypeScript sources the compiler's process registers tsx first; compiled, it is plain JavaScript.
const ENTRY = fileURLToPath(
  new URL(
    import.meta.url.endsWith(".ts") ? "./compile-server-entry.mjs" : "./compile-server-main.js",
    import.meta.url,
  ),
);

/**
 * Starts the kept-alive compiler (compile-server.ts) in a process of its own, at low priority, so that its first
 * build — a whole program, though tsc's incremental state spares the emit — takes no CPU from the app. Undefined
 * when the build script is more than tsc (then --watch runs `npm run build`).
 */
export function startAppCompiler(
  config: AppConfig,
  sources: BuildSources | undefined,
  warn: (line: string) => void,
): AppCompiler | undefined {
  if (!sources || !isPlainTsc(config.packageJson.scripts?.build)) return undefined;
  const child: ChildProcess = spawn(process.execPath, [ENTRY, config.appDir, sources.tsconfig], {
    cwd: config.appDir,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  try {
    if (child.pid) setPriority(child.pid, 10);
  } catch {
    // not allowed here: it runs at the normal priority
  }
  let broken: string | undefined;
  let waiting: ((m: FromCompiler | undefined) => void) | undefined;
  const fail = (reason: string) => {
    if (!broken)
      warn(`--watch: the kept-alive compiler stopped (${reason}); building with \`npm run build\`.`);
    broken ??= reason;
    waiting?.(undefined);
  };
  child.on("message", (m: FromCompiler) => {
    if (m.kind === "failed") fail(m.reason);
    else if (m.kind === "compiled") waiting?.(m);
  });
  child.once("error", (e) => fail(e.message));
  child.once("exit", (code, signal) => fail(`exit ${signal ?? code}`));
  let queue: Promise<unknown> = Promise.resolve();
  return {
    build(changes) {
      const turn = queue.then(
        () =>
          new Promise<number | undefined>((resolve) => {
            if (broken) return resolve(undefined);
            waiting = (m) => {
              waiting = undefined;
              resolve(m?.kind === "compiled" ? (m.errors === 0 ? 0 : 2) : undefined);
            };
            child.send({ kind: "compile", changes } satisfies ToCompiler);
          }),
      );
      queue = turn;
      return turn;
    },
    close() {
      broken ??= "closed";
      child.removeAllListeners("exit");
      child.kill();
    },
  };
}
