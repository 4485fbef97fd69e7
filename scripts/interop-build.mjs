#!/usr/bin/env node
// `npm run interop:build`: restores and builds the .NET interop harness (interop/dotnet: Microsoft.Azure.Cosmos
// 3.64.0, pinned) into interop/dotnet/bin (git-ignored), for `npm run test:interop`. Restore asks the NuGet feed the
// machine is configured with. Without the .NET SDK: one line saying what to install; exit 1.
import { spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const project = join(root, "interop", "dotnet", "CosmosInterop.csproj");
const env = { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: "1", DOTNET_NOLOGO: "1" };

const version = spawnSync("dotnet", ["--version"], { env, encoding: "utf8" });
if (version.error || version.status !== 0) {
  console.error(
    "interop:build needs the .NET SDK 10 ('dotnet' on PATH): https://learn.microsoft.com/dotnet/core/install/ — `npm test` does not need it.",
  );
  process.exit(1);
}

function step(name, args) {
  const started = Date.now();
  const r = spawnSync("dotnet", args, { stdio: "inherit", env });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    console.error(`interop:build: dotnet ${name} failed (exit ${r.status ?? r.signal}) after ${seconds} s`);
    process.exit(r.status ?? 1);
  }
  console.log(`interop:build: ${name} ${seconds} s (.NET SDK ${version.stdout.trim()})`);
}

step("restore", ["restore", project, "--nologo", "-v", "q"]);
step("build", ["build", project, "-c", "Release", "--no-restore", "--nologo", "-v", "q", "-clp:ErrorsOnly"]);
