/**
 * npm runs a script through a shell (`sh -c` on POSIX, `cmd /d /s /c` on Windows) and forwards SIGINT and SIGTERM
 * to that shell, not to what the script starts. Debian's dash 0.5.12 (`/bin/sh`) does not exec a lone command:
 * the CLI is the shell's child, and a SIGTERM sent to npm kills the shell and leaves the CLI running, orphaned
 * (`exec node …` avoided that, but cmd.exe has no `exec`). So, under npm, the CLI watches its parent: once it is
 * gone (the parent pid changed — POSIX re-parents orphans — or that process no longer exists — Windows does not),
 * the CLI stops as for SIGTERM. A terminal's Ctrl-C needs none of this: it reaches the whole process group.
 */
export interface NpmShellWatchOptions {
  /** The process's environment: npm sets `npm_lifecycle_event` there when it runs the command as a script. */
  env: NodeJS.ProcessEnv;
  /** The current parent pid (process.ppid). */
  parentPid: () => number;
  /** Whether a process with this pid exists. */
  exists: (pid: number) => boolean;
  /** How often the parent is checked (ms). */
  everyMs: number;
  /** Called once, when the parent is gone: stop as for SIGTERM. */
  onGone: () => void;
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // there, but not ours to signal
  }
}

/** Starts watching when npm runs this process (npm sets npm_lifecycle_event); returns the function that stops it. */
export function watchNpmShell(
  o: Partial<NpmShellWatchOptions> & Pick<NpmShellWatchOptions, "everyMs" | "onGone">,
): () => void {
  const env = o.env ?? process.env;
  if (!env.npm_lifecycle_event) return () => {};
  const parentPid = o.parentPid ?? (() => process.ppid);
  const exists = o.exists ?? processExists;
  const shell = parentPid();
  const timer = setInterval(() => {
    if (parentPid() === shell && exists(shell)) return;
    clearInterval(timer);
    o.onGone();
  }, o.everyMs);
  timer.unref(); // never what keeps the process alive
  return () => clearInterval(timer);
}
