import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmulatorStartError, startEmulator } from "../../packages/emulator/src/index.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

// What docs/emulator.md ("Not implemented") says the emulator refuses, and how: each refusal as the doc quotes it.

let t: TestEmulator;
let db: string;
const c = "c";

beforeAll(async () => {
  t = await startTestEmulator();
  db = uniqueName("refusals");
  await (await t.client.databases.create({ id: db })).database.containers.create({
    id: c,
    partitionKey: "/pk",
  });
});
afterAll(async () => {
  await t.close();
});

const request = (method: string, path: string, body?: unknown) =>
  rawRequest(t.emulator.endpoint, t.emulator.key, method, path, body === undefined ? {} : { body });

describe("resources the emulator does not implement", () => {
  it.each([
    ["GET", "colls/c/sprocs", "sprocs"],
    ["POST", "colls/c/sprocs", "sprocs"],
    ["GET", "colls/c/triggers", "triggers"],
    ["GET", "colls/c/udfs", "udfs"],
    ["GET", "users", "users"],
    ["GET", "users/u/permissions", "users"],
    ["GET", "colls/c/conflicts", "conflicts"],
    ["GET", "clientencryptionkeys", "clientencryptionkeys"],
    ["POST", "clientencryptionkeys", "clientencryptionkeys"],
  ])("%s dbs/{db}/%s: a 400 naming '%s' among the resources not supported", async (method, rest, what) => {
    const res = await request(method, `/dbs/${db}/${rest}`, method === "POST" ? { id: "x" } : undefined);
    expect(res.status).toBe(400);
    const body = res.body as { code: string; message: string };
    expect(body.code).toBe("BadRequest");
    expect(body.message).toContain(
      `'${what}' resources (stored procedures, triggers, UDFs, users and permissions, conflicts, client encryption keys) are not supported by this emulator.`,
    );
  });

  it("a top-level resource other than dbs and offers is a 400 naming its type", async () => {
    const res = await request("GET", "/media/x");
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toContain(
      "Resource type 'media' is not supported by this emulator.",
    );
  });

  it("unique keys are accepted and read back, but not enforced", async () => {
    const uniqueKeyPolicy = { uniqueKeys: [{ paths: ["/email"] }] };
    const { container, resource } = await t.client
      .database(db)
      .containers.create({ id: uniqueName("u"), partitionKey: "/pk", uniqueKeyPolicy });
    expect(resource?.uniqueKeyPolicy).toEqual(uniqueKeyPolicy);
    await container.items.create({ id: "1", pk: "a", email: "x@example.com" });
    const second = await container.items.create({ id: "2", pk: "a", email: "x@example.com" });
    expect(second.statusCode).toBe(201);
  });
});

describe("rangesPerContainer", () => {
  it.each([
    0, 65, 1.5, -1,
  ])("%s is a start error (INVALID_OPTION), not a container of that many ranges", async (n) => {
    const failure = await startEmulator({ port: 0, rangesPerContainer: n }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(EmulatorStartError);
    expect((failure as EmulatorStartError).code).toBe("INVALID_OPTION");
    expect((failure as Error).message).toBe(`rangesPerContainer must be an integer from 1 to 64; got ${n}.`);
  });
});
