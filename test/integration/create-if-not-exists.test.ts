/**
 * Hosts starting together (two Function App instances, two dev hosts) create the same database and containers at
 * once. The SDK's createIfNotExists reads, then creates on 404, so all but one of them can get 409 from the create
 * and throw; ours (packages/core/src/cosmos/ensure.ts) treats that 409 as "it exists" and reads it. Real SDK clients, each
 * with its own caches, over a real socket.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createContainerIfNotExists,
  createDatabaseIfNotExists,
} from "../../packages/core/src/cosmos/ensure.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

let emu: TestEmulator;
beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => emu.close());

const HOSTS = 12;

describe("createIfNotExists with hosts starting together", () => {
  it("every host gets the database and the container; exactly one of them created each", async () => {
    for (let round = 0; round < 5; round++) {
      const dbId = uniqueName("race-db");
      const clients = Array.from({ length: HOSTS }, () => emu.newClient());
      const results = await Promise.all(
        clients.map(async (client) => {
          const db = await createDatabaseIfNotExists(client, { id: dbId });
          const c = await createContainerIfNotExists(db.database, {
            id: "leases",
            partitionKey: { paths: ["/id"] },
            defaultTtl: -1,
          });
          return { db: db.statusCode, container: c.statusCode, ttl: c.resource?.defaultTtl };
        }),
      );
      expect(results.filter((r) => r.db === 201)).toHaveLength(1);
      expect(results.filter((r) => r.container === 201)).toHaveLength(1);
      expect(results.every((r) => [200, 201].includes(r.db) && [200, 201].includes(r.container))).toBe(true);
      // The readers see the container as created, with its settings.
      expect(results.every((r) => r.ttl === -1)).toBe(true);
    }
  });

  it("other failures still surface (a container body the service refuses)", async () => {
    const { database } = await createDatabaseIfNotExists(emu.client, { id: uniqueName("race-bad") });
    await expect(
      createContainerIfNotExists(database, { id: "bad", partitionKey: { paths: ["no-slash"] } }),
    ).rejects.toMatchObject({ code: 400 });
  });
});
