// The files `func azure functionapp publish` zips from a folder, as Core Tools selects them for a Node app
// (Azure/azure-functions-core-tools, src/Cli/func/Common/FileSystemHelpers.cs, GetLocalFiles; ZipHelper.GetAppZipFile:
// no build step for Node): every file below the folder except the directories .git and .vscode and the files named
// .funcignore, .gitignore, local.settings.json and project.lock.json, at any depth — and, when the folder has a
// .funcignore, what its gitignore rules deny. The folders this project publishes have none; one is refused here
// rather than half-applied.
import { existsSync, readdirSync } from "node:fs";
import { join, relative, sep } from "node:path";

const IGNORED_DIRECTORIES = [".git", ".vscode"];
const IGNORED_FILES = [".funcignore", ".gitignore", "local.settings.json", "project.lock.json"];

export function coreToolsPublishFiles(folder: string): string[] {
  if (existsSync(join(folder, ".funcignore")))
    throw new Error(`${folder} has a .funcignore: its rules are not applied by this helper`);
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const lower = e.name.toLowerCase();
      if (e.isDirectory()) {
        if (!IGNORED_DIRECTORIES.includes(lower)) walk(join(dir, e.name));
      } else if (!IGNORED_FILES.includes(lower))
        out.push(relative(folder, join(dir, e.name)).split(sep).join("/"));
    }
  };
  walk(folder);
  return out.sort();
}
