import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningEmulator, startEmulator } from "../../src/emulator/index.js";

const dir = mkdtempSync(join(tmpdir(), "emu-tls-"));
let emu: RunningEmulator;
let client: CosmosClient;

beforeAll(async () => {
  // A throw-away self-signed certificate for 127.0.0.1.
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  emu = await startEmulator({
    port: 0,
    tls: { certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem") },
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
  rmSync(dir, { recursive: true, force: true });
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
