import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  createDefinedContainers,
  loadContainerDefinitions,
  readContainerDefinitions,
} from "../../packages/devhost/src/containerDefinitions.js";
import {
  connectionResolves,
  cosmosSettingNames,
  localEmulatorPort,
  pointConnections,
  portAnswers,
} from "../../packages/devhost/src/cosmosTarget.js";
import { DevHostError } from "../../packages/devhost/src/errors.js";
import { parseCosmosTarget } from "../../packages/devhost/src/startCommand.js";
import { containerDefinition } from "../../src/shared/containers.js";
import { startTestEmulator } from "../support/emulator.js";

const projectDefinitions = fileURLToPath(new URL("../../src/shared/containers.json", import.meta.url));

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

  it("gives each container its defined throughput, except the durable task hub's", () => {
    const definitions = readContainerDefinitions(projectDefinitions);
    const byName = Object.fromEntries(
      [...(definitions?.requests ?? [])].map(([name, r]) => [name, r.throughput]),
    );
    const expected = Object.fromEntries(
      containerDefinition.containers.map((c) => [c.name, c.role === "durable" ? undefined : c.throughput]),
    );
    expect(byName).toEqual(expected);
    // The project's file defines a throughput for every container, the hub's included: only the hub goes without.
    expect(containerDefinition.containers.every((c) => typeof c.throughput === "number")).toBe(true);
    expect(byName[definitions?.roles.get("durable") as string]).toBeUndefined();
  });

  it("refuses a throughput the service would refuse, naming the container", () => {
    const dir = mkdtempSync(join(tmpdir(), "containers-"));
    try {
      const file = join(dir, "containers.json");
      writeFileSync(
        file,
        JSON.stringify({
          database: { name: "db" },
          containers: [{ name: "c", partitionKey: "/id", throughput: 450 }],
        }),
      );
      expect(() => readContainerDefinitions(file)).toThrow(DevHostError);
      expect(() => readContainerDefinitions(file)).toThrow(
        /container 'c' has throughput 450; it must be manual RU\/s from 400 to 1000000 in steps of 100/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("creates them on the emulator with enforced throughput; the task hub's default offer is readable, not enforced", async () => {
    const t = await startTestEmulator();
    try {
      const definitions = readContainerDefinitions(projectDefinitions);
      if (!definitions) throw new Error("no containers.json");
      const lines: string[] = [];
      const created = await createDefinedContainers(definitions, t.client, (m) => lines.push(m));
      const db = containerDefinition.database.name;
      expect(created.sort()).toEqual(containerDefinition.containers.map((c) => c.name).sort());
      for (const c of containerDefinition.containers) {
        const hub = c.role === "durable";
        expect(lines).toContain(
          `Created container '${db}/${c.name}' (from ${projectDefinitions}; ${hub ? "throughput not enforced" : `${c.throughput} RU/s`}).`,
        );
        // What the SDK sees: every container has an offer of 400 RU/s (the hub's is the service's default) …
        const offer = await t.client.database(db).container(c.name).readOffer();
        expect(offer.resource?.content?.offerThroughput).toBe(hub ? 400 : c.throughput);
        // … and what the emulator enforces: a token bucket of the defined RU/s, none for the hub.
        expect(t.emulator.account.container(db, c.name).budget?.ruPerSecond).toBe(
          hub ? undefined : c.throughput,
        );
      }
      // A second start finds them: nothing is created or changed.
      expect(await createDefinedContainers(definitions, t.client, () => {})).toEqual([]);
    } finally {
      await t.close();
    }
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
