#!/usr/bin/env node
// azd postdeploy hook (azure.yaml; `posix` and `windows` both run `node scripts/hooks/postdeploy.mjs`): proves what
// the deployment only assumes — a request without a token to a mutation route gets 401, GET /api/health answers 200,
// and the function app lists every function of expected-functions.json (the Cosmos DB triggers among them). One line
// per check; exit 1 when one fails, which fails `azd deploy` / `azd up`. The function list comes from Azure Resource
// Manager through the Azure CLI (`az functionapp function list`); azd passes its environment's values (API_URL,
// AZURE_RESOURCE_GROUP, AZURE_FUNCTION_APP_NAME: main.bicep's outputs) as environment variables.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { readPostdeploySettings, runDeployChecks } from "./deploy-check.mjs";

function fail(message) {
  console.error(`postdeploy: ${message}`);
  process.exit(1);
}

const baseUrl = process.env.API_URL || process.env.SERVICE_API_URI;
const group = process.env.AZURE_RESOURCE_GROUP;
const app = process.env.AZURE_FUNCTION_APP_NAME;
if (!baseUrl || !group || !app) {
  fail(
    "API_URL, AZURE_RESOURCE_GROUP and AZURE_FUNCTION_APP_NAME must be set (azd sets them from main.bicep's outputs).",
  );
}
let settings;
try {
  settings = readPostdeploySettings();
} catch (e) {
  fail(e.message);
}
const expected = JSON.parse(
  readFileSync(new URL("./expected-functions.json", import.meta.url), "utf8"),
).functions.map((f) => f.name);

/** The function app's functions, from ARM (the Azure CLI's own sign-in; `az.cmd` on Windows runs through a shell). */
function listFunctions() {
  const args = [
    "functionapp",
    "function",
    "list",
    "-g",
    group,
    "-n",
    app,
    "--query",
    "[].name",
    "-o",
    "json",
  ];
  return new Promise((resolve, reject) => {
    execFile(
      "az",
      args,
      { shell: process.platform === "win32", maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error)
          reject(
            error.code === "ENOENT"
              ? Object.assign(new Error("the Azure CLI ('az') is not on PATH: install it and `az login`"), {
                  final: true,
                })
              : new Error(
                  `az functionapp function list failed: ${(stderr || error.message).trim().split("\n").pop()}`,
                ),
          );
        else resolve(JSON.parse(stdout));
      },
    );
  });
}

console.log(`postdeploy: checking ${baseUrl} (${app})`);
const results = await runDeployChecks({ baseUrl, expectedFunctions: expected, listFunctions, ...settings });
for (const r of results) console.log(`postdeploy: ${r.line}`);
if (results.some((r) => !r.ok))
  fail('the deployment is not as expected (above); see docs/deploy.md, "Proof after deploy".');
console.log("postdeploy: the deployment answers as expected");
