/**
 * How `cosmos-feed start` makes the emulator's certificate trusted (packages/devhost/src/emulatorTls.ts,
 * cosmos/emulatorAgent.ts): the worker's NODE_EXTRA_CA_CERTS (a user's own kept in one bundle), and the dev host's
 * own clients' agent — for the emulator's port on loopback names over https only.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { emulatorAgent, trustEmulatorCertificate } from "../../packages/devhost/src/cosmos/emulatorAgent.js";
import { prepareEmulatorTls } from "../../packages/devhost/src/emulatorTls.js";
import { generateCertificate } from "../../packages/emulator/src/tls/certificate.js";

const dirs: string[] = [];
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), "emu-trust-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("the worker's NODE_EXTRA_CA_CERTS", () => {
  it("names the data folder's certificate; off leaves the environment alone", () => {
    const dataDir = scratch();
    const env: NodeJS.ProcessEnv = {};
    const tls = prepareEmulatorTls("auto", dataDir, env);
    expect(tls?.options).toEqual({
      certFile: join(dataDir, "tls", "emulator-cert.pem"),
      keyFile: join(dataDir, "tls", "emulator-key.pem"),
      http: true,
    });
    expect(env.NODE_EXTRA_CA_CERTS).toBe(join(dataDir, "tls", "emulator-cert.pem"));
    expect(tls?.hint).toContain("(generated on first use)");
    expect(prepareEmulatorTls("auto", dataDir, {})?.hint).not.toContain("generated");
    const untouched: NodeJS.ProcessEnv = {};
    expect(prepareEmulatorTls("off", scratch(), untouched)).toBeUndefined();
    expect(untouched).toEqual({});
  });

  it("keeps a NODE_EXTRA_CA_CERTS of the user's: both certificates in one bundle", () => {
    const dataDir = scratch();
    const own = join(scratch(), "corporate.pem");
    const corporate = generateCertificate(["proxy.corp"]).certPem;
    writeFileSync(own, corporate);
    const env: NodeJS.ProcessEnv = { NODE_EXTRA_CA_CERTS: own };
    prepareEmulatorTls("auto", dataDir, env);
    expect(env.NODE_EXTRA_CA_CERTS).toBe(join(dataDir, "tls", "worker-ca.pem"));
    const bundle = readFileSync(env.NODE_EXTRA_CA_CERTS as string, "utf8");
    expect(bundle).toContain(corporate.trim());
    expect(bundle).toContain(readFileSync(join(dataDir, "tls", "emulator-cert.pem"), "utf8").trim());
  });

  it("a given certificate file that is missing is a clear error naming the flag", () => {
    const dir = scratch();
    expect(() =>
      prepareEmulatorTls({ certFile: join(dir, "nope.pem"), keyFile: join(dir, "nope.key") }, dir, {}),
    ).toThrow(`--emulator-tls-cert: ${join(dir, "nope.pem")} does not exist.`);
  });
});

describe("the dev host's own clients of the emulator", () => {
  it("get the trusting agent for the emulator's port on loopback names over https, and nothing else does", () => {
    const { certPem } = generateCertificate();
    const untrust = trustEmulatorCertificate(18_443, certPem);
    const agent = emulatorAgent("https://127.0.0.1:18443/");
    expect(agent).toBeDefined();
    expect(emulatorAgent("https://localhost:18443/")).toBe(agent);
    expect(emulatorAgent("https://[::1]:18443/")).toBe(agent);
    expect(emulatorAgent("http://127.0.0.1:18443/")).toBeUndefined();
    expect(emulatorAgent("https://127.0.0.1:18444/")).toBeUndefined();
    expect(emulatorAgent("https://acct.documents.azure.com:18443/")).toBeUndefined();
    expect(emulatorAgent("not a url")).toBeUndefined();
    untrust();
    expect(emulatorAgent("https://127.0.0.1:18443/")).toBeUndefined();
  });
});
