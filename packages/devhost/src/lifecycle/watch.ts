import { statSync } from "node:fs";
import { basename, relative, sep } from "node:path";
import { type FolderTreeWatcher, watchFolderTree } from "./folder-watch.js";
import { isUnder } from "./sources.js";

/** One changed file, in the host's terms for a file change. */
export interface FileChange {
  path: string;
  type: "Changed" | "Created" | "Deleted";
}

export interface SourceWatcher {
  /** Stops watching; a change batch in progress finishes. */
  close(): void;
}

export interface WatchSourcesOptions {
  /** Folders to watch: each recursively or not (see sources.ts watchRoots). */
  roots: { dir: string; recursive: boolean }[];
  /** Paths never to react to (the build output, so that a build does not trigger itself). */
  ignoreUnder: string[];
  /** The source files known at start (absolute): a path gone by the batch that was never known is no change. */
  known: string[];
  /** A batch is handed over once no file changed for this long. */
  debounceMs: number;
  /** Handles one batch; batches never overlap (changes during one make the next). */
  onChange(changes: FileChange[]): Promise<void>;
  /** A watcher failed (its folder was removed, the system's watch limit …). */
  onError(message: string): void;
}

/** Editors' swap, backup and probe files: not sources. */
function editorTemporary(path: string): boolean {
  const name = basename(path);
  return (
    name.startsWith(".") || name.endsWith("~") || /\.(swp|swx|swo|tmp)$/i.test(name) || /^\d+$/.test(name) // vim's write probe ("4913")
  );
}

function kindOf(path: string): "file" | "folder" | "gone" {
  try {
    return statSync(path).isDirectory() ? "folder" : "file";
  } catch {
    return "gone";
  }
}

/**
 * Watches source folders (one fs.watch per folder, see folder-watch.ts: a file saved by rename stays watched) and
 * hands over debounced batches of changed files. node_modules, dot folders, editor temporaries and `ignoreUnder`
 * are ignored.
 */
export function watchSources(o: WatchSourcesOptions): SourceWatcher {
  const pending = new Map<string, "rename" | "change">();
  // Files seen (at start, or existing when a batch ran): a temporary file that came and went (sed -i's) is not.
  const known = new Set(o.known);
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let closed = false;

  const flush = async () => {
    timer = undefined;
    if (running || closed || pending.size === 0) return;
    running = true;
    const batch: FileChange[] = [];
    const seen = new Set<string>();
    const add = (path: string, type: FileChange["type"]) => {
      if (seen.has(path)) return;
      seen.add(path);
      if (type === "Deleted") known.delete(path);
      else known.add(path);
      batch.push({ path, type });
    };
    for (const [path, event] of pending) {
      const kind = kindOf(path);
      if (kind === "folder") continue; // its files are reported one by one
      if (kind === "file") {
        add(path, event === "rename" && !known.has(path) ? "Created" : "Changed");
      } else if (known.has(path)) add(path, "Deleted");
      // A folder removed (or renamed away): every file known below it is gone.
      else for (const k of [...known]) if (isUnder(k, path)) add(k, "Deleted");
    }
    pending.clear();
    if (batch.length === 0) {
      running = false;
      return;
    }
    try {
      await o.onChange(batch);
    } finally {
      running = false;
      if (pending.size > 0 && !closed) schedule();
    }
  };
  const schedule = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void flush(), o.debounceMs);
  };

  const wanted = (root: string, path: string) => {
    const parts = relative(root, path).split(sep);
    if (parts.some((p) => p === "node_modules" || p.startsWith("."))) return false;
    return !editorTemporary(path) && !o.ignoreUnder.some((d) => isUnder(path, d));
  };
  const watchers: FolderTreeWatcher[] = o.roots.map((root) =>
    watchFolderTree({
      dir: root.dir,
      recursive: root.recursive,
      wanted: (path) => wanted(root.dir, path),
      onPath: (path, event) => {
        // A "rename" seen once stays one (a created file may then be written: still "Created").
        if (pending.get(path) !== "rename") pending.set(path, event);
        if (!running) schedule();
      },
      onError: o.onError,
    }),
  );
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      for (const w of watchers) w.close();
    },
  };
}
