import { BulkOperationType, type Container, type Database } from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { createCosmosClient, resolveCosmosConnection } from "../../packages/devhost/src/connections.js";
import {
  CosmosTriggerError,
  type CosmosTriggerInvocation,
  type CosmosTriggerOptions,
  type RunningCosmosTrigger,
  resolveCosmosTriggerOptions,
  type StartCosmosTriggerOptions,
  startCosmosTrigger,
} from "../../packages/devhost/src/cosmos/trigger.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

interface Doc {
  id: string;
  pk: string;
}

interface Delivery {
  ids: string[];
  raw: unknown[];
  invocation: CosmosTriggerInvocation;
}

let t: TestEmulator;
let db: Database;
const running: RunningCosmosTrigger[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("trig") })).database;
});
afterEach(async () => {
  await Promise.allSettled(running.splice(0).map((r) => r.stop()));
});
afterAll(async () => {
  await t.close();
});

/** Short intervals (ms, the binding's own units) so a test takes well under a second per step. */
const FAST: Partial<CosmosTriggerOptions> = {
  feedPollDelay: 50,
  leaseAcquireInterval: 200,
  leaseRenewInterval: 300,
  leaseExpirationInterval: 3_000,
};

async function monitoredContainer(): Promise<Container> {
  const { container } = await db.containers.create({
    id: uniqueName("data"),
    partitionKey: { paths: ["/pk"] },
  });
  return container;
}

async function start(
  options: Partial<CosmosTriggerOptions> & { containerName: string },
  invoke: (docs: Doc[], inv: CosmosTriggerInvocation) => Promise<void> | void,
  extra: Partial<StartCosmosTriggerOptions> = {},
) {
  const deliveries: Delivery[] = [];
  const logs: Array<{ level: string; message: string; invocationId?: string }> = [];
  const trigger = await startCosmosTrigger({
    functionName: extra.functionName ?? "onChange",
    options: {
      connection: "COSMOS",
      databaseName: db.id,
      createLeaseContainerIfNotExists: true,
      startFromBeginning: true,
      ...FAST,
      ...options,
    },
    clientFor: () => t.client,
    invoke: async (documents, invocation) => {
      const docs = documents as Doc[];
      deliveries.push({ ids: docs.map((d) => d.id), raw: documents, invocation });
      await invoke(docs, invocation);
    },
    log: (level, message, extras) => logs.push({ level, message, ...extras }),
    tuning: { handoffTimeout: 0, maxCheckpointDelay: 0, leaseWatchInterval: 100 },
    ...extra,
  });
  running.push(trigger);
  return { trigger, deliveries, logs };
}

async function leaseDocs(leases: Container, prefix: string) {
  const { resources } = await leases.items
    .readAll<{ id: string; ContinuationToken?: string | null }>()
    .fetchAll();
  // Lease ids: <prefix><host>_<db rid>_<container rid>..<token>; the bootstrap docs end in .info / .lock.
  return resources.filter((r) => r.id.startsWith(prefix) && /\.\.\d+$/.test(r.id));
}

describe("startCosmosTrigger against the emulator", () => {
  it("delivers documents, creates the lease container (/id, TTL on) and checkpoints after success", async () => {
    const data = await monitoredContainer();
    const leaseName = uniqueName("leases");
    await data.items.create({ id: "a", pk: "p" });
    await data.items.create({ id: "b", pk: "q" });
    const { trigger, deliveries, logs } = await start(
      { containerName: data.id, leaseContainerName: leaseName },
      () => {},
    );
    await waitUntil("two documents", () => deliveries.flatMap((d) => d.ids).length >= 2);
    expect(deliveries.flatMap((d) => d.ids).sort()).toEqual(["a", "b"]);
    expect(deliveries[0]?.invocation.retryContext).toEqual({ retryCount: 0, maxRetryCount: 0 });

    const { resource } = await db.container(leaseName).read();
    expect(resource?.partitionKey?.paths).toEqual(["/id"]);
    expect(resource?.defaultTtl).toBe(-1);
    expect(
      logs.some(
        (l) => l.level === "information" && l.message.includes(`Created container '${db.id}/${leaseName}'`),
      ),
    ).toBe(true);
    expect(trigger.resolved).toMatchObject({ leaseContainerPrefix: "", leaseDatabaseName: db.id });
    await waitUntil("checkpoint", async () => {
      const docs = await leaseDocs(trigger.leaseContainer, "");
      return docs.length > 0 && docs.every((l) => !!l.ContinuationToken);
    });
  });

  it("retries a failed batch per `retry` (fixedDelay), a new invocation id per attempt, then checkpoints", async () => {
    const data = await monitoredContainer();
    await data.items.create({ id: "x", pk: "p" });
    let failures = 2;
    const { deliveries, logs } = await start(
      { containerName: data.id, leaseContainerName: uniqueName("leases") },
      () => {
        if (failures-- > 0) throw new Error("transient");
      },
      { retry: { strategy: "fixedDelay", maxRetryCount: 3, delayInterval: 30 } },
    );
    await waitUntil("three attempts", () => deliveries.length >= 3);
    expect(deliveries.map((d) => [d.ids, d.invocation.retryContext.retryCount])).toEqual([
      [["x"], 0],
      [["x"], 1],
      [["x"], 2],
    ]);
    expect(new Set(deliveries.map((d) => d.invocation.invocationId)).size).toBe(3);
    expect(deliveries[2]?.invocation.retryContext).toMatchObject({ maxRetryCount: 3 });
    expect(logs.filter((l) => l.message.startsWith("Waiting for 00:00:00.030 before retrying"))).toHaveLength(
      2,
    );
    expect(logs.some((l) => l.level === "error")).toBe(false);
  });

  it("when retries run out: logged with the invocation id, checkpointed and skipped (as the extension)", async () => {
    const data = await monitoredContainer();
    await data.items.create({ id: "bad", pk: "p" });
    const { trigger, deliveries, logs } = await start(
      { containerName: data.id, leaseContainerName: uniqueName("leases") },
      (docs) => {
        if (docs.some((d) => d.id === "bad")) throw new Error("cannot handle bad");
      },
      {
        retry: { strategy: "exponentialBackoff", maxRetryCount: 1, minimumInterval: 20, maximumInterval: 40 },
      },
    );
    await waitUntil("the failure log", () => logs.some((l) => l.level === "error"));
    const error = logs.find((l) => l.level === "error");
    const lastId = deliveries.at(-1)?.invocation.invocationId;
    expect(deliveries.map((d) => d.ids)).toEqual([["bad"], ["bad"]]);
    expect(error?.invocationId).toBe(lastId);
    expect(error?.message).toContain(`after 2 attempt(s) (last Id=${lastId}): cannot handle bad`);
    expect(error?.message).toContain("checkpointed");
    await waitUntil("checkpoint", async () => {
      const docs = await leaseDocs(trigger.leaseContainer, "");
      return docs.length > 0 && docs.every((l) => !!l.ContinuationToken);
    });
    await data.items.create({ id: "good", pk: "p" });
    await waitUntil("the next document", () => deliveries.some((d) => d.ids.includes("good")));
    // "bad" was not delivered again.
    expect(deliveries.filter((d) => d.ids.includes("bad"))).toHaveLength(2);
  });

  it("a batch still failing when the trigger stops is not checkpointed: the next start gets it again", async () => {
    const data = await monitoredContainer();
    const leaseName = uniqueName("leases");
    await data.items.create({ id: "stuck", pk: "p" });
    const first = await start(
      { containerName: data.id, leaseContainerName: leaseName },
      () => {
        throw new Error("down");
      },
      { retry: { strategy: "fixedDelay", maxRetryCount: -1, delayInterval: 20 } },
    );
    await waitUntil("several attempts", () => first.deliveries.length >= 3);
    expect(
      (await leaseDocs(first.trigger.leaseContainer, "")).map((l) => l.ContinuationToken ?? null),
    ).toEqual([null]);
    await first.trigger.stop();
    expect(first.logs.some((l) => l.level === "warning" && l.message.includes("is not checkpointed"))).toBe(
      true,
    );
    expect(
      (await leaseDocs(first.trigger.leaseContainer, "")).map((l) => l.ContinuationToken ?? null),
    ).toEqual([null]);

    const second = await start({ containerName: data.id, leaseContainerName: leaseName }, () => {});
    await waitUntil("redelivery", () => second.deliveries.length >= 1);
    expect(second.deliveries[0]?.ids).toEqual(["stuck"]);
  });

  it("two triggers with different prefixes share one lease container, each sees every change", async () => {
    const data = await monitoredContainer();
    const leaseName = uniqueName("leases");
    const a = await start(
      { containerName: data.id, leaseContainerName: leaseName, leaseContainerPrefix: "reactions" },
      () => {},
      {
        functionName: "reactions",
      },
    );
    const b = await start(
      { containerName: data.id, leaseContainerName: leaseName, leaseContainerPrefix: "summary" },
      () => {},
      {
        functionName: "summary",
      },
    );
    for (const id of ["1", "2", "3"]) await data.items.create({ id, pk: id });
    await waitUntil(
      "both triggers",
      () => a.deliveries.flatMap((d) => d.ids).length >= 3 && b.deliveries.flatMap((d) => d.ids).length >= 3,
    );
    expect(a.deliveries.flatMap((d) => d.ids).sort()).toEqual(["1", "2", "3"]);
    expect(b.deliveries.flatMap((d) => d.ids).sort()).toEqual(["1", "2", "3"]);
    const leases = db.container(leaseName);
    expect(await leaseDocs(leases, "reactions")).toHaveLength(1);
    expect(await leaseDocs(leases, "summary")).toHaveLength(1);
  });

  it("resolves connections through clientFor with preferredLocations; reads AllVersionsAndDeletes items, deletes included", async () => {
    const data = await monitoredContainer();
    const asked: unknown[] = [];
    const env = { COSMOS: t.emulator.connectionString };
    const { deliveries } = await start(
      {
        containerName: data.id,
        leaseContainerName: uniqueName("leases"),
        startFromBeginning: false,
        changeFeedMode: "AllVersionsAndDeletes",
        preferredLocations: "West Europe, North Europe",
      },
      () => {},
      {
        clientFor: (setting, o) => {
          asked.push([setting, o]);
          return createCosmosClient(resolveCosmosConnection(setting, env), o);
        },
      },
    );
    expect(asked).toEqual([
      ["COSMOS", { preferredLocations: ["West Europe", "North Europe"], role: "monitored" }],
      ["COSMOS", { preferredLocations: ["West Europe", "North Europe"], role: "leases" }],
    ]);
    // Give the processor its first (empty) read so its start position is pinned before the writes.
    await new Promise((r) => setTimeout(r, 300));
    await data.items.create({ id: "v", pk: "p" });
    await data.item("v", "p").delete();
    const all: unknown[] = [];
    await waitUntil("create and delete", () => {
      all.splice(0, all.length, ...deliveries.flatMap((d) => d.raw));
      return all.length >= 2;
    });
    const ops = (all as Array<{ metadata?: { operationType?: string } }>).map(
      (i) => i.metadata?.operationType,
    );
    expect(ops).toEqual(["create", "delete"]);
    expect((all[0] as { current?: { id?: string } }).current?.id).toBe("v");
  });

  it("startFromTime: only changes from that time on", async () => {
    const data = await monitoredContainer();
    await data.items.create({ id: "old", pk: "p" });
    // The change feed's start time has one-second resolution (If-Modified-Since).
    await new Promise((r) => setTimeout(r, 1_100));
    const from = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 50));
    await data.items.create({ id: "new", pk: "p" });
    const { deliveries } = await start(
      {
        containerName: data.id,
        leaseContainerName: uniqueName("leases"),
        startFromBeginning: false,
        startFromTime: from,
      },
      () => {},
    );
    await waitUntil("the new document", () => deliveries.length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(deliveries.flatMap((d) => d.ids)).toEqual(["new"]);
  });

  it("maxItemsPerInvocation 2: a transactional batch of 5 is one invocation of 5, checkpointed after it", async () => {
    // The trigger docs (maxItemsPerInvocation): "transaction scope is preserved when reading items from the change
    // feed. As a result, the number of items received could be higher than the specified value so that the items
    // changed by the same transaction are returned as part of one atomic batch." The batch shares one LSN
    // (https://github.com/Azure/azure-cosmos-dotnet-v3/issues/2644), which no page splits.
    const data = await monitoredContainer();
    await data.items.create({ id: "s1", pk: "p" });
    const tx = ["b1", "b2", "b3", "b4", "b5"];
    const res = await data.items.batch(
      tx.map((id) => ({ operationType: BulkOperationType.Create, resourceBody: { id, pk: "p" } })),
      "p",
    );
    expect(res.code).toBe(200);
    await data.items.create({ id: "s2", pk: "p" });
    await data.items.create({ id: "s3", pk: "p" });
    const { trigger, deliveries } = await start(
      { containerName: data.id, leaseContainerName: uniqueName("leases"), maxItemsPerInvocation: 2 },
      () => {},
    );
    await waitUntil("every document", () => deliveries.flatMap((d) => d.ids).length >= 8);
    // s1 (LSN 1) and b1 fill a page of 2 inside the batch's LSN 2: the page takes the rest of it.
    expect(deliveries.map((d) => d.ids)).toEqual([
      ["s1", ...tx],
      ["s2", "s3"],
    ]);
    await waitUntil("the checkpoint after the last page", async () => {
      const docs = await leaseDocs(trigger.leaseContainer, "");
      return docs.length === 1 && docs[0].ContinuationToken === '"4"';
    });
  });

  it("missing containers: a clear error, or created with a log line when createMissing is set", async () => {
    const missing = uniqueName("missing");
    const error = await start(
      {
        containerName: missing,
        leaseContainerName: uniqueName("leases"),
        createLeaseContainerIfNotExists: false,
      },
      () => {},
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CosmosTriggerError);
    expect((error as CosmosTriggerError).code).toBe("ContainerNotFound");
    expect((error as Error).message).toMatch(/Both containers must exist before the listener starts/);

    const dbName = uniqueName("newdb");
    const created = await start(
      { databaseName: dbName, containerName: "resources", createLeaseContainerIfNotExists: false },
      () => {},
      {
        createMissing: true,
        containerDefinition: (d, c) =>
          d === dbName && c === "resources"
            ? { partitionKey: { paths: ["/sub"] }, throughput: 500 }
            : undefined,
      },
    );
    const { resource } = await t.client.database(dbName).container("resources").read();
    expect(resource?.partitionKey?.paths).toEqual(["/sub"]);
    // The definition's throughput too (containers.json's, as Bicep gives it), said in the log line.
    const offer = await t.client.database(dbName).container("resources").readOffer();
    expect(offer.resource?.content?.offerThroughput).toBe(500);
    expect(created.logs.map((l) => l.message)).toContainEqual(
      expect.stringMatching(/^Created container '.*\/resources' \(.*, 500 RU\/s\)\.$/),
    );
    expect(
      created.logs.filter((l) => l.message.startsWith("Created ")).map((l) => l.message.split(" (")[0]),
    ).toEqual([
      `Created database '${dbName}'`,
      `Created container '${dbName}/resources'`,
      `Created container '${dbName}/leases'`,
    ]);
    await created.trigger.stop();
    await t.client.database(dbName).delete();
  });
});

describe("startCosmosTrigger refusals", () => {
  it("a lease container with the wrong partition key or TTL off: the processor's error, with the function's name", async () => {
    const data = await monitoredContainer();
    const noTtl = uniqueName("leases");
    await db.containers.create({ id: noTtl, partitionKey: { paths: ["/id"] } });
    const error = await start({ containerName: data.id, leaseContainerName: noTtl }, () => {}).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CosmosTriggerError);
    expect((error as Error).message).toMatch(/^Function 'onChange': The lease container '.*' has TTL off/);

    const wrongKey = uniqueName("leases");
    await db.containers.create({ id: wrongKey, partitionKey: { paths: ["/pk"] }, defaultTtl: -1 });
    const error2 = await start({ containerName: data.id, leaseContainerName: wrongKey }, () => {}).catch(
      (e: unknown) => e,
    );
    expect(error2).toBeInstanceOf(CosmosTriggerError);
    expect((error2 as Error).message).toMatch(/partition key/i);
  });
});

describe("resolveCosmosTriggerOptions", () => {
  const base = { connection: "COSMOS", databaseName: "db", containerName: "items" };

  it("applies the extension's defaults (ms) and keeps values as given", () => {
    expect(
      resolveCosmosTriggerOptions("f", { ...base, type: "cosmosDBTrigger", direction: "in", name: "docs" }),
    ).toEqual({
      ...base,
      leaseConnection: "COSMOS",
      leaseDatabaseName: "db",
      leaseContainerName: "leases",
      leaseContainerPrefix: "",
      createLeaseContainerIfNotExists: false,
      leasesContainerThroughput: undefined,
      feedPollDelay: 5000,
      leaseAcquireInterval: 13000,
      leaseExpirationInterval: 60000,
      leaseRenewInterval: 17000,
      maxItemsPerInvocation: undefined,
      startFromBeginning: false,
      startFromTime: undefined,
      mode: "latestVersion",
      preferredLocations: [],
      extensionMajor: 4,
    });
    expect(
      resolveCosmosTriggerOptions("f", {
        ...base,
        feedPollDelay: 0,
        // A numeric string (metadata built by hand, function.json) is read as ms too.
        ...({ leaseRenewInterval: "2000" } as Record<string, unknown>),
        maxItemsPerInvocation: 10,
        preferredLocations: "West Europe, North Europe",
        changeFeedMode: "AllVersionsAndDeletes",
      }),
    ).toMatchObject({
      feedPollDelay: 5000,
      leaseRenewInterval: 2000,
      maxItemsPerInvocation: 10,
      preferredLocations: ["West Europe", "North Europe"],
      mode: "allVersionsAndDeletes",
    });
  });

  it("warns once per ignored option, naming the v4 name of a v3 one", () => {
    const warnings: string[] = [];
    resolveCosmosTriggerOptions(
      "f",
      { ...base, leaseCollectionName: "old", checkpointInterval: 5, colour: "blue" },
      (m) => warnings.push(m),
    );
    expect(warnings).toEqual([
      "Function 'f': cosmosDBTrigger option 'leaseCollectionName' is a v3 (extension bundle 3) name and is ignored; the v4 name is 'leaseContainerName'.",
      "Function 'f': cosmosDBTrigger option 'checkpointInterval' is a v3 (extension bundle 3) name and is ignored; extension 4 has no such option.",
      "Function 'f': cosmosDBTrigger option 'colour' is not a Cosmos DB trigger option and is ignored.",
    ]);
  });

  it("reads the v3 names with extension bundle 3 (Cosmos DB extension 3.x), as that extension does", () => {
    const warnings: string[] = [];
    const v3 = {
      connectionStringSetting: "COSMOS3",
      databaseName: "db",
      collectionName: "items",
      leaseConnectionStringSetting: "LEASES3",
      leaseDatabaseName: "leasedb",
      leaseCollectionName: "leases3",
      leaseCollectionPrefix: "p-",
      createLeaseCollectionIfNotExists: true,
      leasesCollectionThroughput: 400,
      checkpointInterval: 1000,
      leaseCollectionThroughput: 500,
      startFromTime: "2021-02-16T14:19:29Z",
    };
    expect(resolveCosmosTriggerOptions("f", v3, (m) => warnings.push(m), 3)).toMatchObject({
      connection: "COSMOS3",
      databaseName: "db",
      containerName: "items",
      leaseConnection: "LEASES3",
      leaseDatabaseName: "leasedb",
      leaseContainerName: "leases3",
      leaseContainerPrefix: "p-",
      createLeaseContainerIfNotExists: true,
      leasesContainerThroughput: 400,
      startFromTime: undefined,
      extensionMajor: 3,
    });
    expect(warnings).toEqual([
      "Function 'f': cosmosDBTrigger option 'checkpointInterval' is not honoured by the dev host: the dev host checkpoints after every batch, as extension 4.x does.",
      "Function 'f': cosmosDBTrigger option 'leaseCollectionThroughput' is not read by extension 3 (its name is 'leasesCollectionThroughput') and is ignored.",
      "Function 'f': cosmosDBTrigger option 'startFromTime' is a v4 (extension bundle 4) option and is ignored: extension 3 has no such option.",
    ]);
    // Extension 3.x's default connection: the setting AzureWebJobsCosmosDBConnectionStringName.
    expect(
      resolveCosmosTriggerOptions("f", { databaseName: "db", collectionName: "c" }, () => {}, 3).connection,
    ).toBe("AzureWebJobsCosmosDBConnectionStringName");
    // Without a bundle, a binding written with the v3 names is read as v3.
    expect(resolveCosmosTriggerOptions("f", v3, () => {})).toMatchObject({
      containerName: "items",
      extensionMajor: 3,
    });
  });

  it("without 'connection', extension 4.x reads the setting CosmosDB (Constants.DefaultConnectionStringName)", () => {
    const warnings: string[] = [];
    const raw = { databaseName: "db", containerName: "c", connectionStringSetting: "X" };
    const resolved = resolveCosmosTriggerOptions("f", raw, (w) => warnings.push(w), 4);
    expect(resolved).toMatchObject({ connection: "CosmosDB", leaseConnection: "CosmosDB" });
    expect(warnings.join("\n")).toContain(
      "'connectionStringSetting' is a v3 (extension bundle 3) name and is ignored",
    );
  });

  it("refuses v4 names with extension bundle 3, naming the v3 name", () => {
    const call = () => resolveCosmosTriggerOptions("f", base, () => {}, 3);
    expect(call).toThrowError(CosmosTriggerError);
    expect(call).toThrowError(
      "Function 'f' (cosmosDBTrigger): 'collectionName' is required. It has the v4 name 'containerName': host.json's extension bundle brings extension 3, which reads 'collectionName'; use 'collectionName', or extension bundle 4 (\"[4.*, 5.0.0)\") for the v4 names.",
    );
  });

  it.each([
    [{ databaseName: "db", containerName: "c", connection: "" }, /'connection' is required/],
    [
      { ...base, containerName: undefined, collectionName: "c" },
      /v3 name 'collectionName': use 'containerName'/,
    ],
    [{ ...base, leaseContainerName: "ITEMS" }, /cannot be the same as the container storing the leases/],
    [{ ...base, feedPollDelay: -1 }, /'feedPollDelay' must be a number of milliseconds/],
    [{ ...base, leaseRenewInterval: "soon" }, /'leaseRenewInterval'/],
    [{ ...base, startFromTime: "yesterday" }, /ISO 8601/],
    [{ ...base, startFromTime: "2021-02-16T14:19:29Z", startFromBeginning: true }, /Only one of/],
    [{ ...base, changeFeedMode: "Everything" }, /changeFeedMode/],
    [{ ...base, maxItemsPerInvocation: 2.5 }, /maxItemsPerInvocation/],
    [{ ...base, createLeaseContainerIfNotExists: "yes" }, /true or false/],
  ])("refuses %j", (raw, message) => {
    const call = () => resolveCosmosTriggerOptions("f", raw as CosmosTriggerOptions);
    expect(call).toThrowError(CosmosTriggerError);
    expect(call).toThrowError(message);
  });
});
