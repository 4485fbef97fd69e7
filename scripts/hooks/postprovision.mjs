#!/usr/bin/env node
// azd postprovision hook (azure.yaml; `posix` and `windows` both run `node scripts/hooks/postprovision.mjs`):
// writes local.settings.json for a local run against the deployed Cosmos DB account (local-settings.mjs says what).
// azd passes its environment's values (main.bicep's outputs among them) as environment variables.
import { writeFileSync } from "node:fs";
import { localSettingsFor } from "./local-settings.mjs";

const { settings, lines } = localSettingsFor(process.env);
if (settings) writeFileSync("local.settings.json", `${JSON.stringify(settings, null, 2)}\n`);
for (const line of lines) console.log(`postprovision: ${line}`);
