import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
} from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import {
  bitString,
  boolean,
  explicit,
  implicit,
  nullValue,
  octetString,
  oid,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
} from "./der.js";
import { CERTIFICATE } from "./settings.js";

/**
 * The emulator's self-signed certificate, as the Windows and Linux Cosmos DB emulators have one: X.509 v3, RSA 2048
 * and SHA-256, subject alternative names localhost, 127.0.0.1 and ::1 (plus any asked for), and basicConstraints
 * CA:TRUE so that it can be trusted as its own root (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, a Java keystore, the OS
 * store) — made with node:crypto alone (no openssl on PATH, no dependency).
 */

/** The names every generated certificate covers. */
export const DEFAULT_CERTIFICATE_NAMES: readonly string[] = ["localhost", "127.0.0.1", "::1"];
export const CERTIFICATE_FILE = "emulator-cert.pem";
export const KEY_FILE = "emulator-key.pem";
const SUBJECT = "cosmos-feed Cosmos DB emulator";
const DAY_MS = 86_400_000;

export interface GeneratedCertificate {
  certPem: string;
  keyPem: string;
}

function generalName(name: string): Buffer {
  const family = isIP(name);
  if (family === 4) return implicit(7, Buffer.from(name.split(".").map(Number)));
  if (family === 6) return implicit(7, ipv6Bytes(name));
  return implicit(2, Buffer.from(name, "ascii"));
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.includes("::") ? address.split("::") : [address, undefined];
  const words = (s: string | undefined) => (s ? s.split(":").map((w) => Number.parseInt(w, 16)) : []);
  const left = words(head);
  const right = words(tail);
  const all = [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  for (const [i, w] of all.entries()) out.writeUInt16BE(w, i * 2);
  return out;
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

/** A new key pair and a certificate for `names` (DNS names or IP addresses), valid from now for `lifetimeDays`. */
export function generateCertificate(
  names: readonly string[] = DEFAULT_CERTIFICATE_NAMES,
  now = new Date(),
): GeneratedCertificate {
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const sha256WithRsa = sequence(oid("1.2.840.113549.1.1.11"), nullValue());
  const name = sequence(set(sequence(oid("2.5.4.3"), utf8String(SUBJECT))));
  const serial = randomBytes(16);
  serial[0] &= 0x7f; // positive
  const notBefore = new Date(now.getTime() - CERTIFICATE.backdateMinutes * 60_000);
  const notAfter = new Date(now.getTime() + CERTIFICATE.lifetimeDays * DAY_MS);
  const unique = [...new Set([...DEFAULT_CERTIFICATE_NAMES, ...names])];
  const extensions = sequence(
    // basicConstraints: CA, no intermediates below it — a root the user can trust, that is its own server cert.
    extension("2.5.29.19", true, sequence(boolean(true), smallInteger(0))),
    // keyUsage: digitalSignature, keyEncipherment, keyCertSign (bits 0, 2, 5: 1010 0100, two unused bits).
    extension("2.5.29.15", true, bitString(Buffer.from([0xa4]), 2)),
    // extKeyUsage: serverAuth (macOS requires it of TLS server certificates).
    extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.1"))),
    extension("2.5.29.17", false, sequence(...unique.map(generalName))),
    extension("2.5.29.14", false, octetString(createHash("sha1").update(spki).digest())),
  );
  const tbs = sequence(
    explicit(0, smallInteger(2)), // v3
    unsignedInteger(serial),
    sha256WithRsa,
    name,
    sequence(time(notBefore), time(notAfter)),
    name,
    spki,
    explicit(3, extensions),
  );
  const signature = sign("sha256", tbs, privateKey);
  const der = sequence(tbs, sha256WithRsa, bitString(signature));
  const body = der.toString("base64").replace(/.{1,64}/g, "$&\n");
  return {
    certPem: `-----BEGIN CERTIFICATE-----\n${body}-----END CERTIFICATE-----\n`,
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }) as string,
  };
}

/** Why a stored certificate cannot be reused (undefined when it can). */
function unusable(
  certFile: string,
  keyFile: string,
  names: readonly string[],
  now: Date,
): string | undefined {
  if (!existsSync(certFile) || !existsSync(keyFile)) return undefined;
  try {
    const cert = new X509Certificate(readFileSync(certFile));
    if (!cert.checkPrivateKey(createPrivateKey(readFileSync(keyFile)))) return "its key does not match it";
    if (Date.parse(cert.validTo) - now.getTime() < CERTIFICATE.renewBeforeDays * DAY_MS) {
      return `it expires on ${new Date(cert.validTo).toISOString().slice(0, 10)}`;
    }
    const missing = names.find((n) => (isIP(n) ? !cert.checkIP(n) : !cert.checkHost(n)));
    return missing === undefined ? undefined : `it does not cover ${missing}`;
  } catch (e) {
    return `it cannot be read (${(e as Error).message})`;
  }
}

/** A certificate and key on disk, and the certificate's text. */
export interface StoredCertificate {
  /** The certificate's file (PEM). */
  certFile: string;
  /** The private key's file (PEM). */
  keyFile: string;
  /** The certificate (PEM): what a client trusts. */
  certPem: string;
  /** Whether it was made now, and why (a first start; or why the stored one was replaced). */
  created?: string;
}

/**
 * The certificate kept in `dir` (emulator-cert.pem, emulator-key.pem), made on first use and reused on later
 * starts, so that trusting it once is enough; replaced (and said why) when it expires within renewBeforeDays, no
 * longer matches its key, or does not cover `names`. The key is written readable by its owner only.
 */
export function ensureCertificate(
  dir: string,
  names: readonly string[] = DEFAULT_CERTIFICATE_NAMES,
  now = new Date(),
): StoredCertificate {
  const certFile = join(dir, CERTIFICATE_FILE);
  const keyFile = join(dir, KEY_FILE);
  const stored = existsSync(certFile) && existsSync(keyFile);
  const why = unusable(certFile, keyFile, names, now);
  if (stored && why === undefined) return { certFile, keyFile, certPem: readFileSync(certFile, "utf8") };
  // Two starts on one folder at once (tests do it): each writes its own temporary files and renames them into
  // place, then reads back the pair — when the other start's rename came between, the pair is remade.
  let fresh = generateCertificate(names, now);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (let attempt = 1; ; attempt++) {
    const tmp = `.${process.pid}.${attempt}.tmp`;
    writeFileSync(`${keyFile}${tmp}`, fresh.keyPem, { mode: 0o600 });
    chmodSync(`${keyFile}${tmp}`, 0o600);
    writeFileSync(`${certFile}${tmp}`, fresh.certPem);
    renameSync(`${keyFile}${tmp}`, keyFile);
    renameSync(`${certFile}${tmp}`, certFile);
    const certPem = readFileSync(certFile, "utf8");
    if (unusable(certFile, keyFile, names, now) === undefined || attempt === 3) {
      fresh = { certPem, keyPem: fresh.keyPem };
      break;
    }
    fresh = generateCertificate(names, now);
  }
  return {
    certFile,
    keyFile,
    certPem: fresh.certPem,
    created: stored ? `the one there was replaced: ${why}` : "generated on first use",
  };
}
