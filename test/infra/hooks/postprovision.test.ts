/**
 * The postprovision hook (scripts/hooks/postprovision.mjs), a child process as azd runs it with its environment's
 * values: local.settings.json for a local run against the deployed account — identity-based, no key, the deployed
 * task hub's name (host.json's %TASKHUB_NAME%) — and nothing written when private networking keeps this machine out.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../../bench/lib/app-child.js";
import { localSettingsFor } from "../../../scripts/hooks/local-settings.mjs";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function runHook(env: Record<string, string>) {
  const cwd = mkdtempSync(join(tmpdir(), "postprovision-"));
  dirs.push(cwd);
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(repoRoot, "scripts", "hooks", "postprovision.mjs")],
    { cwd, env: { PATH: process.env.PATH ?? "", ...env } },
  );
  const file = join(cwd, "local.settings.json");
  return {
    lines: stdout.trim().split("\n"),
    settings: existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : undefined,
  };
}

const endpoint = "https://cosmos-abc.documents.azure.com:443/";

describe("postprovision: local.settings.json from the azd environment", () => {
  it("the deployed account as an identity connection, the deployed task hub name, host storage on Azurite", async () => {
    const { lines, settings } = await runHook({
      COSMOS_ENDPOINT: endpoint,
      TASKHUB_NAME: "feedhub7",
      COSMOS_DEV_HOST_CONTAINERS: "true",
    });
    expect(settings).toEqual({
      IsEncrypted: false,
      Values: {
        FUNCTIONS_WORKER_RUNTIME: "node",
        AzureWebJobsStorage: "UseDevelopmentStorage=true",
        COSMOS_CONNECTION__accountEndpoint: endpoint,
        COSMOS_CONNECTION_SETTING: "COSMOS_CONNECTION",
        COSMOS_ENSURE_CONTAINERS: "false",
        TASKHUB_NAME: "feedhub7",
      },
      Host: { LocalHttpPort: 7071 },
    });
    expect(JSON.stringify(settings)).not.toMatch(/AccountKey/);
    expect(lines).toEqual([
      `postprovision: wrote local.settings.json for ${endpoint} (identity-based connection, no keys)`,
    ]);
  });

  it("without the dev host's containers in Azure, it says how to get them for orchestrations", async () => {
    const { lines, settings } = await runHook({ COSMOS_ENDPOINT: endpoint, TASKHUB_NAME: "cosmosfeed" });
    expect(settings?.Values.TASKHUB_NAME).toBe("cosmosfeed");
    expect(lines[1]).toBe(
      "postprovision: the dev host's durable task hub container is not provisioned: for orchestrations in a local run, `azd env set COSMOS_DEV_HOST_CONTAINERS true` and `azd provision`.",
    );
  });

  it("with private networking it writes nothing (the account takes no traffic from this machine) and says why", async () => {
    const { lines, settings } = await runHook({ COSMOS_ENDPOINT: endpoint, VNET_ENABLED: "true" });
    expect(settings).toBeUndefined();
    expect(lines).toEqual([
      `postprovision: left local.settings.json as it is: with VNET_ENABLED the account ${endpoint} takes no traffic from outside its virtual network.`,
    ]);
  });

  it("without azd's outputs it writes nothing", () => {
    expect(localSettingsFor({})).toEqual({
      settings: undefined,
      lines: ["COSMOS_ENDPOINT is not set: run `azd provision` first."],
    });
  });
});
