#!/usr/bin/env node
// `npm run package [-- --out <file.zip> | --stage <dir>]`: the zip a Flex Consumption deployment takes (what `azd deploy` and
// `func azure functionapp publish` ship): the compiled app (npm run build's output), package.json, host.json and the
// production dependencies only (`npm ci --omit=dev`) with the workspace packages the app uses (@cosmos-feed/core,
// locks, changefeed) as real folders (no symlink), with .funcignore applied. Default output: .data/package/app.zip.
// No zip tool needed: the archive is written here (deflate, CRC-32 from node:zlib).
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { crc32, deflateRawSync } from "node:zlib";
import { releaseManifest } from "./release-manifest.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
// --stage <dir>: leave the package as a folder (azd's service `dist`, zipped by azd itself) instead of a zip.
const stageOnly = arg("--stage");
const out = resolve(arg("--out") ?? join(root, ".data", "package", "app.zip"));
const stage = stageOnly ? resolve(stageOnly) : join(dirname(out), `stage-${process.pid}`);

function run(cmd, args, cwd) {
  // npm is npm.cmd on Windows, a batch file: Node runs one only through the shell (the arguments need no quoting).
  const windowsNpm = process.platform === "win32" && cmd === "npm";
  execFileSync(windowsNpm ? "npm.cmd" : cmd, args, {
    cwd,
    shell: windowsNpm,
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, npm_config_loglevel: "error" },
  });
}

rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
try {
  copyFileSync(join(root, "host.json"), join(stage, "host.json"));
  // The workspace packages (packages/*) are built into their own dist/ first (incremental: nothing to do when
  // `npm install`'s `prepare` built them); the app's build resolves them there.
  run(process.execPath, [join(root, "scripts", "build-packages.mjs")], root);
  run(
    process.execPath,
    [
      join(root, "node_modules", "typescript", "bin", "tsc"),
      "-p",
      join(root, "tsconfig.build.json"),
      "--outDir",
      join(stage, "dist"),
    ],
    root,
  );
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
  const { packages: runtime, lock: installLock } = productionLock(manifest, lock);
  // npm ci installs the registry's production dependencies from the lock, pruned to what the app and the workspace
  // packages it depends on reach (the dev-only workspaces — the dev host, the emulator — and theirs left out)...
  const own = (deps = {}) => Object.fromEntries(Object.entries(deps).filter(([n]) => !runtime.has(n)));
  const installManifest = { ...manifest, dependencies: own(manifest.dependencies) };
  delete installManifest.devDependencies;
  delete installManifest.workspaces;
  delete installManifest.scripts;
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(installManifest, null, 2)}\n`);
  writeFileSync(join(stage, "package-lock.json"), `${JSON.stringify(installLock, null, 2)}\n`);
  run("npm", ["ci", "--omit=dev", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], stage);
  // ... and the workspace packages go in as real folders (what each publishes: its package.json and `files`), not
  // the symlinks npm makes in the repository: a zip keeps no symlink, and the deployment must not need packages/.
  for (const [name, folder] of runtime) {
    const from = join(root, folder);
    const to = join(stage, "node_modules", ...name.split("/"));
    const published = JSON.parse(readFileSync(join(from, "package.json"), "utf8"));
    mkdirSync(to, { recursive: true });
    // As its tarball has it (release-manifest.mjs): no "source" conditions, whose src/ does not ship.
    writeFileSync(join(to, "package.json"), `${JSON.stringify(releaseManifest(published), null, 2)}\n`);
    for (const f of published.files ?? []) {
      if (existsSync(join(from, f)))
        cpSync(join(from, f), join(to, f), {
          recursive: true,
          dereference: true,
          filter: (p) => !p.endsWith(".tsbuildinfo"),
        });
    }
    installLock.packages[`node_modules/${name}`] = {
      version: published.version,
      license: published.license,
      dependencies: published.dependencies,
      engines: published.engines,
    };
  }
  // What ships: the app's package.json without npm's `prepare` (it builds the packages, which the deployment does
  // not have: a remote `npm install` there would fail on it) or the workspaces, and the lock of what is installed.
  const shipped = { ...manifest };
  delete shipped.workspaces;
  shipped.scripts = { ...manifest.scripts };
  delete shipped.scripts.prepare;
  shipped.devDependencies = Object.fromEntries(
    Object.entries(manifest.devDependencies ?? {}).filter(([n]) => !n.startsWith("@cosmos-feed/")),
  );
  installLock.packages[""] = { ...installLock.packages[""], dependencies: manifest.dependencies };
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(shipped, null, 2)}\n`);
  writeFileSync(join(stage, "package-lock.json"), `${JSON.stringify(installLock, null, 2)}\n`);
  // .funcignore, as the publish tools apply it (plain paths; the glob lines name local emulator files only).
  for (const line of readFileSync(join(root, ".funcignore"), "utf8").split("\n")) {
    const entry = line.trim();
    if (!entry || entry.startsWith("#") || entry.includes("*")) continue;
    rmSync(join(stage, entry.replace(/^\//, "")), { recursive: true, force: true });
  }
  if (stageOnly) {
    console.log(`staged the package in ${relative(process.cwd(), stage) || "."}`);
    process.exit(0);
  }
  const files = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) files.push(p);
      // npm's command links (node_modules/.bin) are left out, as ever; a package folder that is a link is an error.
      else if (e.isSymbolicLink() && basename(dir) !== ".bin")
        throw new Error(`package: ${relative(stage, p)} is a symlink; a zip keeps none.`);
    }
  };
  walk(stage);
  files.sort();
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    out,
    zip(
      files.map((f) => ({
        name: relative(stage, f).split(sep).join("/"),
        data: readFileSync(f),
        mode: statSync(f).mode,
      })),
    ),
  );
  console.log(
    `wrote ${relative(process.cwd(), out)} (${files.length} files, ${Math.round(statSync(out).size / 1024)} KiB)`,
  );
} finally {
  if (!stageOnly) rmSync(stage, { recursive: true, force: true });
}

/**
 * The production part of the lock: the entries reached from the app's `dependencies` (through the workspace
 * packages among them, whose own dependencies count), without the workspaces themselves. Returns the workspace
 * packages reached (name → folder, e.g. "@cosmos-feed/core" → "packages/core") and the lock npm ci installs from.
 */
function productionLock(manifest, lock) {
  const all = lock.packages;
  const where = (from, name) => {
    for (let base = from; ; ) {
      const at = `${base ? `${base}/` : ""}node_modules/${name}`;
      if (all[at]) return at;
      if (!base) return undefined;
      const i = base.lastIndexOf("/node_modules/");
      base = i >= 0 ? base.slice(0, i) : "";
    }
  };
  const kept = new Set();
  const workspaces = new Map();
  const visit = (from, deps) => {
    for (const [name] of Object.entries(deps ?? {})) {
      const at = where(from, name);
      if (!at || kept.has(at)) continue;
      kept.add(at);
      const entry = all[at];
      if (entry.link) {
        workspaces.set(name, entry.resolved);
        const ws = all[entry.resolved];
        visit(entry.resolved, { ...ws.dependencies, ...ws.optionalDependencies });
      } else visit(at, { ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies });
    }
  };
  visit("", manifest.dependencies);
  const packages = {};
  const rootEntry = { ...all[""] };
  delete rootEntry.workspaces;
  delete rootEntry.devDependencies;
  rootEntry.dependencies = Object.fromEntries(
    Object.entries(manifest.dependencies ?? {}).filter(([n]) => !workspaces.has(n)),
  );
  packages[""] = rootEntry;
  for (const at of [...kept].sort()) {
    if (all[at].link) continue;
    const { dev: _dev, devOptional: _devOptional, ...entry } = all[at];
    packages[at] = entry;
  }
  return { packages: workspaces, lock: { ...lock, packages } };
}

/** A zip archive (PKZIP 2.0: deflate or store per entry; DOS date fixed so the output is reproducible). */
function zip(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, "utf8");
    const deflated = deflateRawSync(e.data);
    const stored = deflated.length >= e.data.length;
    const body = stored ? e.data : deflated;
    const crc = crc32(e.data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(stored ? 0 : 8, 8);
    local.writeUInt16LE(0, 10);
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(e.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    locals.push(local, name, body);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(0x0314, 4); // made by Unix, 2.0
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(stored ? 0 : 8, 10);
    central.writeUInt16LE(0, 12);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(e.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((((e.mode & 0o777) | 0o100000) * 0x10000) >>> 0, 38); // unix permissions
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += 30 + name.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

if (!existsSync(out)) process.exit(1);
