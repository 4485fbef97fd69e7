/**
 * The emulator's certificate, made with node:crypto alone (packages/emulator/src/tls): what X.509 parsers read in it, a real
 * TLS handshake that trusts it as a root (as NODE_EXTRA_CA_CERTS does), and its reuse from the data folder.
 */
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import { afterAll, describe, expect, it } from "vitest";
import { ensureCertificate, generateCertificate } from "../../packages/emulator/src/tls/certificate.js";
import { CERTIFICATE } from "../../packages/emulator/src/tls/settings.js";

const DAY_MS = 86_400_000;
const dirs: string[] = [];
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), "emu-cert-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A TLS handshake to `server` naming `servername`/`host`: "ok" or the verification error's code. */
function handshake(server: Server, host: string, ca?: string): Promise<string> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve) => {
    const socket = connect({ host, port, ca, servername: host.includes(":") ? undefined : host }, () => {
      socket.end();
      resolve("ok");
    });
    socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

describe("generateCertificate", () => {
  const now = new Date("2026-06-01T12:00:00Z");
  const { certPem, keyPem } = generateCertificate(["db.dev.internal", "10.1.2.3"], now);
  const cert = new X509Certificate(certPem);

  it("is a self-signed v3 CA certificate for localhost, 127.0.0.1, ::1 and the names asked for", () => {
    expect(cert.ca).toBe(true);
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.checkHost("localhost")).toBe("localhost");
    expect(cert.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(cert.checkIP("::1")).toBe("::1");
    expect(cert.checkHost("db.dev.internal")).toBe("db.dev.internal");
    expect(cert.checkIP("10.1.2.3")).toBe("10.1.2.3");
    expect(cert.checkHost("evil.example")).toBeUndefined();
    expect(cert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"]); // extKeyUsage serverAuth
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
  });

  it("is valid from a little before now for lifetimeDays", () => {
    expect(Date.parse(cert.validFrom)).toBe(now.getTime() - CERTIFICATE.backdateMinutes * 60_000);
    expect(Date.parse(cert.validTo)).toBe(now.getTime() + CERTIFICATE.lifetimeDays * DAY_MS);
    expect(CERTIFICATE.lifetimeDays).toBeLessThanOrEqual(825); // Apple's limit for TLS server certificates
  });

  it("a TLS client trusting it as its root connects by name and by address; one that does not, fails", async () => {
    const fresh = generateCertificate();
    const server = createServer({ cert: fresh.certPem, key: fresh.keyPem }, (_req, res) => res.end());
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      expect(await handshake(server, "127.0.0.1", fresh.certPem)).toBe("ok");
      expect(await handshake(server, "localhost", fresh.certPem)).toBe("ok");
      expect(await handshake(server, "127.0.0.1")).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
      // Another certificate of the same shape is no root for this one.
      expect(await handshake(server, "127.0.0.1", certPem)).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
    } finally {
      server.close();
    }
    expect(keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });
});

describe("ensureCertificate (the data folder's certificate)", () => {
  it("is made once, its key readable by its owner only, and reused by later starts", () => {
    const dir = scratch();
    const first = ensureCertificate(dir);
    expect(first.created).toBe("generated on first use");
    expect(first.certFile).toBe(join(dir, "emulator-cert.pem"));
    if (process.platform !== "win32") expect(statSync(first.keyFile).mode & 0o777).toBe(0o600);
    const again = ensureCertificate(dir);
    expect(again.created).toBeUndefined();
    expect(again.certPem).toBe(first.certPem);
    expect(readFileSync(again.certFile, "utf8")).toBe(first.certPem);
  });

  it("is replaced, saying why, when it expires within renewBeforeDays, lacks a name, or its key is another's", () => {
    const dir = scratch();
    const first = ensureCertificate(dir);
    const later = new Date(
      Date.now() + (CERTIFICATE.lifetimeDays - CERTIFICATE.renewBeforeDays + 1) * DAY_MS,
    );
    const renewed = ensureCertificate(dir, undefined, later);
    expect(renewed.created).toMatch(/^the one there was replaced: it expires on \d{4}-\d{2}-\d{2}$/);
    expect(renewed.certPem).not.toBe(first.certPem);

    const named = ensureCertificate(dir, ["localhost", "cosmos"]);
    expect(named.created).toBe("the one there was replaced: it does not cover cosmos");
    expect(new X509Certificate(named.certPem).checkHost("cosmos")).toBe("cosmos");

    writeFileSync(named.keyFile, generateCertificate().keyPem);
    const rekeyed = ensureCertificate(dir, ["cosmos"]);
    expect(rekeyed.created).toBe("the one there was replaced: its key does not match it");
    expect(ensureCertificate(dir, ["cosmos"]).created).toBeUndefined();
  });
});
