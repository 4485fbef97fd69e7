#!/usr/bin/env node
// `npm run start:func`: the app on the real Functions host (Azure Functions Core Tools), for machines that have it.
// Builds first (npm run build → dist/), then `func start` with any extra arguments. Without Core Tools: one line
// saying what to install, and that `npm start` runs the same app on the dev host; exit 1.
import { spawn, spawnSync } from "node:child_process";
import { funcExecutables, funcOnPath } from "./func-on-path.mjs";

if (!funcOnPath()) {
  console.error(
    "start:func needs Azure Functions Core Tools v4 ('func' on PATH): npm i -g azure-functions-core-tools@4 (and `npm run azurite` for AzureWebJobsStorage); `npm start` runs the same app on the dev host without it.",
  );
  process.exit(1);
}
// On Windows npm and func are batch files (npm.cmd, func.cmd), which Node spawns only through the shell.
const windows = process.platform === "win32";
const build = spawnSync(windows ? "npm.cmd" : "npm", ["run", "build"], { stdio: "inherit", shell: windows });
if (build.status !== 0) process.exit(build.status ?? 1);
const func = spawn(funcExecutables[0], ["start", ...process.argv.slice(2)], {
  stdio: "inherit",
  shell: windows,
});
// A console's Ctrl-C reaches func on Windows by itself (and child.kill there is TerminateProcess): forward only on
// POSIX, where npm's SIGTERM would otherwise stop here.
if (!windows) for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => func.kill(signal));
else for (const signal of ["SIGINT", "SIGBREAK"]) process.on(signal, () => {});
func.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
