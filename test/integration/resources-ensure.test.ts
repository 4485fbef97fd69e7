import { HttpRequest, InvocationContext } from "@azure/functions";
import { afterAll, beforeAll, expect, it } from "vitest";
import { getHealth } from "../../functions/admin.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

// The functions' own path on an empty account: COSMOS_ENSURE_CONTAINERS=true creates the database and every
// container of containers.json, with its partition key and TTL, on first use.

let t: TestEmulator;
beforeAll(async () => {
  t = await startTestEmulator();
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
  process.env.COSMOS_ENSURE_CONTAINERS = "true";
});
afterAll(async () => {
  delete process.env.COSMOS_CONNECTION;
  delete process.env.COSMOS_ENSURE_CONTAINERS;
  await t?.close();
});

it("creates what containers.json defines on first use, then reports healthy", async () => {
  const before = await t.client.databases.readAll().fetchAll();
  expect(before.resources.map((d) => d.id)).not.toContain("cosmos-feed-app");
  const res = await getHealth(
    new HttpRequest({ method: "GET", url: "http://localhost:7071/api/health" }),
    new InvocationContext(),
  );
  expect(res.status).toBe(200);
  const db = t.client.database("cosmos-feed-app");
  const { resource: leases } = await db.container("leases").read();
  expect(leases?.partitionKey?.paths).toEqual(["/id"]);
  expect(leases?.defaultTtl).toBe(-1);
  const { resource: resources } = await db.container("resources").read();
  expect(resources?.partitionKey?.paths).toEqual(["/subscriptionId"]);
  const { resource: locks } = await db.container("locks").read();
  expect(locks?.defaultTtl).toBe(60);
});
