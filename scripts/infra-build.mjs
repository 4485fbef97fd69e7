#!/usr/bin/env node
// `npm run infra:build`: compiles infra/bicep/main.bicep to ARM JSON with the Azure CLI's Bicep (az bicep build),
// the check the offline tests cannot do. Without the Azure CLI: one line saying what to install; exit 1.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const names = process.platform === "win32" ? ["az.cmd", "az.exe"] : ["az"];
const az = (process.env.PATH ?? "")
  .split(delimiter)
  .filter(Boolean)
  .flatMap((d) => names.map((n) => join(d, n)))
  .find((p) => existsSync(p));
if (!az) {
  console.error(
    "infra:build needs the Azure CLI with Bicep ('az' on PATH; then `az bicep install`); offline, `npm test` checks the Bicep with tree-sitter-bicep instead.",
  );
  process.exit(1);
}
const outdir = join(root, ".data", "infra");
const r = spawnSync(
  az,
  ["bicep", "build", "--file", join(root, "infra", "bicep", "main.bicep"), "--outdir", outdir],
  { stdio: "inherit" },
);
process.exit(r.status ?? 1);
