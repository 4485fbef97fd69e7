import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const bin = join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js");
/** Throwaway apps live inside the repository (under the git-ignored .data/) so that they resolve @azure/functions. */
const scratch = join(repoRoot, ".data", "test-apps");

/** A command line run as a child process: its output so far, its exit, and waits for lines. */
export interface CliRun {
  child: ChildProcess;
  /** A process group of its own (see runCli). */
  detached: boolean;
  /** stdout and stderr, interleaved as they came. */
  output(): string;
  exited: Promise<number | null>;
  /** Resolves with the first match of `re` in the output; rejects if the process exits first. */
  waitFor(re: RegExp): Promise<RegExpMatchArray>;
  /** Sends `signal` to the child's process group (it must have been started with `detached`), as a terminal does. */
  signalGroup(signal: NodeJS.Signals): void;
}

/**
 * Runs `command args` (default: `node packages/devhost/bin/cosmos-feed.js …`). `detached` makes the child a process group of its
 * own, so that a signal can go to the whole group, as a terminal's Ctrl-C does.
 */
export function runCli(
  args: string[],
  options: { detached?: boolean; cwd?: string; command?: string; env?: NodeJS.ProcessEnv } = {},
): CliRun {
  const command = options.command ?? process.execPath;
  const child = spawn(command, options.command ? args : [bin, ...args], {
    cwd: options.cwd ?? repoRoot,
    detached: options.detached ?? false,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, FIXTURE_COSMOS: "", ...options.env },
  });
  let text = "";
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const w of [...waiters]) w();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    detached: options.detached ?? false,
    output: () => text,
    exited,
    waitFor: (re) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = text.match(re);
          if (m) {
            waiters.delete(check);
            resolve(m);
          }
        };
        waiters.add(check);
        check();
        void exited.then(() =>
          setTimeout(() => {
            if (waiters.delete(check)) reject(new Error(`exited before ${re}:\n${text}`));
          }, 50),
        );
      }),
    signalGroup: (signal) => process.kill(-(child.pid as number), signal),
  };
}

/** Kills what `runs` left running (the whole group of a detached one). */
export function killAll(runs: CliRun[]): void {
  for (const r of runs.splice(0)) {
    if (r.detached) {
      try {
        process.kill(-(r.child.pid as number), "SIGKILL");
      } catch {
        // the group is gone
      }
    } else if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
  }
}

const created: string[] = [];

/** A fresh folder under .data/test-apps (removed by removeScratch). */
export function scratchDir(prefix: string): string {
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, prefix));
  created.push(dir);
  return dir;
}

/** A copy of a fixture app (test/fixtures/<name>) in a fresh scratch folder. */
export function copyFixture(name: string): string {
  const dir = scratchDir(`${name}-`);
  cpSync(join(repoRoot, "test", "fixtures", name), dir, { recursive: true });
  return dir;
}

export function removeScratch(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}
