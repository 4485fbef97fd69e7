import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CosmosConnectionError, resolveCosmosConnection } from "../../packages/core/src/cosmos/client.js";
import {
  ContainerDefinitionError,
  containerDefinition,
  containerOf,
  containerRequestOf,
  lookupContainer,
  parseContainerDefinition,
} from "../../src/shared/containers.js";
import { InvalidSettingsError, loadSettings, SETTINGS } from "../../src/shared/settings.js";

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadSettings(env);
  } catch (e) {
    if (e instanceof InvalidSettingsError) return [...e.problems];
    throw e;
  }
  return [];
};

describe("settings", () => {
  it("takes every default when nothing is set (blank counts as unset)", () => {
    const s = loadSettings({ LOCK_TTL_SECONDS: "  " });
    for (const [key, knob] of Object.entries(SETTINGS)) expect(s[key as keyof typeof s]).toBe(knob.default);
  });

  it("reads each knob from its app setting", () => {
    const s = loadSettings({
      FEED_POLL_DELAY_MS: "250",
      LOCK_TTL_SECONDS: "30",
      LOCK_CONTENTION_STATUS: "503",
      LIST_PAGE_SIZE: "7",
      LAG_REPORT_SCHEDULE: "*/10 * * * * *",
      COSMOS_CONNECTION_SETTING: "MY_COSMOS",
    });
    expect(s).toMatchObject({
      feedPollDelayMs: 250,
      lockTtlSeconds: 30,
      lockContentionStatus: 503,
      listPageSize: 7,
      lagReportSchedule: "*/10 * * * * *",
      cosmosConnectionSetting: "MY_COSMOS",
    });
  });

  it("lists every bad value at once, naming the setting, what is allowed, the default and what was given", () => {
    const problems = problemsOf({
      FEED_POLL_DELAY_MS: "fast",
      LOCK_TTL_SECONDS: "1.5",
      LOCK_CONTENTION_STATUS: "404",
      LIST_PAGE_SIZE: "0",
      LAG_REPORT_SCHEDULE: "*/5 * * * *",
      MAX_ITEMS_PER_INVOCATION: "1e3",
    });
    expect(problems).toHaveLength(6);
    expect(problems[0]).toBe(
      "FEED_POLL_DELAY_MS must be a whole number of ms from 100 to 600000 (default 1000); got 'fast'.",
    );
    expect(problems.join("\n")).toContain(
      "LOCK_CONTENTION_STATUS must be one of 409, 503 (default 409); got '404'.",
    );
    expect(problems.join("\n")).toContain("LAG_REPORT_SCHEDULE must be a six-field NCRONTAB");
    expect(problems.join("\n")).toContain("LOCK_TTL_SECONDS must be a whole number of s");
    expect(() => loadSettings({ LIST_PAGE_SIZE: "0" })).toThrow(/Invalid app settings:\n {2}LIST_PAGE_SIZE/);
  });

  it("reads flags as true or false only", () => {
    expect(loadSettings({ COSMOS_ENSURE_CONTAINERS: "TRUE" }).ensureContainers).toBe(true);
    expect(problemsOf({ COSMOS_ENSURE_CONTAINERS: "yes" })).toEqual([
      "COSMOS_ENSURE_CONTAINERS must be true or false (default false); got 'yes'.",
    ]);
  });

  it("refuses a renew interval that is not below the expiration interval", () => {
    expect(problemsOf({ LEASE_RENEW_INTERVAL_MS: "60000", LEASE_EXPIRATION_INTERVAL_MS: "60000" })).toEqual([
      expect.stringContaining(
        "LEASE_RENEW_INTERVAL_MS (60000) must be below LEASE_EXPIRATION_INTERVAL_MS (60000)",
      ),
    ]);
  });

  it("local.settings.sample.json names every knob with its default", () => {
    const sample = JSON.parse(readFileSync("local.settings.sample.json", "utf8")) as {
      Values: Record<string, string>;
    };
    // Every knob at its default, except that a local run may create the containers on the emulator.
    for (const knob of Object.values(SETTINGS)) {
      const expected = knob.setting === "COSMOS_ENSURE_CONTAINERS" ? "true" : String(knob.default);
      expect(sample.Values[knob.setting]).toBe(expected);
    }
    expect(sample.Values.FUNCTIONS_WORKER_RUNTIME).toBe("node");
    expect(sample.Values.AzureWebJobsStorage).toBe("UseDevelopmentStorage=true");
    expect(loadSettings(sample.Values)).toEqual({ ...loadSettings({}), ensureContainers: true });
  });
});

describe("containers.json", () => {
  it("defines every role; leases and locks by /id with TTL on", () => {
    expect(containerOf("leases")).toMatchObject({ name: "leases", partitionKey: "/id", defaultTtl: -1 });
    expect(containerOf("locks")).toMatchObject({ partitionKey: "/id" });
    expect(containerOf("locks").defaultTtl).toBeGreaterThan(0);
    expect(containerOf("resources").partitionKey).toBe("/subscriptionId");
    expect(containerRequestOf(containerOf("leases"))).toEqual({
      id: "leases",
      partitionKey: { paths: ["/id"] },
      defaultTtl: -1,
      // Lean: leases are read by id (always indexed) and listed by prefix; nothing else needs an index.
      indexingPolicy: {
        indexingMode: "consistent",
        automatic: true,
        includedPaths: [],
        excludedPaths: [{ path: "/*" }],
      },
    });
    expect(lookupContainer(containerDefinition.database.name, "locks")?.role).toBe("locks");
    expect(lookupContainer("other-db", "locks")).toBeUndefined();
  });

  const valid = () =>
    JSON.parse(readFileSync("src/shared/containers.json", "utf8")) as {
      containers: Record<string, unknown>[];
    };
  /** The container of `role` (by role, not by position: the file's order is free). */
  const roleOf = (d: ReturnType<typeof valid>, role: string) => {
    const c = d.containers.find((x) => x.role === role);
    if (!c) throw new Error(`containers.json has no role '${role}'`);
    return c;
  };
  const errorOf = (mutate: (d: ReturnType<typeof valid>) => void) => {
    const d = valid();
    mutate(d);
    try {
      parseContainerDefinition(d);
    } catch (e) {
      expect(e).toBeInstanceOf(ContainerDefinitionError);
      return (e as Error).message;
    }
    return "no error";
  };

  it.each([
    [
      "a lease container not on /id",
      (d: ReturnType<typeof valid>) => {
        roleOf(d, "leases").partitionKey = "/pk";
      },
      "leases container must be partitioned by /id",
    ],
    [
      "a lock container with TTL off",
      (d: ReturnType<typeof valid>) => {
        delete roleOf(d, "locks").defaultTtl;
      },
      "locks container needs TTL on",
    ],
    [
      "a missing role",
      (d: ReturnType<typeof valid>) => {
        d.containers = d.containers.filter((c) => c.role !== "locks");
      },
      "no container has role 'locks'",
    ],
    [
      "an unknown field",
      (d: ReturnType<typeof valid>) => {
        roleOf(d, "resources").ttl = 5;
      },
      "unknown field 'ttl'",
    ],
    [
      "a bad TTL",
      (d: ReturnType<typeof valid>) => {
        roleOf(d, "summaries").defaultTtl = 0;
      },
      "defaultTtl must be -1",
    ],
    [
      "throughput off the 100 grid",
      (d: ReturnType<typeof valid>) => {
        roleOf(d, "resources").throughput = 450;
      },
      "throughput must be 400–1000000",
    ],
    [
      "a duplicate name",
      (d: ReturnType<typeof valid>) => {
        roleOf(d, "leases").name = "resources";
      },
      "used twice",
    ],
  ])("refuses %s", (_label, mutate, message) => {
    expect(errorOf(mutate)).toContain(message);
  });
});

describe("Cosmos connection setting", () => {
  const emulator = "AccountEndpoint=http://127.0.0.1:8081/;AccountKey=a2V5;";
  it("a connection string wins over the identity section", () => {
    expect(
      resolveCosmosConnection("COSMOS", {
        COSMOS: emulator,
        COSMOS__accountEndpoint: "https://x.documents.azure.com/",
      }),
    ).toEqual({ kind: "key", endpoint: "http://127.0.0.1:8081/", key: "a2V5" });
  });

  it("<NAME>__accountEndpoint gives a credential-based connection", () => {
    const info = resolveCosmosConnection("COSMOS", {
      COSMOS__accountEndpoint: "https://acct.documents.azure.com:443/",
      COSMOS__credential: "managedidentity",
      COSMOS__clientId: "00000000-0000-0000-0000-000000000001",
    });
    expect(info.kind).toBe("credential");
    expect(info.endpoint).toBe("https://acct.documents.azure.com:443/");
    if (info.kind === "credential")
      expect(info.credential.constructor.name).toBe("ManagedIdentityCredential");
  });

  it("names the setting when nothing or something malformed is set", () => {
    expect(() => resolveCosmosConnection("COSMOS", {})).toThrow(CosmosConnectionError);
    expect(() => resolveCosmosConnection("COSMOS", {})).toThrow(/COSMOS__accountEndpoint/);
    expect(() => resolveCosmosConnection("COSMOS", { COSMOS: "AccountEndpoint=x" })).toThrow(
      /COSMOS is not a Cosmos DB connection string/,
    );
    expect(() =>
      resolveCosmosConnection("COSMOS", { COSMOS: "AccountEndpoint=ftp://x/;AccountKey=k;" }),
    ).toThrow(/not an http\(s\) URL/);
  });
});
