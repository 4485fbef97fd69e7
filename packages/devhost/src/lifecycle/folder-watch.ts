import { type Dirent, type FSWatcher, readdirSync, statSync, watch } from "node:fs";
import { join } from "node:path";
import { isUnder } from "./sources.js";

/**
 * One `fs.watch` per folder, never `recursive: true`. Node's recursive watch on Linux (Node 20 and 22) watches each
 * file on its own and loses a file for good once it is replaced by a rename (`sed -i`, an editor's atomic save);
 * a folder's own watch reports every name that changes in it, however it changed, for as long as the folder lives.
 * New folders are watched as they appear (and what they already hold reported), removed ones let go.
 */
export interface FolderTreeWatcher {
  close(): void;
}

export interface WatchFolderTreeOptions {
  /** The folder to watch. */
  dir: string;
  /** Also every folder below it (as they come and go), or only its own entries. */
  recursive: boolean;
  /** Whether a path (file or folder) is of interest; a folder not of interest is not watched nor reported. */
  wanted(path: string): boolean;
  /** A name in a watched folder changed: written ("change"), or created, removed or renamed ("rename"). */
  onPath(path: string, event: "rename" | "change"): void;
  /** The top folder could not be watched, or its watch failed. */
  onError(message: string): void;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function entries(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return []; // gone again, or unreadable: nothing to watch there
  }
}

export function watchFolderTree(o: WatchFolderTreeOptions): FolderTreeWatcher {
  const watchers = new Map<string, FSWatcher>();
  let closed = false;

  const letGo = (dir: string) => {
    for (const [path, w] of watchers) {
      if (isUnder(path, dir)) {
        w.close();
        watchers.delete(path);
      }
    }
  };

  /** Watches `dir` (and below, when recursive); `report` names the files found there (a folder that just came). */
  const arm = (dir: string, report: boolean): void => {
    if (closed || watchers.has(dir)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: true }, (event, name) => onEvent(dir, event, name));
    } catch (e) {
      if (dir === o.dir) o.onError(`Cannot watch ${dir}: ${(e as Error).message}`);
      return; // a folder below that went away before its watch began: its parent reports it
    }
    watcher.on("error", (e) => {
      letGo(dir);
      // A folder below that is removed ends its own watch (Windows reports EPERM); only the top one is an error.
      if (dir === o.dir) o.onError(`Watching ${dir} failed: ${e.message}`);
    });
    watchers.set(dir, watcher);
    // Listed after its watch began, so that nothing created in between is missed.
    for (const e of entries(dir)) {
      const path = join(dir, e.name);
      if (!o.wanted(path)) continue;
      if (e.isDirectory()) {
        if (o.recursive) arm(path, report);
      } else if (report) o.onPath(path, "rename");
    }
  };

  const onEvent = (dir: string, event: string, name: string | Buffer | null) => {
    if (closed || !name) return;
    const path = join(dir, name.toString());
    if (!o.wanted(path)) return;
    if (event === "rename") {
      if (isDirectory(path)) {
        if (o.recursive) arm(path, true);
      } else if (path !== dir) letGo(path); // a watched folder removed or renamed away (no-op for a file)
    }
    o.onPath(path, event === "change" ? "change" : "rename");
  };

  arm(o.dir, false);
  return {
    close() {
      closed = true;
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}
