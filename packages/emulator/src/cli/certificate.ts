import { hostname, networkInterfaces, tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { DEFAULT_CERTIFICATE_NAMES, ensureCertificate, type StoredCertificate } from "../tls/certificate.js";

/**
 * `cosmos-emulator --tls auto` (and `cosmos-feed emulator --tls auto`): the certificate kept in `<data-dir>/tls`, or — in memory — in a folder of the
 * user's under the system's temp folder, so that it too is trusted once. It covers the bound address as well (every
 * interface's, and the machine's name, when bound to 0.0.0.0 or ::), so that clients on other hosts can verify it.
 */
export function standaloneCertificate(dataDir: string | undefined, bindHost: string): StoredCertificate {
  const dir = dataDir
    ? join(dataDir, "tls")
    : join(tmpdir(), `cosmos-feed-emulator-${userInfo().username}`, "tls");
  const bound =
    bindHost === "0.0.0.0" || bindHost === "::"
      ? [
          hostname(),
          ...Object.values(networkInterfaces())
            .flatMap((l) => l ?? [])
            .filter((i) => !i.address.includes("%"))
            .map((i) => i.address),
        ]
      : [bindHost.replace(/^\[|\]$/g, "")];
  return ensureCertificate(dir, [...DEFAULT_CERTIFICATE_NAMES, ...bound]);
}
