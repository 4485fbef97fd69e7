/**
 * The emulator package's own command, `cosmos-emulator` (packages/emulator/bin/cosmos-emulator.js), as a user runs
 * it: a real node process running the compiled dist/ (vitest's globalSetup built it from the working tree; no
 * "source" condition, no tsx), on a free port, answering the published @azure/cosmos SDK; SIGINT stops it with exit
 * 0. Bad flags and a refused data folder are one line and exit 1, with the same messages as `cosmos-feed emulator`
 * (test/chaos/cli.test.ts, test/tools/emulator-cli-tls.test.ts), under this command's name.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type CliRun, killAll, removeScratch, repoRoot, runCli, scratchDir } from "../support/start-cli.js";

const runs: CliRun[] = [];
afterEach(() => killAll(runs));
afterAll(removeScratch);

const bin = join(repoRoot, "packages", "emulator", "bin", "cosmos-emulator.js");
const WELL_KNOWN_KEY =
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

/** `node packages/emulator/bin/cosmos-emulator.js args`, compiled: the tests' source condition taken out. */
function emulatorBin(args: string[]): CliRun {
  const run = runCli([bin, ...args], {
    command: process.execPath,
    env: {
      COSMOS_FEED_FROM_SOURCE: "",
      NODE_OPTIONS: (process.env.NODE_OPTIONS ?? "").replace(/--conditions=source/g, "").trim(),
    },
  });
  runs.push(run);
  return run;
}

/** The output's non-empty lines. */
const lines = (text: string) => text.split("\n").filter((l) => l.trim().length > 0);

describe("cosmos-emulator (the emulator package's bin)", () => {
  it("serves the SDK on a free port from the compiled dist/ and stops on SIGINT with exit 0", async () => {
    const run = emulatorBin(["--port", "0"]);
    const [, endpoint] = await run.waitFor(
      /Cosmos DB emulator listening on (http:\/\/127\.0\.0\.1:\d+\/) \(in memory\)/,
    );
    await run.waitFor(/new CosmosClient/);
    // The compiled command ran: no "running from the TypeScript sources" line.
    expect(run.output()).not.toContain("TypeScript sources");
    expect(run.output()).toContain(
      `Connection string: AccountEndpoint=${endpoint};AccountKey=${WELL_KNOWN_KEY};`,
    );
    const client = new CosmosClient({ endpoint, key: WELL_KNOWN_KEY });
    try {
      const { database } = await client.databases.createIfNotExists({ id: "bin" });
      const { container } = await database.containers.createIfNotExists({
        id: "items",
        partitionKey: { paths: ["/pk"] },
      });
      await container.items.create({ id: "a", pk: "p", n: 1 });
      const { resource } = await container.item("a", "p").read<{ n: number }>();
      expect(resource?.n).toBe(1);
    } finally {
      client.dispose();
    }
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain("Received SIGINT; stopping the emulator.");
  });

  it("prints the emulator package's version with --version", async () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "packages", "emulator", "package.json"), "utf8")) as {
      version: string;
    };
    const run = emulatorBin(["--version"]);
    expect(await run.exited).toBe(0);
    expect(run.output().trim()).toBe(pkg.version);
  });

  it("lists the flags of `cosmos-feed emulator` with --help", async () => {
    const run = emulatorBin(["--help"]);
    expect(await run.exited).toBe(0);
    const help = run.output();
    expect(help).toContain("Usage: cosmos-emulator [options]");
    for (const flag of [
      "-p, --port <port>",
      "--host <host>",
      "--data-dir <dir>",
      "--durability <mode>",
      "--key <base64>",
      "--ranges <n>",
      "--no-throttle",
      "--tls-cert <file>",
      "--tls-key <file>",
      "--tls <mode>",
      "--allowed-hosts <names>",
      "--log",
      "-V, --version",
    ])
      expect(help).toContain(flag);
  });

  it("refuses a bad flag, a half TLS pair and a data folder that is a file: one line each, exit 1", async () => {
    const badPort = emulatorBin(["--port", "http"]);
    expect(await badPort.exited).toBe(1);
    expect(lines(badPort.output())).toEqual([
      "error: option '-p, --port <port>' argument 'http' is invalid. --port must be an integer from 0 to 65535.",
    ]);

    const halfTls = emulatorBin(["--port", "0", "--tls-cert", "cert.pem"]);
    expect(await halfTls.exited).toBe(1);
    expect(lines(halfTls.output())).toEqual(["--tls-cert and --tls-key go together."]);

    const file = join(scratchDir("emulator-bin-"), "a-file");
    writeFileSync(file, "not a directory");
    const notAFolder = emulatorBin(["--port", "0", "--data-dir", file]);
    expect(await notAFolder.exited).toBe(1);
    const out = lines(notAFolder.output());
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^cosmos-emulator: /);
    expect(out[0]).toContain(`Cannot keep data in '${file}'`);
  });
});
