// `@cosmos-feed/emulator/cli`: the emulator's command line — what the `cosmos-emulator` bin runs, and what the dev
// host's `cosmos-feed emulator` adds as its subcommand (same flags, defaults, messages and exit codes).

export type { StoredCertificate } from "../tls/certificate.js";
export { standaloneCertificate } from "./certificate.js";
export { DEFAULT_PORT, type EmulatorCommandOptions, emulatorCommand } from "./command.js";
