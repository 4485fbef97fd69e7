import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { type CliRun, copyFixture, killAll, removeScratch, runCli } from "../support/start-cli.js";

const runs: CliRun[] = [];
afterEach(() => killAll(runs));
afterAll(removeScratch);

const HELLO = /hello: \[GET\] (http:\/\/127\.0\.0\.1:\d+)\/api\/hello/;
const READY = /Host lock lease acquired by instance ID/;
/** How long a save may take to be served (a bound that only ends a hang; nothing here judges the time). */
const SAVE_SERVED_MS = 300_000;

function start(appDir: string, ...flags: string[]): CliRun {
  const run = runCli(["start", appDir, "--port", "0", ...flags]);
  runs.push(run);
  return run;
}

/** Rewrites the fixture's greeting (src/functions/hello.ts), as an editor's save does. */
function setGreeting(appDir: string, code: string): void {
  const file = join(appDir, "src", "functions", "hello.ts");
  writeFileSync(file, readFileSync(file, "utf8").replace(/const greeting[^;]*;/, code));
}

/** The same save as sed -i (and many editors' atomic save) makes: a temporary file beside it, renamed over it. */
function setGreetingByRename(appDir: string, code: string): void {
  const file = join(appDir, "src", "functions", "hello.ts");
  const temporary = join(appDir, "src", "functions", "sedQ1w2E3");
  writeFileSync(temporary, readFileSync(file, "utf8").replace(/const greeting[^;]*;/, code));
  renameSync(temporary, file);
}

async function greeting(base: string): Promise<string> {
  return (await fetch(`${base}/api/hello`)).text();
}

async function stop(run: CliRun): Promise<void> {
  run.child.kill("SIGTERM");
  expect(await run.exited).toBe(0);
}

describe("cosmos-feed start builds what it serves (a TypeScript app built by tsc)", () => {
  it("rebuilds when a source file is newer than the build output, saying why; --no-build serves the old build with a warning", async () => {
    const app = copyFixture("app-ts");
    const first = start(app);
    const [, base1] = await first.waitFor(HELLO);
    expect(first.output()).toContain(
      'No file matches "main" (dist/src/functions/*.js); running `npm run build`',
    );
    expect(await greeting(base1)).toBe("v1");
    await stop(first);

    setGreeting(app, 'const greeting = "v2";');
    const second = start(app);
    const [, base2] = await second.waitFor(HELLO);
    expect(second.output()).toMatch(
      /src\/functions\/hello\.ts \(changed \S+\) is newer than the build output \(dist\/, written \S+\); running `npm run build`/,
    );
    expect(await greeting(base2)).toBe("v2");
    await stop(second);

    setGreeting(app, 'const greeting = "v3";');
    const kept = start(app, "--no-build");
    const [, base3] = await kept.waitFor(HELLO);
    expect(kept.output()).toMatch(
      /src\/functions\/hello\.ts \(changed \S+\) is newer than the build output \(dist\/, written \S+\); serving the old build \(--no-build\)\./,
    );
    expect(await greeting(base3)).toBe("v2");
    await stop(kept);
  });

  it("--watch rebuilds on save and restarts the app on the same port; a failing build keeps the running one", async () => {
    const app = copyFixture("app-ts");
    const run = start(app, "--watch");
    const [, base] = await run.waitFor(HELLO);
    await run.waitFor(READY);
    expect(run.output()).toContain("Watching src/** for changes (then the build's tsc, kept running).");
    expect(await greeting(base)).toBe("v1");

    setGreeting(app, 'const greeting = "v2";');
    // The first save waits for the kept compiler's first full build: on a busy machine that alone can take minutes.
    await until(
      "the new greeting over HTTP",
      async () => ((await greeting(base).catch(() => "")) === "v2" ? true : undefined),
      SAVE_SERVED_MS,
    );
    const file = join(app, "src", "functions", "hello.ts");
    expect(run.output()).toContain(`File change of type 'Changed' detected for '${file}'`);
    expect(run.output()).toMatch(
      /File change detected\. Starting compilation\.\.\.[\s\S]*Found 0 errors\. Watching for file changes\.[\s\S]*Restarting host\.[\s\S]*Host stopped\.[\s\S]*Host restarted\./,
    );

    // Saved by rename, then in place again: node's recursive watch saw neither the rename's save nor any after it.
    const served = (v: string) =>
      until(
        `${v} over HTTP`,
        async () => ((await greeting(base).catch(() => "")) === v ? true : undefined),
        SAVE_SERVED_MS,
      );
    setGreetingByRename(app, 'const greeting = "v3";');
    await served("v3");
    setGreeting(app, 'const greeting = "v4";');
    await served("v4");
    // At least one restart per save (a busy machine may see sed's temporary file in a batch of its own first, and
    // restart for it too: a new file is a change).
    const restarts = () => run.output().match(/Host restarted\./g)?.length ?? 0;
    expect(restarts()).toBeGreaterThanOrEqual(3);
    const restartsBeforeTypeError = restarts();
    // Built by the compiler kept alive between saves (the build script is tsc alone), not `npm run build`, which
    // ran once, at start (nothing was built yet): npm prints its "> tsc" banner for each run.
    expect(run.output().match(/^> tsc$/gm)).toHaveLength(1);

    // A type error: tsc fails (and, with noEmitOnError, writes nothing); the app that runs stays.
    setGreeting(app, "const greeting: number = 'not a number';");
    await run.waitFor(
      /`npm run build` failed \(exit code \d+\); the host keeps running the previous build\./,
    );
    expect(await greeting(base)).toBe("v4");
    expect(run.output()).toContain("error TS2322: Type 'string' is not assignable to type 'number'.");
    expect(restarts()).toBe(restartsBeforeTypeError);
    await stop(run);
  });
});
