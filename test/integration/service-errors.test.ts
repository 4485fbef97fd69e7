/**
 * The service's error texts, the ones SDKs and users match on: `Message: {"Errors":[…]}` with the service's own
 * sentence first (404 "Resource Not Found", 412 "One of the specified pre-condition is not met", 413 "Request size is
 * too large", an invalid partition key path's "could not be accepted").
 */
import { BulkOperationType, type Database, type ErrorResponse } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { errorOf } from "../support/sdk-error.js";

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("errors") })).database;
});
afterAll(async () => {
  await t.close();
});

/** The `Errors` array of a service message (`Message: {"Errors":[…]}` then the ActivityId line). */
function errorsOf(e: ErrorResponse): string[] {
  const m = /^Message: (\{.*\})\r?\n/.exec(e.message);
  if (!m) throw new Error(`not a service message: ${e.message}`);
  return (JSON.parse(m[1] as string) as { Errors: string[] }).Errors;
}

describe("the service's error texts", () => {
  it("404 on a missing item, container and database says 'Resource Not Found'", async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    // The JS SDK answers a point read's 404 without throwing; a replace of a missing item throws.
    const replaced = await errorOf(() => container.item("nope", "A").replace({ id: "nope", pk: "A" }));
    expect(replaced.code).toBe(404);
    expect(errorsOf(replaced)[0]).toBe(
      "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found",
    );
    const missingContainer = await errorOf(() => db.container("absent").read());
    expect(missingContainer.code).toBe(404);
    expect(errorsOf(missingContainer)).toEqual([
      "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found",
      `Container 'absent' does not exist in database '${db.id}'.`,
    ]);
    const missingDb = await errorOf(() => t.client.database("absent-db").read());
    expect(errorsOf(missingDb)[0]).toBe(
      "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found",
    );
  });

  it("412 on a stale etag says 'One of the specified pre-condition is not met', for single writes and batches", async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    await container.items.create({ id: "a", pk: "A", n: 1 });
    const stale = await errorOf(() =>
      container
        .item("a", "A")
        .replace({ id: "a", pk: "A", n: 2 }, { accessCondition: { type: "IfMatch", condition: '"0"' } }),
    );
    expect(stale.code).toBe(412);
    expect(errorsOf(stale)).toEqual([
      "One of the specified pre-condition is not met. Learn more: https://aka.ms/CosmosDB/sql/errors/precondition-failed",
    ]);
    const patched = await errorOf(() =>
      container
        .item("a", "A")
        .patch({ condition: "FROM c WHERE c.n = 5", operations: [{ op: "set", path: "/n", value: 3 }] }),
    );
    expect(patched.code).toBe(412);
    expect(errorsOf(patched)[0]).toMatch(/^One of the specified pre-condition is not met/);
  });

  it('an oversized bulk\'s 413 carries the service\'s {"Errors":["Request size is too large", …]}', async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    const pad = "x".repeat(700 * 1024);
    const e = await errorOf(() =>
      container.items.batch(
        [0, 1, 2].map((i) => ({
          operationType: BulkOperationType.Create,
          resourceBody: { id: `b${i}`, pk: "A", pad },
        })),
        "A",
      ),
    );
    expect(e.message).toContain('{"Errors":["Request size is too large",');
  });

  it("an invalid partition key path gets the service's 'could not be accepted' text", async () => {
    for (const [path, at] of [
      ["pk", 0],
      ["/pk/", 3],
      ["/a/*", 3],
    ] as const) {
      const e = await errorOf(() =>
        db.containers.create({ id: uniqueName("c"), partitionKey: { paths: [path] } }),
      );
      expect(e.code).toBe(400);
      expect(errorsOf(e)).toEqual([
        `The partition key component definition path '${path}' could not be accepted, failed near position '${at}'. Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character.`,
      ]);
    }
  });
});
