import { readFileSync, writeFileSync } from "node:fs";
import { Agent } from "node:https";
import { join } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { startEmulator, WELL_KNOWN_EMULATOR_KEY } from "../../packages/emulator/src/index.js";
import { StopSignalBurst } from "../../packages/emulator/src/lifecycle/signals.js";
import {
  type CliRun,
  copyFixture,
  killAll,
  removeScratch,
  repoRoot,
  runCli,
  scratchDir,
} from "../support/start-cli.js";

interface PackageJson {
  scripts: Record<string, string>;
}

const runs: CliRun[] = [];
afterEach(() => killAll(runs));
afterAll(removeScratch);

const APP = join(repoRoot, "test", "fixtures", "app-cjs");
const READY = /Host lock lease acquired by instance ID '[0-9A-F]{32}'\./;

function start(args: string[], options: Parameters<typeof runCli>[1] = {}): CliRun {
  const run = runCli(args, { detached: true, ...options });
  runs.push(run);
  return run;
}

/** An HTTPS agent trusting the certificate `start` keeps in `dataDir` (and nothing else). */
const trusting = (dataDir: string) =>
  new Agent({ ca: readFileSync(join(dataDir, "tls", "emulator-cert.pem"), "utf8") });

/** `id Owner` of every lease of the fixture's trigger (prefix `fixture-`). */
async function leaseOwners(client: CosmosClient): Promise<{ id: string; owner: string | null }[]> {
  const { resources } = await client
    .database("fixture")
    .container("leases")
    .items.query<{ id: string; owner?: string | null }>(
      "SELECT c.id, c.Owner AS owner FROM c WHERE IS_DEFINED(c.LeaseToken) AND STARTSWITH(c.id, 'fixture-')",
    )
    .fetchAll();
  return resources.map((r) => ({ id: r.id, owner: r.owner ?? null }));
}

describe("stop signals", () => {
  it("a burst of signals is one request; a signal after the burst window forces", () => {
    let now = 0;
    const burst = new StopSignalBurst(1_000, () => now);
    expect(burst.receive()).toBe("stop");
    now = 3; // npm's forwarded SIGINT, milliseconds after the terminal's
    expect(burst.receive()).toBe("same-request");
    now = 1_000;
    expect(burst.receive()).toBe("same-request");
    now = 1_001;
    expect(burst.receive()).toBe("force");
  });
});

describe("Ctrl-C on `cosmos-feed start` (real process groups, real signals)", () => {
  it("two SIGINTs to the process group are one graceful stop: the request in flight is answered, the trigger's leases released, exit 0; a restart resumes the trigger", async () => {
    const dataDir = scratchDir("ctrl-c-data-");
    const args = ["start", APP, "--port", "0", "--emulator-port", "0", "--data-dir", dataDir];
    const first = start(args);
    const [, endpoint] = await first.waitFor(/Cosmos DB emulator listening on (\S+) /);
    const [, base] = await first.waitFor(/slow: \[GET\] (http:\/\/127\.0\.0\.1:\d+)\/v1\/slow/);
    await first.waitFor(READY);
    // `start` serves the emulator over HTTPS with the certificate it made in the data folder.
    const client = new CosmosClient({ endpoint, key: WELL_KNOWN_EMULATOR_KEY, agent: trusting(dataDir) });
    try {
      await client.database("fixture").container("things").items.create({ id: "before-stop" });
      await first.waitFor(/saw 1 documents: before-stop/);
      // The trigger holds its leases now.
      const held = await leaseOwners(client);
      expect(held.length).toBeGreaterThan(0);
      expect(held.every((l) => l.owner !== null)).toBe(true);
    } finally {
      client.dispose();
    }

    const slow = fetch(`${base}/v1/slow?ms=400`).then(async (r) => [r.status, await r.text()]);
    await first.waitFor(/Executing 'Functions\.slow'/);
    // A terminal's Ctrl-C reaches every process of the group, and npm forwards it to its child again: two
    // deliveries (sent one after the other is handled, so that the kernel cannot merge them into one).
    first.signalGroup("SIGINT");
    await first.waitFor(/Received SIGINT; stopping\./);
    first.signalGroup("SIGINT");
    expect(await slow).toEqual([200, "slow done"]);
    expect(await first.exited).toBe(0);
    expect(first.output()).toMatch(
      /Received SIGINT; stopping\.[\s\S]*Received SIGINT again \(the same Ctrl-C\); still stopping gracefully\./,
    );
    expect(first.output()).toMatch(
      /Executed 'Functions\.slow' \(Succeeded[\s\S]*Host stopped\.[\s\S]*Stopped \(\d+ ms\)\./,
    );
    expect(first.output()).not.toContain("exiting at once");
    // The worker process got the same signals and left its end to the host (no crash, no restart).
    expect(first.output()).not.toContain("Language Worker Process exited");

    // The leases as the stop left them, read from the data folder with an emulator of this process: no owner.
    const emulator = await startEmulator({ port: 0, dataDir });
    const reader = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key });
    try {
      const released = await leaseOwners(reader);
      expect(released.length).toBeGreaterThan(0);
      expect(released).toEqual(released.map((l) => ({ id: l.id, owner: null })));
    } finally {
      reader.dispose();
      await emulator.close();
    }

    // A restart on the same data folder takes the released leases and processes a new write.
    const second = start(args);
    const [, endpoint2] = await second.waitFor(/Cosmos DB emulator listening on (\S+) /);
    await second.waitFor(READY);
    const writer = new CosmosClient({
      endpoint: endpoint2,
      key: WELL_KNOWN_EMULATOR_KEY,
      agent: trusting(dataDir),
    });
    try {
      await writer.database("fixture").container("things").items.create({ id: "after-restart" });
      await second.waitFor(/saw 1 documents: after-restart/);
    } finally {
      writer.dispose();
    }
    second.signalGroup("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("a request that outlasts the drain is cut, and the triggers are stopped anyway: leases released, exit 0", async () => {
    const dataDir = scratchDir("drain-data-");
    const run = start(["start", APP, "--port", "0", "--emulator-port", "0", "--data-dir", dataDir]);
    const [, base] = await run.waitFor(/slow: \[GET\] (http:\/\/127\.0\.0\.1:\d+)\/v1\/slow/);
    await run.waitFor(READY);
    // Far longer than the drain (LIFECYCLE.stopDrainMs): the stop does not wait for it.
    const slow = fetch(`${base}/v1/slow?ms=60000`).then(
      (r) => r.status,
      () => "cut",
    );
    await run.waitFor(/Executing 'Functions\.slow'/);
    run.signalGroup("SIGINT");
    expect(await run.exited).toBe(0);
    expect(await slow).toBe("cut");
    expect(run.output()).toMatch(
      /In-flight requests or invocations still run after \d+ ms; stopping the triggers now \(their leases released\) and cutting those\.[\s\S]*Stopped \(\d+ ms\)\./,
    );
    const emulator = await startEmulator({ port: 0, dataDir });
    const reader = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key });
    try {
      const released = await leaseOwners(reader);
      expect(released.length).toBeGreaterThan(0);
      expect(released).toEqual(released.map((l) => ({ id: l.id, owner: null })));
    } finally {
      reader.dispose();
      await emulator.close();
    }
  });

  it("Ctrl-C under `npm start` (SIGINT to the group, and npm's forwarded copy) stops gracefully (the CLI exits 0)", async () => {
    const app = copyFixture("app-cjs");
    const bin = join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js");
    // This repository's own start script, run from the app's folder.
    const script = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as PackageJson).scripts
      .start;
    expect(script).toBe("cosmos-feed start .");
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({
        name: "ctrl-c-app",
        private: true,
        main: "lib/*.js",
        scripts: {
          start: `${script.replace(/^cosmos-feed/, `node ${JSON.stringify(bin)}`)} --port 0 --emulator-port 0`,
        },
      }),
    );
    const npm = start(["start", "--silent"], { command: "npm", cwd: app });
    const [, base] = await npm.waitFor(/slow: \[GET\] (http:\/\/127\.0\.0\.1:\d+)\/v1\/slow/);
    await npm.waitFor(READY);
    const slow = fetch(`${base}/v1/slow?ms=400`).then(async (r) => [r.status, await r.text()]);
    await npm.waitFor(/Executing 'Functions\.slow'/);
    npm.signalGroup("SIGINT");
    await npm.waitFor(/Received SIGINT; stopping\./);
    // The copy npm forwards, when it comes after the terminal's was handled (else the kernel merges the two).
    npm.child.kill("SIGINT");
    expect(await slow).toEqual([200, "slow done"]);
    // The CLI exits 0; npm's shell (`sh -c`, which got the terminal's SIGINT too and held it while the CLI ran)
    // then ends itself with it, as shells do, and npm passes that on: npm ends by SIGINT, not with an exit code.
    expect([0, null]).toContain(await npm.exited);
    expect(npm.output()).toMatch(/Received SIGINT; stopping\.[\s\S]*Stopped \(\d+ ms\)\./);
    expect(npm.output()).not.toContain("exiting at once");
  });

  it("SIGTERM sent to npm alone (`npm start`) stops the CLI gracefully, though npm's shell dies of it", async () => {
    const app = copyFixture("app-cjs");
    const bin = join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js");
    const script = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as PackageJson).scripts
      .start;
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({
        name: "sigterm-app",
        private: true,
        main: "lib/*.js",
        scripts: {
          start: `${script.replace(/^cosmos-feed/, `node ${JSON.stringify(bin)}`)} --port 0 --emulator-port 0`,
        },
      }),
    );
    const npm = start(["start", "--silent"], { command: "npm", cwd: app });
    await npm.waitFor(READY);
    npm.child.kill("SIGTERM"); // to npm only: it forwards it to `sh -c`, which dies; the CLI is not signalled
    await until("the CLI to stop", async () =>
      /Stopped \(\d+ ms\)\./.test(npm.output()) ? true : undefined,
    );
    expect(npm.output()).toMatch(
      /Received SIGTERM; stopping\.[\s\S]*Host stopped\.[\s\S]*Stopped \(\d+ ms\)\./,
    );
    expect(npm.output()).not.toContain("exiting at once");
  });
});
