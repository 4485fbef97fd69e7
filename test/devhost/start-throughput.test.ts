/**
 * `cosmos-feed start` follows the deployment's throughput mode (COSMOS_THROUGHPUT_MODE, as azd passes it to
 * infra/bicep): from the environment, else the azd environment file, else serverless; a real child process each.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { WELL_KNOWN_EMULATOR_KEY } from "../../packages/emulator/src/index.js";
import {
  type CliRun,
  copyFixture,
  killAll,
  removeScratch,
  runCli,
  scratchDir,
} from "../support/start-cli.js";

const runs: CliRun[] = [];
afterEach(() => killAll(runs));
afterAll(removeScratch);

/** The fixture app with a container definition file (one container of 500 RU/s) and, optionally, an azd environment. */
function appWith(azd?: { defaultEnvironment: string; env: Record<string, string> }): string {
  const dir = copyFixture("app-cjs");
  mkdirSync(join(dir, "src", "shared"), { recursive: true });
  writeFileSync(
    join(dir, "src", "shared", "containers.json"),
    JSON.stringify({
      database: { name: "tp" },
      containers: [{ role: "items", name: "items", partitionKey: "/id", throughput: 500 }],
    }),
  );
  if (azd) {
    mkdirSync(join(dir, ".azure", azd.defaultEnvironment), { recursive: true });
    writeFileSync(
      join(dir, ".azure", "config.json"),
      JSON.stringify({ version: 1, defaultEnvironment: azd.defaultEnvironment }),
    );
    const lines = Object.entries(azd.env).map(([k, v]) => `${k}="${v}"`);
    writeFileSync(join(dir, ".azure", azd.defaultEnvironment, ".env"), `# azd\n${lines.join("\n")}\n`);
  }
  return dir;
}

function start(appDir: string, env: Record<string, string | undefined> = {}): CliRun {
  const run = runCli(
    [
      "start",
      appDir,
      "--port",
      "0",
      "--emulator-port",
      "0",
      "--emulator-tls",
      "off",
      "--no-build",
      "--data-dir",
      scratchDir("tp-data-"),
    ],
    { env: { COSMOS_THROUGHPUT_MODE: "", AZURE_ENV_NAME: "", ...env } },
  );
  runs.push(run);
  return run;
}

/** The offer of tp/items on the run's emulator: its manual RU/s, autoscale max, or the serverless refusal's status. */
async function offerOf(run: CliRun): Promise<{ throughput?: number; max?: number; status?: number }> {
  const [, endpoint] = await run.waitFor(/Cosmos DB emulator listening on (\S+) /);
  await run.waitFor(/Host started/);
  const client = new CosmosClient({ endpoint: endpoint as string, key: WELL_KNOWN_EMULATOR_KEY });
  try {
    const { resource } = await client.database("tp").container("items").readOffer();
    return {
      throughput: resource?.content?.offerThroughput,
      max: resource?.content?.offerAutopilotSettings?.maxThroughput,
    };
  } catch (e) {
    return { status: (e as { code?: number }).code };
  } finally {
    client.dispose();
  }
}

describe("cosmos-feed start follows COSMOS_THROUGHPUT_MODE", () => {
  it("serverless by default: the emulator has no offers, and the start says so and why", async () => {
    const run = start(appWith());
    expect(await offerOf(run)).toEqual({ status: 400 });
    expect(run.output()).toContain(
      "Cosmos DB throughput mode: serverless (containers without throughput, up to 5,000 RU/s per physical partition each); from the default: no COSMOS_THROUGHPUT_MODE in the environment and no azd environment.",
    );
    expect(run.output()).toContain("Created container 'tp/items' (from ");
    expect(run.output()).toMatch(/Created container 'tp\/items' \(from [^)]*; serverless\)\./);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it("manual from the azd environment's .env: containers.json's RU/s", async () => {
    const run = start(appWith({ defaultEnvironment: "dev", env: { COSMOS_THROUGHPUT_MODE: "manual" } }));
    expect(await offerOf(run)).toEqual({ throughput: 500, max: undefined });
    expect(run.output()).toContain(
      `Cosmos DB throughput mode: manual (each container its containers.json RU/s, enforced with 429s); from COSMOS_THROUGHPUT_MODE in ${join(".azure", "dev", ".env")}.`,
    );
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it("the environment wins over the azd file; autoscale gets the deployment's maximum", async () => {
    const app = appWith({
      defaultEnvironment: "dev",
      env: { COSMOS_THROUGHPUT_MODE: "manual", COSMOS_AUTOSCALE_MAX_THROUGHPUT: "4000" },
    });
    const run = start(app, { COSMOS_THROUGHPUT_MODE: "autoscale" });
    expect(await offerOf(run)).toMatchObject({ max: 4000 });
    expect(run.output()).toContain(
      "Cosmos DB throughput mode: autoscale (each container up to 4000 RU/s, enforced at that maximum); from COSMOS_THROUGHPUT_MODE in the environment.",
    );
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it("a bad value: exit 1 with one line naming the allowed values (AZURE_ENV_NAME picks the file)", async () => {
    const app = appWith({ defaultEnvironment: "dev", env: { COSMOS_THROUGHPUT_MODE: "manual" } });
    mkdirSync(join(app, ".azure", "prod"), { recursive: true });
    writeFileSync(join(app, ".azure", "prod", ".env"), 'COSMOS_THROUGHPUT_MODE="provisioned"\n');
    const run = start(app, { AZURE_ENV_NAME: "prod" });
    expect(await run.exited).toBe(1);
    expect(run.output().trim()).toBe(
      `cosmos-feed start: COSMOS_THROUGHPUT_MODE must be 'serverless', 'manual', 'autoscale' (default 'serverless'); got 'provisioned' (COSMOS_THROUGHPUT_MODE in ${join(".azure", "prod", ".env")}).`,
    );
  });
});
