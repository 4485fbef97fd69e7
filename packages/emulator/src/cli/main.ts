// The `cosmos-emulator` command (bin/cosmos-emulator.js runs this): the emulator in the foreground. Exits 0 after a
// stop signal, 1 for bad flags or a failed start (one line on stderr), 130 for a second, separate stop signal.
import { readFileSync } from "node:fs";
import { emulatorCommand } from "./command.js";

// src/cli/main.ts (tsx) or dist/cli/main.js (compiled): the emulator package's package.json is two up.
const packageJson = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

await emulatorCommand({
  name: "cosmos-emulator",
  label: "cosmos-emulator",
  description: "Run the Cosmos DB (NoSQL) emulator in the foreground",
})
  .version(packageJson.version, "-V, --version", "print the version")
  .parseAsync();
