#!/usr/bin/env node
// `npm run infra:build`: compiles infra/bicep/main.bicep (and its modules) to ARM JSON in .data/infra/ with the
// pinned Bicep CLI (scripts/bicep.mjs: restored from NuGet through the .NET SDK, else the Azure CLI's Bicep), linted
// with infra/bicep/bicepconfig.json. Exit status: Bicep's (non-zero on any error-level diagnostic).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { resolveBicep, root } from "./bicep.mjs";

let bicep;
try {
  bicep = resolveBicep();
} catch (error) {
  console.error(`infra:build: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
const outdir = join(root, ".data", "infra");
const r = spawnSync(bicep.path, ["build", join(root, "infra", "bicep", "main.bicep"), "--outdir", outdir], {
  stdio: "inherit",
});
if (r.status === 0) console.error(`infra:build: ${join(outdir, "main.json")}`);
process.exit(r.status ?? 1);
