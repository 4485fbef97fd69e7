import { Agent } from "node:https";
import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selfSignedCertificate } from "../../bench/lib/tls.js";
import { type RunningEmulator, startEmulator } from "../../packages/emulator/src/index.js";

const certificate = selfSignedCertificate("emu-tls");
let emu: RunningEmulator;
let client: CosmosClient;

beforeAll(async () => {
  emu = await startEmulator({
    port: 0,
    tls: { certFile: certificate.certFile, keyFile: certificate.keyFile },
  });
  client = new CosmosClient({
    endpoint: emu.endpoint,
    key: emu.key,
    agent: new Agent({ rejectUnauthorized: false }),
  });
});
afterAll(async () => {
  client.dispose();
  await emu.close();
  certificate.remove();
});

describe("HTTPS", () => {
  it("serves the SDK over TLS and advertises https locations", async () => {
    expect(emu.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
    const account = await client.getDatabaseAccount();
    expect(account.resource?.writableLocations[0].databaseAccountEndpoint).toBe(emu.endpoint);
    const { database } = await client.databases.create({ id: "tls" });
    const { container } = await database.containers.create({ id: "c", partitionKey: "/pk" });
    await container.items.create({ id: "a", pk: "x" });
    expect((await container.item("a", "x").read()).statusCode).toBe(200);
    const feed = await container.items
      .getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() })
      .readNext();
    expect(feed.result.length).toBe(1);
  });
});
