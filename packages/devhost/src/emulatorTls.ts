import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { EmulatorOptions, RunningEmulator } from "@cosmos-feed/emulator";
import { ensureCertificate } from "@cosmos-feed/emulator";
import { trustEmulatorCertificate } from "./cosmos/emulatorAgent.js";
import { DevHostError } from "./errors.js";

/**
 * HTTPS for the embedded emulator under `cosmos-feed start` (docs/emulator.md "HTTPS"): the real emulators serve
 * HTTPS with a self-signed certificate, and current `@azure/cosmos` refuses http:// endpoints, so `start` serves
 * HTTPS — with a certificate made once into the data folder (`auto`, the CLI's default) or given — and still
 * answers http:// on the same port (existing settings and examples); `off` is HTTP only.
 */
export type EmulatorTlsChoice = "auto" | "off" | { certFile: string; keyFile: string };

export interface EmulatorTls {
  options: NonNullable<EmulatorOptions["tls"]>;
  certFile: string;
  /** Trusts the running emulator's certificate in this process's clients; returns the undo. */
  trustInProcess(emulator: RunningEmulator): () => void;
  /** The line `start` prints: how the app trusts it, how other processes can. */
  hint: string;
}

/**
 * Makes (or reuses) the certificate and points NODE_EXTRA_CA_CERTS of `env` — the worker process's environment —
 * at it, before the worker starts: Node reads that variable once, at a process's start (so this runs whether or
 * not the app turns out to need the emulator; the certificate is made once per data folder). A
 * NODE_EXTRA_CA_CERTS the user set is kept: both go into one bundle in the data folder.
 */
export function prepareEmulatorTls(
  choice: EmulatorTlsChoice,
  dataDir: string,
  env: NodeJS.ProcessEnv,
): EmulatorTls | undefined {
  if (choice === "off") return undefined;
  const dir = join(dataDir, "tls");
  let certFile: string;
  let keyFile: string;
  let made = "";
  if (choice === "auto") {
    const stored = ensureCertificate(dir);
    if (stored.created) made = ` (${stored.created})`;
    ({ certFile, keyFile } = stored);
  } else {
    certFile = resolve(choice.certFile);
    keyFile = resolve(choice.keyFile);
    for (const [flag, file] of [
      ["--emulator-tls-cert", certFile],
      ["--emulator-tls-key", keyFile],
    ]) {
      if (!existsSync(file))
        throw new DevHostError(`${flag}: ${file} does not exist.`, { code: "InvalidOption" });
    }
  }
  const own = env.NODE_EXTRA_CA_CERTS;
  if (own && resolve(own) !== certFile && existsSync(own)) {
    const bundle = join(dir, "worker-ca.pem");
    writeFileSync(bundle, `${readFileSync(own, "utf8").trimEnd()}\n${readFileSync(certFile, "utf8")}`);
    env.NODE_EXTRA_CA_CERTS = bundle;
  } else {
    env.NODE_EXTRA_CA_CERTS = certFile;
  }
  return {
    options: { certFile, keyFile, http: true },
    certFile,
    trustInProcess: (emulator) => trustEmulatorCertificate(emulator.port, emulator.tls?.certPem ?? ""),
    hint:
      `The emulator serves HTTPS (http:// answered on the same port too) with the certificate ${certFile}${made}; the app's ` +
      `worker trusts it (NODE_EXTRA_CA_CERTS). Elsewhere: NODE_EXTRA_CA_CERTS=${certFile} for Node.js, ` +
      `SSL_CERT_FILE=${certFile} for .NET on Linux, keytool -importcert -alias cosmos-feed-emulator -file ${certFile} ` +
      "for Java (docs/emulator.md#https); --emulator-tls off serves HTTP only.",
  };
}
