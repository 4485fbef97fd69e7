import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent } from "node:https";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { WELL_KNOWN_EMULATOR_KEY } from "../../packages/emulator/src/index.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const scratch = join(root, ".data", "test-apps");
const created: string[] = [];
afterAll(() => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});
const children: ChildProcess[] = [];

interface Cli {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Resolves with the first match of `re` in the combined output. */
  waitFor(re: RegExp): Promise<RegExpMatchArray>;
}

function cli(args: string[]): Cli {
  const child = spawn(process.execPath, ["packages/devhost/bin/cosmos-feed.js", "start", ...args], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, FIXTURE_COSMOS: "" },
  });
  children.push(child);
  let text = "";
  const waiters: (() => void)[] = [];
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const w of [...waiters]) w();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    output: () => text,
    exited,
    waitFor: (re) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = text.match(re);
          if (m) {
            waiters.splice(waiters.indexOf(check), 1);
            resolve(m);
          }
        };
        waiters.push(check);
        check();
        void exited.then(() => setTimeout(() => reject(new Error(`exited before ${re}:\n${text}`)), 50));
      }),
  };
}

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});

describe("cosmos-feed start (a real child process)", () => {
  it("serves an app, and on SIGTERM finishes the in-flight request before exiting 0", async () => {
    const run = cli(["test/fixtures/app-esm", "--port", "0"]);
    const [, base] = await run.waitFor(/hello: \[GET,POST\] (http:\/\/127\.0\.0\.1:\d+)\/api\/hello/);
    expect(await (await fetch(`${base}/api/hello?name=cli`)).text()).toBe("Hello, cli");
    const slow = fetch(`${base}/api/slow?ms=600`).then(async (r) => [r.status, await r.text()]);
    await run.waitFor(/Executing 'Functions.slow'/);
    run.child.kill("SIGTERM");
    expect(await slow).toEqual([200, "slow done"]);
    expect(await run.exited).toBe(0);
    // The request was finished, then the CLI's last line. ("Host stopped." comes only when the host's whole close
    // — worker's appTerminate hooks included — fits in LIFECYCLE.stopDrainMs, which a loaded machine may not give;
    // past it the triggers are stopped anyway, and the in-flight request still finished, as asserted here.)
    expect(run.output()).toMatch(
      /Received SIGTERM; stopping\.[\s\S]*Executed 'Functions\.slow' \(Succeeded[\s\S]*Stopped \(\d+ ms\)\./,
    );
  });

  it("points unresolved Cosmos DB connections at the embedded emulator and runs the Cosmos DB trigger", async () => {
    mkdirSync(scratch, { recursive: true });
    const dataDir = mkdtempSync(join(scratch, "emulator-"));
    created.push(dataDir);
    const run = cli(["test/fixtures/app-cjs", "--port", "0", "--emulator-port", "0", "--data-dir", dataDir]);
    const [, endpoint] = await run.waitFor(/Cosmos DB emulator listening on (\S+) /);
    await run.waitFor(/Host started/);
    expect(run.output()).toContain(
      `(data in ${dataDir}); no Cosmos DB connection resolves (FIXTURE_COSMOS).`,
    );
    expect(run.output()).toContain("Cosmos DB connection settings pointed at the emulator: FIXTURE_COSMOS.");
    expect(run.output()).toContain(
      "Created container 'fixture/leases' (lease container of function 'onThing'",
    );
    // A write through the unmodified SDK reaches the app's trigger in the child process.
    // Over HTTPS (the CLI's default), trusting the certificate `start` made in the data folder.
    expect(endpoint).toMatch(/^https:/);
    const ca = readFileSync(join(dataDir, "tls", "emulator-cert.pem"), "utf8");
    const client = new CosmosClient({ endpoint, key: WELL_KNOWN_EMULATOR_KEY, agent: new Agent({ ca }) });
    try {
      await client.database("fixture").container("things").items.create({ id: "from-test" });
      await run.waitFor(/saw 1 documents/);
    } finally {
      client.dispose();
    }
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(0);
  });

  it("runs the app's build when main matches nothing, and says what to run with --no-build", async () => {
    mkdirSync(scratch, { recursive: true });
    const dir = mkdtempSync(join(scratch, "unbuilt-"));
    created.push(dir);
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ main: "out/index.js", scripts: { build: "node build.cjs" } }),
    );
    writeFileSync(join(dir, "host.json"), JSON.stringify({ version: "2.0" }));
    writeFileSync(
      join(dir, "build.cjs"),
      `const fs = require("node:fs");
fs.mkdirSync("out", { recursive: true });
fs.writeFileSync("out/index.js", 'require("@azure/functions").app.http("built", { handler: () => ({ body: "built" }) });');`,
    );
    const refused = cli([dir, "--port", "0", "--no-build"]);
    expect(await refused.exited).toBe(1);
    expect(refused.output().trim()).toBe(
      `cosmos-feed start: No file matches package.json "main" (out/index.js) in ${dir}: run \`npm run build\` in ${dir}.`,
    );

    const run = cli([dir, "--port", "0"]);
    const [, base] = await run.waitFor(/built: \[GET,POST\] (http:\/\/127\.0\.0\.1:\d+)\/api\/built/);
    expect(run.output()).toContain("running `npm run build`");
    expect(await (await fetch(`${base}/api/built`)).text()).toBe("built");
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it("exits 1 with one clear line when the port is taken", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = cli(["test/fixtures/app-esm", "--port", String(port)]);
      expect(await run.exited).toBe(1);
      expect(run.output()).toContain(
        `cosmos-feed start: Port ${port} is unavailable (in use by another process). Choose another with --port.`,
      );
    } finally {
      blocker.close();
    }
  });
});
