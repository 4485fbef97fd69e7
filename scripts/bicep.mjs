#!/usr/bin/env node
// The Bicep CLI that builds and checks infra/bicep (`npm run infra:build`, `npm run test:infra`), pinned:
// - the NuGet package Azure.Bicep.CommandLine.<runtime> at the version scripts/bicep-restore/bicep-restore.csproj pins,
//   restored with `dotnet restore` into .data/tools/bicep/<version>/ (git-ignored) the first time, then taken from there;
// - without the .NET SDK, the Azure CLI's Bicep (`az bicep install`, then its own copy), whatever version that is;
// - with neither, one line saying what to install, and exit 1.
//
//   node scripts/bicep.mjs --path        restores when needed, prints the executable's path
//   node scripts/bicep.mjs <args…>       runs `bicep <args…>` (e.g. `lint infra/bicep/main.bicep`)
import { spawnSync } from "node:child_process";
import { accessSync, chmodSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const restoreProject = join(root, "scripts", "bicep-restore", "bicep-restore.csproj");

/** The pinned Bicep version: the one place it is written is the restore project. */
export function pinnedVersion() {
  const match = /<BicepVersion>([^<]+)<\/BicepVersion>/.exec(readFileSync(restoreProject, "utf8"));
  if (!match) throw new Error(`${restoreProject} pins no <BicepVersion>`);
  return match[1].trim();
}

/** The package's runtime identifier for this machine (Azure.Bicep.CommandLine.<rid>). */
function runtimeId() {
  const os = { linux: "linux", darwin: "osx", win32: "win" }[process.platform];
  const arch = { x64: "x64", arm64: "arm64" }[process.arch];
  if (!os || !arch) throw new Error(`no Bicep CLI package for ${process.platform}-${process.arch}`);
  return `${os}-${arch}`;
}

function onPath(name) {
  const names = process.platform === "win32" ? [`${name}.exe`, `${name}.cmd`] : [name];
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .flatMap((d) => names.map((n) => join(d, n)))
    .find((p) => existsSync(p) && statSync(p).isFile());
}

const executableName = process.platform === "win32" ? "bicep.exe" : "bicep";

/** Where the restore puts the package, and the executable in it (present once restored). */
function nugetLayout(version) {
  const cache = join(root, ".data", "tools", "bicep", version);
  const id = `azure.bicep.commandline.${runtimeId()}`; // NuGet's packages folder uses lower-case ids
  const tools = join(cache, "packages", id, version, "tools");
  return { cache, packages: join(cache, "packages"), tools, executable: join(tools, executableName) };
}

function makeExecutable(path) {
  if (process.platform === "win32") return;
  try {
    accessSync(path, constants.X_OK);
  } catch {
    chmodSync(path, statSync(path).mode | 0o111);
  }
}

/** The NuGet package's executable: from the cache, or restored into it now. Throws with dotnet's output on failure. */
function fromNuget(version, log) {
  const layout = nugetLayout(version);
  if (!existsSync(layout.executable)) {
    const started = process.hrtime.bigint();
    const r = spawnSync(
      "dotnet",
      [
        "restore",
        restoreProject,
        "--packages",
        layout.packages,
        `-p:BaseIntermediateOutputPath=${join(layout.cache, "obj")}${process.platform === "win32" ? "\\" : "/"}`,
        `-p:BicepRuntime=${runtimeId()}`,
      ],
      {
        encoding: "utf8",
        env: { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: "1", DOTNET_NOLOGO: "1" },
      },
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (r.status !== 0 || !existsSync(layout.executable)) {
      throw new Error(
        `dotnet restore of Azure.Bicep.CommandLine.${runtimeId()} ${version} failed (exit ${r.status}):\n${r.stdout}${r.stderr}`,
      );
    }
    log(
      `bicep: restored Azure.Bicep.CommandLine.${runtimeId()} ${version} from NuGet in ${seconds.toFixed(1)} s`,
    );
  }
  makeExecutable(layout.executable);
  return layout.executable;
}

/** The Azure CLI's own copy of Bicep (~/.azure/bin), installed by `az bicep install` when missing. */
function fromAzureCli(az, log) {
  const configDir = process.env.AZURE_CONFIG_DIR ?? join(homedir(), ".azure");
  const executable = join(configDir, "bin", executableName);
  if (!existsSync(executable)) {
    const r = spawnSync(az, ["bicep", "install"], { stdio: "inherit" });
    if (r.status !== 0 || !existsSync(executable))
      throw new Error("`az bicep install` did not install Bicep");
  }
  log(`bicep: no .NET SDK; using the Azure CLI's Bicep (${executable}), not the pinned ${pinnedVersion()}`);
  return executable;
}

/**
 * The Bicep CLI to run: `{ path, source }`. `log` receives one line per notable step (a restore and its time, the
 * Azure CLI fallback). Throws an Error whose message is the one line to show when there is no way to get Bicep.
 */
export function resolveBicep(log = (line) => console.error(line)) {
  const version = pinnedVersion();
  if (existsSync(nugetLayout(version).executable) || onPath("dotnet")) {
    return { path: fromNuget(version, log), source: "nuget", version };
  }
  const az = onPath("az");
  if (az) return { path: fromAzureCli(az, log), source: "az", version: undefined };
  throw new Error(
    `Bicep ${version} comes from NuGet through the .NET SDK ('dotnet' on PATH: https://dotnet.microsoft.com/download), or from the Azure CLI ('az' on PATH); neither is installed.`,
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let bicep;
  try {
    bicep = resolveBicep();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
  const args = process.argv.slice(2);
  if (args.length === 1 && args[0] === "--path") {
    console.log(bicep.path);
    process.exit(0);
  }
  const r = spawnSync(bicep.path, args, { stdio: "inherit" });
  process.exit(r.status ?? 1);
}
