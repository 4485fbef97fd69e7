/** A throw-away self-signed certificate for 127.0.0.1 (openssl), for the emulator over HTTPS. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface SelfSignedCertificate {
  certFile: string;
  keyFile: string;
  /** Deletes the files. */
  remove(): void;
}

export function selfSignedCertificate(prefix: string): SelfSignedCertificate {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "1",
    ].concat(["-subj", "/CN=127.0.0.1"]),
    { stdio: "ignore" },
  );
  return { certFile, keyFile, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
