/**
 * `cosmos-feed start` serves the embedded emulator over HTTPS (a real child process, a real app): the app's own
 * `new CosmosClient` — from the connection string, and with an agent of its own, which the SDK refuses over
 * http:// ("Cannot connect to http://… while allowInsecureConnection is false") — works unmodified, because the
 * worker trusts the certificate made in the data folder; `--emulator-tls off` is HTTP only.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type CliRun, killAll, removeScratch, runCli, scratchDir } from "../support/start-cli.js";

const runs: CliRun[] = [];
afterEach(() => killAll(runs));
afterAll(removeScratch);

const READY = /Host lock lease acquired by instance ID '[0-9A-F]{32}'\./;

/** An app whose HTTP function reads the account with clients it builds itself from its COSMOS setting. */
function ownClientApp(): string {
  const dir = scratchDir("own-client-");
  const files: Record<string, string> = {
    "package.json": JSON.stringify({ name: "own-client", type: "module", main: "index.js" }),
    "host.json": JSON.stringify({ version: "2.0" }),
    "local.settings.json": JSON.stringify({
      Values: {
        FUNCTIONS_WORKER_RUNTIME: "node",
        COSMOS: "AccountEndpoint=https://unused.invalid/;AccountKey=a2V5;",
      },
    }),
    "index.js": `
import { Agent } from "node:https";
import { app } from "@azure/functions";
import { CosmosClient } from "@azure/cosmos";
app.http("own", {
  methods: ["GET"],
  authLevel: "anonymous",
  handler: async () => {
    const connection = process.env.COSMOS;
    const endpoint = /AccountEndpoint=([^;]+)/.exec(connection)[1];
    const key = /AccountKey=([^;]+)/.exec(connection)[1];
    const out = { endpoint };
    const clients = {
      connectionString: new CosmosClient(connection),
      ownAgent: new CosmosClient({ endpoint, key, agent: new Agent({ keepAlive: true }) }),
    };
    for (const [name, client] of Object.entries(clients)) {
      try {
        await client.databases.createIfNotExists({ id: "own-" + name });
        out[name] = (await client.databases.readAll().fetchAll()).resources.map((d) => d.id).sort();
      } catch (e) {
        out[name] = "failed: " + e.message.split("\\n")[0];
      } finally {
        client.dispose();
      }
    }
    return { jsonBody: out };
  },
});
`,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function start(args: string[]): CliRun {
  const run = runCli([
    "start",
    ...args,
    "--port",
    "0",
    "--emulator-port",
    "0",
    "--cosmos",
    "emulator",
    "--no-build",
  ]);
  runs.push(run);
  return run;
}

describe("cosmos-feed start: the embedded emulator over HTTPS", () => {
  it("by default serves HTTPS with a certificate made into the data folder; the app's own clients trust it", async () => {
    const app = ownClientApp();
    const dataDir = scratchDir("tls-data-");
    const run = start([app, "--data-dir", dataDir]);
    const certFile = join(dataDir, "tls", "emulator-cert.pem");
    const [, endpoint] = await run.waitFor(/Cosmos DB emulator listening on (\S+) /);
    expect(endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
    await run.waitFor(
      new RegExp(`with the certificate ${certFile} \\(generated on first use\\); the app's worker`),
    );
    await run.waitFor(new RegExp(`NODE_EXTRA_CA_CERTS=${certFile} for Node\\.js`));
    const [, base] = await run.waitFor(/own: \[GET\] (http:\/\/127\.0\.0\.1:\d+)\/api\/own/);
    await run.waitFor(READY);
    const answer = (await (await fetch(`${base}/api/own`)).json()) as Record<string, unknown>;
    expect(answer.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
    expect(answer.connectionString).toEqual(["own-connectionString"]);
    expect(answer.ownAgent).toEqual(["own-connectionString", "own-ownAgent"]);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it("--emulator-tls off serves HTTP only (and makes no certificate)", async () => {
    const app = ownClientApp();
    const dataDir = scratchDir("http-data-");
    const run = start([app, "--data-dir", dataDir, "--emulator-tls", "off"]);
    await run.waitFor(/Cosmos DB emulator listening on http:\/\/127\.0\.0\.1:\d+\//);
    const [, base] = await run.waitFor(/own: \[GET\] (http:\/\/127\.0\.0\.1:\d+)\/api\/own/);
    await run.waitFor(READY);
    const answer = (await (await fetch(`${base}/api/own`)).json()) as Record<string, unknown>;
    expect(answer.connectionString).toEqual(["own-connectionString"]);
    expect(answer.ownAgent).toMatch(
      /^failed: Cannot connect to http:\/\/127\.0\.0\.1:\d+ while allowInsecureConnection is false/,
    );
    expect(run.output()).not.toContain("serves HTTPS");
    expect(existsSync(join(dataDir, "tls"))).toBe(false);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it("a bad --emulator-tls is one line naming the choices", async () => {
    const run = runCli(["start", ownClientApp(), "--emulator-tls", "on"]);
    runs.push(run);
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain("'auto' (HTTPS, and HTTP on the same port) or 'off' (HTTP only).");
  });
});
