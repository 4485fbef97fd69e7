import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { removeScratch, repoRoot, scratchDir } from "../support/start-cli.js";

afterAll(removeScratch);

/**
 * A package laid out as this one (bin/cosmos-feed.js copied in, tsconfig.tools.json, the sources, dist-tools/)
 * whose "CLI" only says which copy ran: the compiled one, or the sources through tsx.
 */
function fakePackage(): string {
  const root = scratchDir("compiled-cli-");
  mkdirSync(join(root, "bin"));
  copyFileSync(join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"), join(root, "packages", "devhost", "bin", "cosmos-feed.js"));
  writeFileSync(join(root, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(join(root, "tsconfig.json"), "{}");
  writeFileSync(join(root, "tsconfig.tools.json"), JSON.stringify({ include: ["packages/devhost/src/cli", "packages/devhost/src"] }));
  mkdirSync(join(root, "src", "cli"), { recursive: true });
  mkdirSync(join(root, "src", "devhost", "worker"), { recursive: true });
  writeFileSync(join(root, "src", "cli", "main.ts"), 'const from: string = "sources";\nconsole.log(from);\n');
  writeFileSync(join(root, "src", "devhost", "worker", "main.ts"), "export {};\n");
  mkdirSync(join(root, "dist-tools", "src", "cli"), { recursive: true });
  writeFileSync(join(root, "dist-tools", "src", "cli", "main.js"), 'console.log("compiled");\n');
  const at = (seconds: number) => new Date(seconds * 1000);
  for (const f of [
    "package.json",
    "tsconfig.json",
    "tsconfig.tools.json",
    "packages/devhost/src/cli/main.ts",
    "packages/devhost/src/worker/main.ts",
  ])
    utimesSync(join(root, f), at(1_000_000), at(1_000_000));
  writeFileSync(join(root, "dist-tools", "built-at"), "");
  utimesSync(join(root, "dist-tools", "built-at"), at(1_000_100), at(1_000_100));
  return root;
}

async function run(root: string, env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string }> {
  const { COSMOS_FEED_FROM_SOURCE: _, ...rest } = process.env;
  return promisify(execFile)(process.execPath, [join(root, "packages", "devhost", "bin", "cosmos-feed.js"), "--version"], {
    env: { ...rest, ...env },
  });
}

describe("bin/cosmos-feed.js runs the compiled CLI (dist-tools/) unless it is missing or older than its sources", () => {
  it("compiled when dist-tools/ is as new as every source, else the sources through tsx with one line saying why", async () => {
    const root = fakePackage();
    expect(await run(root)).toEqual({ stdout: "compiled\n", stderr: "" });

    // A developer edits the dev host: dist-tools/ is older than that file.
    const edited = join(root, "src", "devhost", "worker", "main.ts");
    utimesSync(edited, new Date(1_000_200_000), new Date(1_000_200_000));
    expect(await run(root)).toEqual({
      stdout: "sources\n",
      stderr: `cosmos-feed: dist-tools/ is older than ${join("src", "devhost", "worker", "main.ts")} (changed ${new Date(1_000_200_000).toISOString()}); running from the TypeScript sources (tsx) — \`npm run build:tools\` compiles them.\n`,
    });

    rmSync(join(root, "dist-tools"), { recursive: true });
    expect(await run(root)).toEqual({
      stdout: "sources\n",
      stderr:
        "cosmos-feed: the compiled CLI (dist-tools/) is missing; running from the TypeScript sources (tsx) — `npm run build:tools` compiles them.\n",
    });
  });

  it("COSMOS_FEED_FROM_SOURCE=1 runs the sources, silently, even beside a fresh compiled copy", async () => {
    const root = fakePackage();
    expect(await run(root, { COSMOS_FEED_FROM_SOURCE: "1" })).toEqual({ stdout: "sources\n", stderr: "" });
  });
});
