import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

// What Microsoft's own @azure/cosmos functional specs (sdk/cosmosdb/cosmos/test in Azure/azure-sdk-for-js) still saw
// differ from the service here: each behaviour as the service has it, through the unmodified SDK over a socket.

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("specs") })).database;
});
afterAll(async () => {
  await t.close();
});

describe("indexing policy of the SDK's specs", () => {
  it.each(["/", "/?"])("accepts the first API's root path %j and answers with /*", async (path) => {
    const { resource } = await db.containers.create({
      id: uniqueName("root"),
      partitionKey: { paths: ["/pk"] },
      indexingPolicy: { includedPaths: [{ path }] },
    });
    expect(resource?.indexingPolicy?.includedPaths).toEqual([{ path: "/*" }]);
  });
});
