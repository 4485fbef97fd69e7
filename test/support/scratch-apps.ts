import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// Throwaway apps live inside the repository (under the git-ignored .data/) so that they resolve @azure/functions.
const scratch = fileURLToPath(new URL("../../.data/test-apps", import.meta.url));

/** Writes throwaway app folders (`write`) and removes every one of them (`removeAll`, for afterAll). */
export function scratchApps(prefix: string): {
  write(files: Record<string, string>): string;
  removeAll(): void;
} {
  const created: string[] = [];
  return {
    write(files) {
      mkdirSync(scratch, { recursive: true });
      const dir = mkdtempSync(join(scratch, prefix));
      created.push(dir);
      for (const [name, text] of Object.entries(files)) {
        mkdirSync(join(dir, name, ".."), { recursive: true });
        writeFileSync(join(dir, name), text);
      }
      return dir;
    },
    removeAll() {
      for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}
