/**
 * Runs an emulator as a child process (for crash tests): options as JSON in argv[2];
 * prints one JSON line `{endpoint, key, port}` once listening.
 */
import { type EmulatorOptions, startEmulator } from "../../packages/emulator/src/index.js";

const options = JSON.parse(process.argv[2] ?? "{}") as EmulatorOptions;
const emu = await startEmulator(options);
process.stdout.write(`${JSON.stringify({ endpoint: emu.endpoint, key: emu.key, port: emu.port })}\n`);
process.on("SIGTERM", () => {
  void emu.close().then(() => process.exit(0));
});
