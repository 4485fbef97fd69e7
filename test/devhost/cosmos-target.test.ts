import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadContainerDefinitions } from "../../src/devhost/containerDefinitions.js";
import {
  connectionResolves,
  cosmosSettingNames,
  localEmulatorPort,
  pointConnections,
  portAnswers,
} from "../../src/devhost/cosmosTarget.js";
import { parseCosmosTarget } from "../../src/devhost/startCommand.js";

describe("choosing where Cosmos DB connections point (--cosmos)", () => {
  it("parses --cosmos", () => {
    expect(parseCosmosTarget(undefined)).toEqual({ kind: "auto" });
    expect(parseCosmosTarget("emulator")).toEqual({ kind: "emulator" });
    const cs = "AccountEndpoint=https://a.documents.azure.com:443/;AccountKey=abc==;";
    expect(parseCosmosTarget(cs)).toEqual({ kind: "connectionString", value: cs });
    expect(() => parseCosmosTarget("https://a.documents.azure.com")).toThrow(
      /--cosmos is 'emulator' or a Cosmos DB/,
    );
  });

  it("finds connection settings: connection strings and identity-based sections", () => {
    const settings = {
      COSMOS: "AccountEndpoint=https://x/;AccountKey=k==;",
      OTHER__accountEndpoint: "https://y/",
      OTHER__credential: "managedidentity",
      AzureWebJobsStorage: "UseDevelopmentStorage=true",
    };
    const env = { FROM_ENV: "accountendpoint=https://z/;accountkey=k;" };
    expect(cosmosSettingNames(settings, env).sort()).toEqual(["COSMOS", "FROM_ENV", "OTHER"]);
  });

  it("knows when a connection resolves and points settings at a target", () => {
    const env: NodeJS.ProcessEnv = { A: "x", B__accountEndpoint: "https://b/", C: "" };
    expect(["A", "B", "C", "D"].map((n) => connectionResolves(n, env))).toEqual([true, true, false, false]);
    expect(pointConnections(["A", "D"], "AccountEndpoint=e;AccountKey=k;", env)).toEqual(["A", "D"]);
    expect(env.D).toBe("AccountEndpoint=e;AccountKey=k;");
    expect(pointConnections(["A"], "AccountEndpoint=e;AccountKey=k;", env)).toEqual([]);
  });
});

describe("container definitions for containers created on the emulator", () => {
  it("reads this project's containers.json", () => {
    const lookup = loadContainerDefinitions(
      fileURLToPath(new URL("../../src/shared/containers.json", import.meta.url)),
    );
    expect(lookup?.("cosmos-feed-app", "resources")?.partitionKey).toEqual({ paths: ["/subscriptionId"] });
    expect(lookup?.("cosmos-feed-app", "leases")?.defaultTtl).toBe(-1);
    expect(lookup?.("other-db", "resources")).toBeUndefined();
    expect(loadContainerDefinitions("/nonexistent/containers.json")).toBeUndefined();
  });
});

describe("a setting that names the local emulator", () => {
  const key = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
  it("is a loopback endpoint signed with the well-known key", () => {
    expect(localEmulatorPort(`AccountEndpoint=http://127.0.0.1:8081/;AccountKey=${key};`, key)).toBe(8081);
    expect(localEmulatorPort(`AccountEndpoint=https://localhost:9000/;AccountKey=${key}`, key)).toBe(9000);
    expect(
      localEmulatorPort(`AccountEndpoint=https://acct.documents.azure.com:443/;AccountKey=${key};`, key),
    ).toBe(undefined);
    expect(
      localEmulatorPort("AccountEndpoint=http://127.0.0.1:8081/;AccountKey=other==;", key),
    ).toBeUndefined();
    expect(localEmulatorPort(undefined, key)).toBeUndefined();
  });

  it("is probed over TCP", async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    expect(await portAnswers(port)).toBe(true);
    await new Promise<void>((r) => server.close(() => r()));
    expect(await portAnswers(port)).toBe(false);
  });
});
