import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runHarness } from "../../bench/lib/dotnet.js";
import { type RunningEmulator, startEmulator } from "../../packages/emulator/src/index.js";
import { ensureCertificate } from "../../packages/emulator/src/tls/certificate.js";

/*
 * The .NET SDK (Microsoft.Azure.Cosmos 3.64.0) trusting the certificate `cosmos-feed start` makes (node:crypto, no
 * openssl), the two ways docs/emulator.md gives — with its validation on, unlike the other interop tests: the OS
 * store, which on Linux is OpenSSL's and SSL_CERT_FILE names, and a validation callback trusting that one root.
 * Without either, the SDK refuses the emulator: the trust is what lets it in.
 */

const dir = mkdtempSync(join(tmpdir(), "dotnet-tls-"));
let emulator: RunningEmulator;
let certFile: string;
beforeAll(async () => {
  const stored = ensureCertificate(dir);
  certFile = stored.certFile;
  emulator = await startEmulator({ port: 0, tls: { certFile, keyFile: stored.keyFile, http: true } });
});
afterAll(async () => {
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
});

const account = (endpoint: string, extra: object, env?: NodeJS.ProcessEnv) =>
  runHarness("account", { endpoint, key: emulator.key, ...extra }, env);

describe(".NET SDK over HTTPS with the generated certificate trusted", () => {
  it("SSL_CERT_FILE naming the certificate: the default validation accepts it, by address and by name", async () => {
    for (const endpoint of [emulator.endpoint, `https://localhost:${emulator.port}/`]) {
      const r = await account(endpoint, { trust: "system" }, { SSL_CERT_FILE: certFile });
      expect(r.code, r.stderr + JSON.stringify(r.lines)).toBe(0);
      expect(r.lines.find((l) => l.ev === "account")).toMatchObject({ consistency: "Session" });
    }
  });

  it("a validation callback trusting only that certificate accepts it", async () => {
    const r = await account(emulator.endpoint, { trust: "file", caFile: certFile });
    expect(r.code, r.stderr + JSON.stringify(r.lines)).toBe(0);
  });

  it("without the trust, the SDK refuses the emulator's certificate", async () => {
    const r = await account(emulator.endpoint, { trust: "system" }, { SSL_CERT_FILE: join(dir, "none.pem") });
    expect(r.code).toBe(1);
    expect(String(r.lines.find((l) => l.ev === "fatal")?.error)).toMatch(/SSL|certificate/i);
  });
});
