import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { removeScratch, repoRoot, scratchDir } from "../support/start-cli.js";

afterAll(removeScratch);

/**
 * A repository laid out as this one — packages/devhost (bin/cosmos-feed.js copied in, package.json, tsconfig.json,
 * src/, dist/ with its built-at stamp) beside a sibling package (packages/emulator: package.json, src/) — whose
 * "CLI" only says which copy ran: the compiled one, or the sources through tsx.
 */
function fakeRepository(): string {
  const root = scratchDir("compiled-cli-");
  const devhost = join(root, "packages", "devhost");
  const emulator = join(root, "packages", "emulator");
  mkdirSync(join(devhost, "bin"), { recursive: true });
  copyFileSync(
    join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"),
    join(devhost, "bin", "cosmos-feed.js"),
  );
  writeFileSync(
    join(devhost, "package.json"),
    JSON.stringify({ name: "@cosmos-feed/devhost", type: "module" }),
  );
  writeFileSync(join(devhost, "tsconfig.json"), "{}");
  mkdirSync(join(devhost, "src", "cli"), { recursive: true });
  mkdirSync(join(devhost, "src", "worker"), { recursive: true });
  writeFileSync(
    join(devhost, "src", "cli", "main.ts"),
    'const from: string = "sources";\nconsole.log(from);\n',
  );
  writeFileSync(join(devhost, "src", "worker", "main.ts"), "export {};\n");
  mkdirSync(join(emulator, "src"), { recursive: true });
  writeFileSync(
    join(emulator, "package.json"),
    JSON.stringify({ name: "@cosmos-feed/emulator", type: "module" }),
  );
  writeFileSync(join(emulator, "src", "index.ts"), "export {};\n");
  mkdirSync(join(devhost, "dist", "cli"), { recursive: true });
  writeFileSync(join(devhost, "dist", "cli", "main.js"), 'console.log("compiled");\n');
  const at = (seconds: number) => new Date(seconds * 1000);
  for (const f of [
    "devhost/package.json",
    "devhost/tsconfig.json",
    "devhost/src/cli/main.ts",
    "devhost/src/worker/main.ts",
    "emulator/package.json",
    "emulator/src/index.ts",
  ])
    utimesSync(join(root, "packages", f), at(1_000_000), at(1_000_000));
  writeFileSync(join(devhost, "dist", "built-at"), "");
  utimesSync(join(devhost, "dist", "built-at"), at(1_000_100), at(1_000_100));
  return root;
}

async function run(root: string, env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string }> {
  const { COSMOS_FEED_FROM_SOURCE: _, ...rest } = process.env;
  return promisify(execFile)(
    process.execPath,
    [join(root, "packages", "devhost", "bin", "cosmos-feed.js"), "--version"],
    {
      env: { ...rest, ...env },
    },
  );
}

describe("packages/devhost/bin/cosmos-feed.js runs the compiled CLI (dist/) unless it is missing or older than a source", () => {
  it("compiled when dist/ is as new as every package's sources, else the sources through tsx with one line saying why", async () => {
    const root = fakeRepository();
    expect(await run(root)).toEqual({ stdout: "compiled\n", stderr: "" });

    // A developer edits a sibling package the dev host is built on: dist/ is older than that file.
    const edited = join(root, "packages", "emulator", "src", "index.ts");
    utimesSync(edited, new Date(1_000_200_000), new Date(1_000_200_000));
    expect(await run(root)).toEqual({
      stdout: "sources\n",
      stderr: `cosmos-feed: dist/ is older than ${join("emulator", "src", "index.ts")} (changed ${new Date(1_000_200_000).toISOString()}); running from the TypeScript sources (tsx) — \`npm run build:packages\` compiles them.\n`,
    });

    rmSync(join(root, "packages", "devhost", "dist"), { recursive: true });
    expect(await run(root)).toEqual({
      stdout: "sources\n",
      stderr:
        "cosmos-feed: the compiled CLI (dist/) is missing; running from the TypeScript sources (tsx) — `npm run build:packages` compiles them.\n",
    });
  });

  it("installed from a registry (no src/): the compiled CLI, whatever the dates", async () => {
    const root = fakeRepository();
    rmSync(join(root, "packages", "devhost", "src"), { recursive: true });
    utimesSync(
      join(root, "packages", "emulator", "src", "index.ts"),
      new Date(1_000_200_000),
      new Date(1_000_200_000),
    );
    expect(await run(root)).toEqual({ stdout: "compiled\n", stderr: "" });
  });

  it("COSMOS_FEED_FROM_SOURCE=1 runs the sources, silently, even beside a fresh compiled copy", async () => {
    const root = fakeRepository();
    expect(await run(root, { COSMOS_FEED_FROM_SOURCE: "1" })).toEqual({ stdout: "sources\n", stderr: "" });
  });
});
