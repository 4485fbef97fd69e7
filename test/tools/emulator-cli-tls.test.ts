/**
 * `cosmos-feed emulator --tls auto` (a real child process): HTTPS with a certificate made into the data folder and
 * printed with how to trust it, HTTP on the same port, and the Host guard with --allowed-hosts (or its variable).
 */
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { Agent } from "node:https";
import { join } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type CliRun, killAll, removeScratch, runCli, scratchDir } from "../support/start-cli.js";

const runs: CliRun[] = [];
afterEach(() => killAll(runs));
afterAll(removeScratch);

function emulator(args: string[], env?: NodeJS.ProcessEnv): CliRun {
  const run = runCli(["emulator", "--port", "0", ...args], { env });
  runs.push(run);
  return run;
}

/** The status of an unsigned GET / naming `host` (401 when it got past the Host guard, 421 when not). */
function statusFor(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on("error", reject)
      .end();
  });
}

describe("cosmos-feed emulator --tls auto, --allowed-hosts", () => {
  it("serves HTTPS with the certificate it made (and says how to trust it), HTTP on the same port", async () => {
    const dataDir = scratchDir("emu-tls-");
    const run = emulator(["--data-dir", dataDir, "--tls", "auto", "--allowed-hosts", "cosmos"]);
    const [, endpoint, port] = await run.waitFor(/listening on (https:\/\/127\.0\.0\.1:(\d+)\/)/);
    const certFile = join(dataDir, "tls", "emulator-cert.pem");
    await run.waitFor(new RegExp(`NODE_EXTRA_CA_CERTS=${certFile} \\(Node\\.js\\)`));
    const secure = new CosmosClient({
      endpoint,
      key: "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==",
      agent: new Agent({ ca: readFileSync(certFile, "utf8") }),
    });
    try {
      await secure.databases.create({ id: "over-tls" });
      expect((await secure.databases.readAll().fetchAll()).resources.map((d) => d.id)).toEqual(["over-tls"]);
    } finally {
      secure.dispose();
    }
    expect(await statusFor(Number(port), `cosmos:${port}`)).toBe(401);
    expect(await statusFor(Number(port), `evil.example:${port}`)).toBe(421);
  });

  it("reads the allow-list from COSMOS_EMULATOR_ALLOWED_HOSTS; a malformed entry is one line and exit 1", async () => {
    const run = emulator([], { COSMOS_EMULATOR_ALLOWED_HOSTS: "*.dev.internal" });
    const [, port] = await run.waitFor(/listening on http:\/\/127\.0\.0\.1:(\d+)\//);
    expect(await statusFor(Number(port), `db.dev.internal:${port}`)).toBe(401);
    expect(await statusFor(Number(port), `evil.example:${port}`)).toBe(421);

    const bad = emulator(["--allowed-hosts", "cosmos:8081"]);
    expect(await bad.exited).toBe(1);
    expect(bad.output().trim()).toBe(
      "cosmos-feed emulator: --allowed-hosts: 'cosmos:8081' is not a host name (a name, '*.domain', an IP address or '[IPv6]', without a port; '*' for any).",
    );
  });
});
