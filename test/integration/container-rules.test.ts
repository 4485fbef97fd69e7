/**
 * Container and query settings the service refuses or fills in: a geospatialConfig that does not fit the spatial
 * indexes, a ResponseContinuationTokenLimitInKb of 0, the system partition key of a legacy container.
 */
import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.createIfNotExists({ id: uniqueName("rules") })).database;
});
afterAll(async () => {
  await t.close();
});

const raw = (method: string, path: string, options?: Parameters<typeof rawRequest>[4]) =>
  rawRequest(t.emulator.endpoint, t.emulator.key, method, path, options);

const spatial = (boundingBox?: object) => ({
  indexingMode: "consistent",
  includedPaths: [{ path: "/*" }],
  spatialIndexes: [{ path: "/region/?", types: ["Polygon"], ...(boundingBox ? { boundingBox } : {}) }],
});
const box = { xmin: 0, ymin: 0, xmax: 10, ymax: 10 };

describe("geospatialConfig against the spatial indexes", () => {
  it("Geometry without a boundingBox → 400; Geography with one → 400; the fitting pairs are created", async () => {
    const create = (geospatialConfig: object, indexingPolicy: object) =>
      raw("POST", `/dbs/${db.id}/colls`, {
        body: { id: uniqueName("geo"), partitionKey: { paths: ["/pk"] }, geospatialConfig, indexingPolicy },
      });
    const noBox = await create({ type: "Geometry" }, spatial());
    expect(noBox.status).toBe(400);
    expect((noBox.body as { message: string }).message).toContain("needs a boundingBox");
    const geographyBox = await create({ type: "Geography" }, spatial(box));
    expect(geographyBox.status).toBe(400);
    expect((await create({ type: "Geometry" }, spatial(box))).status).toBe(201);
    expect((await create({ type: "Geography" }, spatial())).status).toBe(201);
  });
});

describe("ResponseContinuationTokenLimitInKb", () => {
  it("0 → 400; 1 is accepted", async () => {
    const { container } = await db.containers.create({ id: uniqueName("c"), partitionKey: "/pk" });
    const q = (limit: string) =>
      raw("POST", `/dbs/${db.id}/colls/${container.id}/docs`, {
        body: { query: "SELECT * FROM c", parameters: [] },
        headers: {
          "content-type": "application/query+json",
          "x-ms-documentdb-isquery": "true",
          "x-ms-documentdb-query-enablecrosspartition": "true",
          "x-ms-documentdb-responsecontinuationtokenlimitinkb": limit,
        },
      });
    const zero = await q("0");
    expect(zero.status).toBe(400);
    expect((zero.body as { code: string }).code).toBe("BadRequest");
    expect((await q("1")).status).toBe(200);
  });
});

describe("a legacy container without a partition key", () => {
  it("gets /_partitionKey marked as the system key (x-ms-version 2018-08-31)", async () => {
    const id = uniqueName("legacy");
    const res = await raw("POST", `/dbs/${db.id}/colls`, {
      body: { id },
      headers: { "x-ms-version": "2018-08-31" },
    });
    expect(res.status).toBe(201);
    expect((res.body as { partitionKey: unknown }).partitionKey).toEqual({
      paths: ["/_partitionKey"],
      kind: "Hash",
      version: 1,
      systemKey: true,
    });
    const { resource } = await db.container(id).read();
    expect(resource?.partitionKey?.systemKey).toBe(true);
  });
});
