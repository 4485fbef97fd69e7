import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { type FileChange, watchSources } from "../../packages/devhost/src/lifecycle/watch.js";
import { removeScratch, scratchDir } from "../support/start-cli.js";

afterAll(removeScratch);

describe("--watch sees every kind of save", () => {
  it("in place, by rename (sed -i, atomic save) and in place again after it, delete, new file, new folder", async () => {
    const src = join(scratchDir("saves-"), "src");
    const sub = join(src, "functions");
    mkdirSync(sub, { recursive: true });
    const file = join(sub, "admin.ts");
    writeFileSync(file, "1");
    const batches: FileChange[][] = [];
    const errors: string[] = [];
    const watcher = watchSources({
      roots: [{ dir: src, recursive: true }],
      ignoreUnder: [],
      known: [file],
      debounceMs: 200,
      onChange: async (changes) => {
        batches.push(changes);
      },
      onError: (m) => errors.push(m),
    });
    /** Runs one save and returns the one batch it makes. */
    const save = async (what: string, act: () => void): Promise<FileChange[]> => {
      const before = batches.length;
      act();
      await waitUntil(what, () => batches.length > before);
      expect(batches.length, what).toBe(before + 1);
      return batches[before];
    };
    try {
      expect(await save("an in-place save", () => writeFileSync(file, "2"))).toEqual([
        { path: file, type: "Changed" },
      ]);
      // sed -i: a temporary file beside it, renamed over it (node's recursive watch loses the file from here on).
      const temporary = join(sub, "sedAb12Cd");
      const renamed = () => {
        writeFileSync(temporary, "3");
        renameSync(temporary, file);
      };
      expect(await save("a save by rename", renamed)).toEqual([{ path: file, type: "Changed" }]);
      expect(await save("an in-place save after it", () => writeFileSync(file, "4"))).toEqual([
        { path: file, type: "Changed" },
      ]);
      expect(await save("a second save by rename", renamed)).toEqual([{ path: file, type: "Changed" }]);
      expect(await save("a delete", () => rmSync(file))).toEqual([{ path: file, type: "Deleted" }]);

      const added = join(sub, "fresh.ts");
      expect(await save("a new file", () => writeFileSync(added, "new"))).toEqual([
        { path: added, type: "Created" },
      ]);
      const folder = join(src, "lib");
      const inFolder = join(folder, "util.ts");
      const newFolder = () => {
        mkdirSync(folder);
        writeFileSync(inFolder, "1");
      };
      expect(await save("a new folder with a file", newFolder)).toEqual([
        { path: inFolder, type: "Created" },
      ]);
      expect(await save("a save in the new folder", () => writeFileSync(inFolder, "2"))).toEqual([
        { path: inFolder, type: "Changed" },
      ]);
      expect(await save("the folder removed", () => rmSync(folder, { recursive: true }))).toEqual([
        { path: inFolder, type: "Deleted" },
      ]);
      expect(errors).toEqual([]);
    } finally {
      watcher.close();
    }
  });
});
