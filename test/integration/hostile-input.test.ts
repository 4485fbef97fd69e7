import {
  ChangeFeedMode,
  ChangeFeedStartFrom,
  type Container,
  type ErrorResponse,
  type OperationInput,
} from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_ITEM_NESTING } from "../../packages/emulator/src/json.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { rawRequest } from "../support/raw.js";

let t: TestEmulator;
let container: Container;
let docsPath: string;

beforeAll(async () => {
  t = await startTestEmulator();
  const { database } = await t.client.databases.create({ id: uniqueName("hostile") });
  ({ container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } }));
  docsPath = `/dbs/${database.id}/colls/c/docs`;
});
afterAll(() => t.close());

/** `{"a":{"a":…{"leaf":1}…}}`: `depth` objects, the outermost first (spread it to make an item that deep). */
function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

async function count(): Promise<number> {
  const { resources } = await container.items.query<number>("SELECT VALUE COUNT(1) FROM c").fetchAll();
  return resources[0];
}

async function alive(): Promise<void> {
  const { statusCode } = await container.read();
  expect(statusCode).toBe(200);
}

const create = (body: unknown) =>
  rawRequest(t.emulator.endpoint, t.emulator.key, "POST", docsPath, {
    headers: { "x-ms-documentdb-partitionkey": '["p"]' },
    body,
  });

describe("nesting depth", () => {
  it("refuses a body nested 10,000 levels deep with 400, not a stack overflow (500)", async () => {
    const before = await count();
    const text = `{"id":"deep","pk":"p","v":${"[".repeat(10_000)}${"]".repeat(10_000)}}`;
    const res = await create(text);
    expect(res.status).toBe(400);
    expect((res.body as { code: string }).code).toBe("BadRequest");
    expect(await count()).toBe(before);
    await alive();
  });

  it(`accepts an item nested ${MAX_ITEM_NESTING} levels (the service's limit) and refuses one level more`, async () => {
    const ok = await container.items.create({ id: "at-limit", pk: "p", ...nested(MAX_ITEM_NESTING) });
    expect(ok.statusCode).toBe(201);
    const read = await container.item("at-limit", "p").read();
    expect(read.resource?.a).toBeDefined();
    const err = (await container.items
      .create({ id: "over-limit", pk: "p", ...nested(MAX_ITEM_NESTING + 1) })
      .catch((e: ErrorResponse) => e)) as ErrorResponse;
    expect(err.code).toBe(400);
    expect(err.message).toMatch(/nests objects and arrays 129 levels deep/);
    expect((await container.item("over-limit", "p").read()).statusCode).toBe(404);
  });

  it("refuses a patch that would nest the item too deeply, leaving it unchanged", async () => {
    await container.items.create({ id: "patched", pk: "p", n: 1 });
    const err = (await container
      .item("patched", "p")
      .patch([{ op: "set", path: "/deep", value: nested(MAX_ITEM_NESTING) }])
      .catch((e: ErrorResponse) => e)) as ErrorResponse;
    expect(err.code).toBe(400);
    const { resource } = await container.item("patched", "p").read();
    expect(resource?.deep).toBeUndefined();
    expect(resource?.n).toBe(1);
  });

  it("refuses a deep item inside a transactional batch without applying the batch", async () => {
    const ops: OperationInput[] = [
      { operationType: "Create", resourceBody: { id: "batch-ok", pk: "p" } },
      {
        operationType: "Create",
        resourceBody: { id: "batch-deep", pk: "p", ...nested(MAX_ITEM_NESTING + 1) },
      },
    ];
    const res = await container.items.batch(ops, "p");
    expect(res.result?.[1]?.statusCode).toBe(400);
    expect((await container.item("batch-ok", "p").read()).statusCode).toBe(404);
  });
});

describe("bytes that are not UTF-8", () => {
  it("refuses malformed UTF-8 with 400 rather than storing replacement characters", async () => {
    const before = await count();
    const prefix = Buffer.from('{"id":"bad-utf8","pk":"p","name":"');
    const body = Buffer.concat([prefix, Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/not valid UTF-8/);
    expect(await count()).toBe(before);
    expect((await container.item("bad-utf8", "p").read()).statusCode).toBe(404);
  });

  it("a body in Cosmos binary JSON (.NET's binary encoding) is stored as the document it encodes", async () => {
    // {"id":"bin-1","pk":"p","n":300} as the .NET SDK encodes it with AZURE_COSMOS_BINARY_ENCODING_ENABLED: 0x80
    // (binary format), an object of 17 bytes, the system string "id", 5-char "bin-1", "pk", "p", "n", Int16 300.
    const body = Buffer.from("80ea112c8562696e2d3182706b8170816ec92c01", "hex");
    const res = await create(body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: "bin-1", pk: "p", n: 300 });
    expect((await container.item("bin-1", "p").read()).resource).toMatchObject({
      id: "bin-1",
      pk: "p",
      n: 300,
    });
  });

  it("a malformed body in Cosmos binary JSON is refused with a 400 that says what is wrong, and writes nothing", async () => {
    const before = await count();
    // The same document cut off inside the value of "pk".
    const res = await create(Buffer.from("80ea112c8562696e2d3182706b81", "hex"));
    expect(res.status).toBe(400);
    expect((res.body as { code: string }).code).toBe("BadRequest");
    const message = (res.body as { message: string }).message;
    expect(message).toContain("not valid Cosmos binary JSON");
    expect(message).toMatch(/at byte \d+/);
    expect(message).not.toMatch(/not valid UTF-8/);
    expect(await count()).toBe(before);
    await alive();
  });

  it("stores well-formed multi-byte UTF-8 as sent", async () => {
    const name = "Zoë 中文 🚀";
    await container.items.create({ id: "utf8", pk: "p", name });
    expect((await container.item("utf8", "p").read()).resource?.name).toBe(name);
  });
});

describe("change feed errors in the service's words", () => {
  it("answers a continuation it never issued with 'Invalid Continuation Token'", async () => {
    const res = await rawRequest(t.emulator.endpoint, t.emulator.key, "GET", docsPath, {
      headers: { "a-im": "Incremental Feed", "if-none-match": '"not-an-lsn"' },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain("Invalid Continuation Token");
  });

  it("answers a continuation ahead of the container with 'Invalid Continuation Token'", async () => {
    const res = await rawRequest(t.emulator.endpoint, t.emulator.key, "GET", docsPath, {
      headers: { "a-im": "Incremental Feed", "if-none-match": '"999999"' },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain("Invalid Continuation Token");
  });

  it("refuses all-versions-and-deletes from the beginning with the service's message", async () => {
    const iterator = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    const err = (await iterator.readNext().catch((e: ErrorResponse) => e)) as ErrorResponse;
    expect(err.code).toBe(400);
    expect(err.message).toContain("You must read the change feed from within the retention period.");
  });
});
