#!/usr/bin/env node
// `npm run package [-- --out <file.zip> | --stage <dir>]`: the zip a Flex Consumption deployment takes (what `azd deploy` and
// `func azure functionapp publish` ship): the compiled app (npm run build's output), package.json, host.json and the
// production dependencies only (`npm ci --omit=dev`), with .funcignore applied. Default output: .data/package/app.zip.
// No zip tool needed: the archive is written here (deflate, CRC-32 from node:zlib).
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { crc32, deflateRawSync } from "node:zlib";

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
  for (const f of ["package.json", "package-lock.json", "host.json"])
    copyFileSync(join(root, f), join(stage, f));
  // npm's `prepare` compiles the tools (scripts/build-tools.mjs), which the package has not: an `npm install` there
  // (a remote build) would fail on it.
  const manifest = JSON.parse(readFileSync(join(stage, "package.json"), "utf8"));
  delete manifest.scripts?.prepare;
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
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
  run("npm", ["ci", "--omit=dev", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], stage);
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
