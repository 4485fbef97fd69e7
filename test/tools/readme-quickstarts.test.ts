/**
 * Every package's README is what its users read on npm: its quick start must run as written and print what the
 * README says it prints. Each README marks its quick start with a ```js quickstart fence and the output with a
 * ```text quickstart-output fence; this test writes the code, unchanged, to `test-output/readme-quickstarts/<name>/
 * quickstart.mjs` (inside the repository, so `@cosmos-feed/*` resolve as an installed project's would: the
 * workspace links in node_modules, to the packages' compiled dist/ — vitest's globalSetup built them — since the
 * child gets no "source" condition) and runs it with plain node, as a user would, then compares its stdout with
 * the README's output block line by line. The snippets start their own emulator (port 0, in memory or in a
 * temporary folder). No duration is judged: a child is only killed, as a hang, after CHILD_HANG_MS.
 *
 * The READMEs' other promises are checked too: the install line, every `exports` subpath named, a licence line,
 * no relative link that leaves the package (they break on npm), and a CHANGELOG entry for the package's version.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";

const PACKAGES = ["core", "changefeed", "locks", "emulator", "devhost"] as const;

/** A quick start that has not exited by then hangs (each exits in seconds on a quiet machine). */
const CHILD_HANG_MS = 8 * 60_000;

interface PackageJson {
  name: string;
  version: string;
  exports: Record<string, unknown>;
  files: string[];
}

function readPackage(name: string): { pkg: PackageJson; readme: string; changelog: string } {
  const dir = join(repoRoot, "packages", name);
  return {
    pkg: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson,
    readme: readFileSync(join(dir, "README.md"), "utf8"),
    changelog: readFileSync(join(dir, "CHANGELOG.md"), "utf8"),
  };
}

/** The bodies of the fences whose info string is exactly `info` (```js quickstart … ```). */
function fencedBlocks(markdown: string, info: string): string[] {
  const blocks: string[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== `\`\`\`${info}`) continue;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]?.trim() !== "```"; i++) body.push(lines[i] as string);
    blocks.push(body.join("\n"));
  }
  return blocks;
}

/** The child's environment: what a user's shell has — no source condition, no from-source switch of the CLI. */
function userEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  const options = (env.NODE_OPTIONS ?? "").replace(/--conditions=source/g, "").trim();
  if (options) env.NODE_OPTIONS = options;
  else delete env.NODE_OPTIONS;
  delete env.COSMOS_FEED_FROM_SOURCE;
  return env;
}

function runNode(
  file: string,
  cwd: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Its own process group, so that a hung quick start is ended with whatever it started (the dev host's worker).
    const child = spawn(process.execPath, [file], { cwd, env: userEnv(), detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const hang = setTimeout(() => {
      try {
        process.kill(-(child.pid as number), "SIGKILL");
      } catch {
        // already gone
      }
    }, CHILD_HANG_MS);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(hang);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const lines = (text: string) =>
  text
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l !== "");

describe("fencedBlocks", () => {
  it("finds only fences with exactly that info string", () => {
    const md = [
      "```js",
      "a",
      "```",
      "```js quickstart",
      "b",
      "c",
      "```",
      "```js quickstart-x",
      "d",
      "```",
    ].join("\n");
    expect(fencedBlocks(md, "js quickstart")).toEqual(["b\nc"]);
    expect(fencedBlocks(md, "js")).toEqual(["a"]);
  });
});

describe.each(PACKAGES)("packages/%s/README.md", (name) => {
  const { pkg, readme, changelog } = readPackage(name);

  it("says how to install it and names every subpath of its exports", () => {
    expect(readme).toMatch(new RegExp(`npm install (--save-dev )?${pkg.name.replace("/", "\\/")}\\b`));
    for (const subpath of Object.keys(pkg.exports)) {
      if (subpath === "." || subpath === "./package.json") continue;
      expect(readme, `${pkg.name}${subpath.slice(1)} is not named in the README`).toContain(
        `${pkg.name}${subpath.slice(1)}`,
      );
    }
    expect(readme).toMatch(/^## Licence\n\nMIT/m);
    expect(pkg.files).toEqual(expect.arrayContaining(["README.md", "CHANGELOG.md", "LICENSE"]));
  });

  it("has no relative links (npm resolves them against a repository URL, and the package names none)", () => {
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
    expect(targets.filter((t) => !/^(https?:|#)/.test(t))).toEqual([]);
  });

  it("has a CHANGELOG entry for its version", () => {
    expect(changelog).toContain(`## ${pkg.version}\n`);
  });

  it("has one quick start, which runs as written and prints what the README shows", async () => {
    const [code, ...moreCode] = fencedBlocks(readme, "js quickstart");
    const [expected, ...moreExpected] = fencedBlocks(readme, "text quickstart-output");
    expect(code, "a ```js quickstart block").toBeDefined();
    expect(expected, "a ```text quickstart-output block").toBeDefined();
    expect(moreCode.length + moreExpected.length).toBe(0);

    const dir = join(repoRoot, "test-output", "readme-quickstarts", name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "quickstart.mjs"), code as string);
    const run = await runNode("quickstart.mjs", dir);
    const report = `exit ${run.code} ${run.signal ?? ""}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
    expect(run.code, report).toBe(0);
    expect(lines(run.stdout), report).toEqual(lines(expected as string));
    rmSync(dir, { recursive: true, force: true });
  });
});
