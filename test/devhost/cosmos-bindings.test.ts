import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CosmosBindingError,
  type CosmosInputOptions,
  readCosmosInput,
  toSqlQuerySpec,
  writeCosmosOutput,
} from "../../packages/devhost/src/cosmos/bindings.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

let t: TestEmulator;
let db: Database;
let items: Container;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("bind") })).database;
  items = (await db.containers.create({ id: "items", partitionKey: { paths: ["/sub"] } })).container;
  for (const [id, sub, state] of [
    ["a", "s1", "Accepted"],
    ["b", "s1", "Succeeded"],
    ["c", "s2", "Accepted"],
  ] as const) {
    await items.items.create({ id, sub, state });
  }
});
afterAll(async () => {
  await t.close();
});

const input = (extra: Record<string, unknown>): CosmosInputOptions => ({
  connection: "COSMOS",
  databaseName: db.id,
  containerName: "items",
  ...extra,
});

const ids = (v: unknown) => (v as Array<{ id: string }>).map((d) => d.id).sort();

describe("readCosmosInput", () => {
  it("by id + partitionKey from route params; a missing document is null", async () => {
    const doc = await readCosmosInput({
      client: t.client,
      options: input({ id: "{name}", partitionKey: "{sub}" }),
      triggerMetadata: { sub: "s1", name: "b" },
    });
    expect(doc).toMatchObject({ id: "b", sub: "s1", state: "Succeeded" });
    expect(
      await readCosmosInput({
        client: t.client,
        options: input({ id: "{name}", partitionKey: "{sub}" }),
        triggerMetadata: { sub: "s2", name: "b" },
      }),
    ).toBeNull();
  });

  it("by sqlQuery: {param} becomes a SQL parameter, so a value is never SQL text", async () => {
    const options = input({ sqlQuery: "SELECT * FROM c WHERE c.sub = {sub} AND c.state = {Query.state}" });
    expect(toSqlQuerySpec(options.sqlQuery as string, { sub: "s1", query: { state: "x" } })).toEqual({
      query: "SELECT * FROM c WHERE c.sub = @sub AND c.state = @Query_state",
      parameters: [
        { name: "@sub", value: "s1" },
        { name: "@Query_state", value: "x" },
      ],
    });
    expect(
      ids(
        await readCosmosInput({
          client: t.client,
          options,
          triggerMetadata: { sub: "s1", Query: { state: "Accepted" } },
        }),
      ),
    ).toEqual(["a"]);
    expect(
      await readCosmosInput({
        client: t.client,
        options,
        triggerMetadata: { sub: "s1' OR 1=1 --", Query: { state: "Accepted" } },
      }),
    ).toEqual([]);
  });

  it("with neither id nor sqlQuery: the whole container, or one partition", async () => {
    expect(ids(await readCosmosInput({ client: t.client, options: input({}) }))).toEqual(["a", "b", "c"]);
    expect(ids(await readCosmosInput({ client: t.client, options: input({ partitionKey: "s2" }) }))).toEqual([
      "c",
    ]);
  });

  it("a parameter without a value, both id and sqlQuery, or a missing container → CosmosBindingError", async () => {
    const missingParam = await readCosmosInput({
      client: t.client,
      options: input({ id: "{name}", partitionKey: "{sub}" }),
      triggerMetadata: { sub: "s1" },
    }).catch((e: unknown) => e);
    expect(missingParam).toBeInstanceOf(CosmosBindingError);
    expect(missingParam).toMatchObject({
      code: "BindingExpression",
      message: expect.stringMatching(/'name'/),
    });
    await expect(
      readCosmosInput({ client: t.client, options: input({ id: "a", sqlQuery: "SELECT * FROM c" }) }),
    ).rejects.toMatchObject({ code: "InvalidInput" });
    await expect(
      readCosmosInput({
        client: t.client,
        options: input({ containerName: "nope", id: "a", partitionKey: "s1" }),
      }),
    ).rejects.toMatchObject({ code: "ContainerNotFound" });
  });
});

describe("writeCosmosOutput", () => {
  it("upserts a document, an array, or a JSON string; nothing for null", async () => {
    const options = input({ containerName: "items" });
    expect(await writeCosmosOutput({ client: t.client, options, value: { id: "w1", sub: "s3", v: 1 } })).toBe(
      1,
    );
    expect(await writeCosmosOutput({ client: t.client, options, value: { id: "w1", sub: "s3", v: 2 } })).toBe(
      1,
    );
    expect((await items.item("w1", "s3").read()).resource).toMatchObject({ v: 2 });
    expect(
      await writeCosmosOutput({
        client: t.client,
        options,
        value: [
          { id: "w2", sub: "s3" },
          { id: "w3", sub: "s3" },
        ],
      }),
    ).toBe(2);
    expect(await writeCosmosOutput({ client: t.client, options, value: '{"id":"w4","sub":"s3"}' })).toBe(1);
    expect(await writeCosmosOutput({ client: t.client, options, value: null })).toBe(0);
    expect(ids(await readCosmosInput({ client: t.client, options: input({ partitionKey: "s3" }) }))).toEqual([
      "w1",
      "w2",
      "w3",
      "w4",
    ]);
  });

  it("checks every document before writing any (no id, not an object, not JSON)", async () => {
    const options = input({ containerName: "items" });
    await expect(
      writeCosmosOutput({ client: t.client, options, value: [{ id: "ok1", sub: "s4" }, { sub: "s4" }] }),
    ).rejects.toMatchObject({
      code: "InvalidOutput",
      message: expect.stringMatching(/item 1 .* has no string 'id'/),
    });
    await expect(writeCosmosOutput({ client: t.client, options, value: [1] })).rejects.toMatchObject({
      code: "InvalidOutput",
    });
    await expect(writeCosmosOutput({ client: t.client, options, value: "{nope" })).rejects.toMatchObject({
      code: "InvalidOutput",
    });
    expect(await readCosmosInput({ client: t.client, options: input({ partitionKey: "s4" }) })).toEqual([]);
  });

  it("a missing container: an error naming createIfNotExists, or created (partition key, RU/s) when it is set", async () => {
    const name = uniqueName("out");
    await expect(
      writeCosmosOutput({ client: t.client, options: input({ containerName: name }), value: { id: "x" } }),
    ).rejects.toMatchObject({
      code: "ContainerNotFound",
      message: expect.stringMatching(/createIfNotExists/),
    });
    const logs: string[] = [];
    const newDb = uniqueName("outdb");
    const written = await writeCosmosOutput({
      client: t.client,
      options: {
        connection: "COSMOS",
        databaseName: newDb,
        containerName: name,
        createIfNotExists: true,
        partitionKey: "/tenant",
        containerThroughput: 500,
      },
      value: [
        { id: "x", tenant: "t1" },
        { id: "y", tenant: "t2" },
      ],
      log: (_, m) => logs.push(m),
    });
    expect(written).toBe(2);
    const container = t.client.database(newDb).container(name);
    expect((await container.read()).resource?.partitionKey?.paths).toEqual(["/tenant"]);
    expect((await container.readOffer()).resource?.content?.offerThroughput).toBe(500);
    expect((await container.item("y", "t2").read()).resource).toMatchObject({ id: "y" });
    expect(logs).toEqual([
      `Created database '${newDb}' (output binding).`,
      `Created container '${newDb}/${name}' (output binding; partition key /tenant, 500 RU/s).`,
    ]);
  });
});
