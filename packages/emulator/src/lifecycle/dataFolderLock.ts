import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { ensureDirectory } from "../store/directory.js";

/**
 * A data folder cannot be used: `code` "DataFolderInUse" (another live process holds its lock) or
 * "DataFolderUnusable" (it cannot be created or written). The message is one line that says what to do.
 */
export class DataFolderLockError extends CosmosFeedError {}

/** The lock file's name inside a data folder (`devhost.lock`: the name the dev host has always used). */
export const LOCK_FILE = "devhost.lock";

/** What the lock file holds: who runs on the folder. */
export interface LockOwner {
  /** The owner's process id. */
  pid: number;
  /** What the process is, e.g. "cosmos-feed start /path/to/app" or "cosmos-feed emulator". */
  holder: string;
  /** When the owner took the lock (ISO 8601). */
  startedAt: string;
}

/** A data folder locked by this process (lockDataFolder). */
export interface DataFolderLock {
  /** The locked data folder, as given to lockDataFolder. */
  readonly dataDir: string;
  /** Removes the lock file if it is still this process's (idempotent). */
  release(): void;
}

/** Whether a process with this id runs (EPERM: it runs, as another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const v = JSON.parse(readFileSync(file, "utf8")) as Partial<LockOwner>;
    return Number.isInteger(v.pid) && (v.pid as number) > 0
      ? { pid: v.pid as number, holder: String(v.holder ?? "?"), startedAt: String(v.startedAt ?? "?") }
      : undefined;
  } catch {
    return undefined; // missing, half written, not JSON: no live owner named
  }
}

/**
 * Takes `<dataDir>/devhost.lock` for this process, so that two processes never run an emulator on one SQLite
 * database (the second one's writes all failed with 500). The file holds the owner's pid; a lock whose pid no longer
 * runs is stale and taken over (with `log` told). A live owner → DataFolderLockError "DataFolderInUse", one line naming the
 * folder, the other process and what to do. The folder is created when missing.
 */
export async function lockDataFolder(
  dataDir: string,
  options: { holder: string; log: (line: string) => void },
): Promise<DataFolderLock> {
  const file = join(dataDir, LOCK_FILE);
  try {
    // One level at a time: Node's recursive mkdir can loop for ever on some unwritable paths (/proc).
    ensureDirectory(dataDir);
  } catch (e) {
    throw new DataFolderLockError(
      `Cannot use the data folder '${dataDir}' (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): choose another with --data-dir <dir>.`,
      { code: "DataFolderUnusable", cause: e },
    );
  }
  const me: LockOwner = { pid: process.pid, holder: options.holder, startedAt: new Date().toISOString() };
  // Two tries: the second after removing a stale lock (another start racing for it makes `wx` fail again).
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${JSON.stringify(me)}\n`, { flag: "wx" });
      return {
        dataDir,
        release: () => {
          if (readOwner(file)?.pid === process.pid) rmSync(file, { force: true });
        },
      };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "EEXIST") {
        throw new DataFolderLockError(
          `Cannot use the data folder '${dataDir}' (${code ?? (e as Error).message}): choose another with --data-dir <dir>.`,
          { code: "DataFolderUnusable", cause: e },
        );
      }
    }
    const owner = readOwner(file);
    if (owner && processAlive(owner.pid)) {
      const who = owner.pid === process.pid ? "this process" : `process ${owner.pid}`;
      throw new DataFolderLockError(
        `The data folder '${dataDir}' is in use by ${who} (${owner.holder}, since ${owner.startedAt}): stop that one, or use another folder with --data-dir <dir>.`,
        { code: "DataFolderInUse" },
      );
    }
    options.log(
      owner
        ? `Taking over the data folder lock of process ${owner.pid}, which no longer runs (${file}).`
        : `Replacing an unreadable data folder lock (${file}).`,
    );
    rmSync(file, { force: true });
  }
  throw new DataFolderLockError(
    `The data folder '${dataDir}' was locked by another process starting at the same time: stop that one, or use another folder with --data-dir <dir>.`,
    { code: "DataFolderInUse" },
  );
}
