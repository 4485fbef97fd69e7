#!/usr/bin/env node
// `npm run publish:func -- <function app name> [func options…] [--stage <dir>]`: what `func azure functionapp publish`
// must ship, and only that. Core Tools zips the folder it runs in (everything but .funcignore's entries, and
// local.settings.json), with no build of its own for Node — from the repository root that would be node_modules with
// every devDependency. So this stages the package `npm run package` and azd ship (the compiled app, package.json,
// host.json, production dependencies only: scripts/package.mjs --stage) and publishes that folder with --no-build.
// Without Core Tools: one line saying what to install; exit 1.
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { funcExecutables, funcOnPath } from "./func-on-path.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const stageAt = args.indexOf("--stage");
const stage = resolve(
  stageAt >= 0 ? (args.splice(stageAt, 2)[1] ?? "") : join(root, ".data", "package", "func"),
);
const [app, ...funcOptions] = args;
if (!app || app.startsWith("-")) {
  console.error(
    "publish:func: name the function app: npm run publish:func -- <function app name> [func options]",
  );
  process.exit(1);
}
if (!funcOnPath()) {
  console.error(
    "publish:func needs Azure Functions Core Tools v4 ('func' on PATH): npm i -g azure-functions-core-tools@4; `azd deploy` ships the same package without it.",
  );
  process.exit(1);
}
const staged = spawnSync(process.execPath, [join(root, "scripts", "package.mjs"), "--stage", stage], {
  stdio: "inherit",
});
if (staged.status !== 0) process.exit(staged.status ?? 1);
// Core Tools takes the worker runtime from here (or FUNCTIONS_WORKER_RUNTIME) and never ships this file.
writeFileSync(
  join(stage, "local.settings.json"),
  '{ "IsEncrypted": false, "Values": { "FUNCTIONS_WORKER_RUNTIME": "node" } }\n',
);
const func = spawn(
  funcExecutables[0],
  ["azure", "functionapp", "publish", app, "--no-build", ...funcOptions],
  {
    cwd: stage,
    stdio: "inherit",
    env: { ...process.env, FUNCTIONS_WORKER_RUNTIME: "node" },
    shell: process.platform === "win32",
  },
);
func.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
