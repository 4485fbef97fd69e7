/**
 * The host's start check of an app's bindings (packages/devhost/src/bindingCheck.ts), on registrations as @azure/functions
 * builds them: a Cosmos DB binding written for the other extension major than host.json's bundle brings puts its
 * function in error (as the real host refuses it); names the bundle's extension does not read are warned about;
 * bindings no extension serves are listed once per function. And the partition key choice for containers the dev
 * host creates (packages/devhost/src/cosmos/containerChoice.ts).
 */
import { input, output, trigger } from "@azure/functions";
import { describe, expect, it } from "vitest";
import { checkFunctionBindings, triggerErrorLine } from "../../packages/devhost/src/bindingCheck.js";
import type { BindingInfo } from "../../packages/devhost/src/coreTypes.js";
import { chooseContainerDefinition } from "../../packages/devhost/src/cosmos/containerChoice.js";
import { readExtensionBundle } from "../../packages/devhost/src/extensionBundle.js";
import type { BindingExtensions } from "../../packages/devhost/src/extensions.js";
import type { LoadedApp, LoadedFunction } from "../../packages/devhost/src/loader.js";

function fn(name: string, bindings: BindingInfo[]): LoadedFunction {
  const byName = Object.fromEntries(bindings.map((b) => [String(b.name), b]));
  // What the host knows of a function (its handler stays with the app).
  const indexed = {
    metadata: { name, bindings: byName },
    triggerName: String(bindings[0].name),
    trigger: bindings[0],
    bindings: byName,
  };
  return indexed as unknown as LoadedFunction;
}

const http = (): BindingInfo => ({ ...trigger.http({}), direction: "in", name: "req" }) as BindingInfo;
const out = (b: object): BindingInfo => ({ ...b, direction: "out" }) as BindingInfo;
const inp = (b: object): BindingInfo => ({ ...b, direction: "in" }) as BindingInfo;

function appWith(version: string | undefined, functions: LoadedFunction[]): LoadedApp {
  const extensionBundle = version
    ? readExtensionBundle({ id: "Microsoft.Azure.Functions.ExtensionBundle", version })
    : undefined;
  return { config: { extensionBundle }, functions } as unknown as LoadedApp;
}

const cosmosServed: BindingExtensions = {
  inputs: { cosmosDB: async () => undefined },
  outputs: { cosmosDB: async () => {} },
};

const v3Input = inp(
  input.cosmosDB({
    connectionStringSetting: "C",
    databaseName: "db",
    collectionName: "items",
    id: "{id}",
  } as never),
);
const v4Input = inp(
  input.cosmosDB({ connection: "C", databaseName: "db", containerName: "items", id: "{id}" }),
);

describe("checkFunctionBindings", () => {
  it("bundle 4 refuses a binding written with the v3 names, naming the v4 name and the bundle", () => {
    const check = checkFunctionBindings(
      appWith("[4.*, 5.0.0)", [fn("read", [http(), v3Input])]),
      cosmosServed,
    );
    expect(check.inError.get("read")).toBe(
      // Its connection falls back to the setting CosmosDB (extension 4.x's default); the container has no 4.x name.
      `cosmosDB input binding '${v3Input.name}': 'containerName' is required (host.json extension bundle [4.*, 5.0.0) brings Cosmos DB extension 4.x). It has the v3 name 'collectionName': use 'containerName' (extension bundle 4), or extension bundle 3 ("[3.*, 4.0.0)" in host.json) for the v3 names.`,
    );
  });

  it("bundle 3 reads the v3 names and refuses the v4 ones; without a bundle either is read", () => {
    expect(
      checkFunctionBindings(appWith("[3.*, 4.0.0)", [fn("read", [http(), v3Input])]), cosmosServed),
    ).toEqual({
      inError: new Map(),
      warnings: [],
    });
    const v4on3 = checkFunctionBindings(
      appWith("[3.*, 4.0.0)", [fn("read", [http(), v4Input])]),
      cosmosServed,
    );
    expect(v4on3.inError.get("read")).toMatch(
      /'collectionName' is required \(host.json extension bundle \[3\.\*, 4\.0\.0\) brings Cosmos DB extension 3\.x\)\. It has the v4 name 'containerName'/,
    );
    for (const b of [v3Input, v4Input]) {
      expect(
        checkFunctionBindings(appWith(undefined, [fn("read", [http(), b])]), cosmosServed).inError.size,
      ).toBe(0);
    }
  });

  it("warns about options the bundle's extension does not read", () => {
    const o = out(
      output.cosmosDB({
        connectionStringSetting: "C",
        databaseName: "db",
        collectionName: "items",
        useMultipleWriteLocations: true,
      } as never),
    );
    const check = checkFunctionBindings(appWith("[3.*, 4.0.0)", [fn("write", [http(), o])]), cosmosServed);
    expect(check.warnings).toEqual([
      `Function 'write': cosmosDB output binding '${o.name}' option 'useMultipleWriteLocations' is not honoured by the dev host: the dev host writes through the account's default region.`,
    ]);
  });

  it("lists every binding no extension serves, once per function", () => {
    const blob = inp(input.storageBlob({ path: "a/{name}", connection: "S" }));
    const queue = out(output.storageQueue({ queueName: "q", connection: "S" }));
    const sql = inp(
      input.sql({ commandText: "SELECT 1", commandType: "Text", connectionStringSetting: "S" }),
    );
    const check = checkFunctionBindings(
      appWith("[4.*, 5.0.0)", [
        fn("mixed", [http(), blob, v4Input, queue]),
        fn("sql", [http(), sql]),
        fn("plain", [http()]),
      ]),
      cosmosServed,
    );
    expect(check.inError.size).toBe(0);
    expect(check.warnings).toHaveLength(2);
    expect(check.warnings[0]).toMatch(
      new RegExp(
        `^The 'mixed' function uses 'blob' input binding '${blob.name}', 'queue' output binding '${queue.name}', which this dev host cannot serve`,
      ),
    );
    expect(check.warnings[1]).toMatch(/^The 'sql' function uses 'sql' input binding/);
  });

  it("a trigger's start failure: one line naming the function once", () => {
    expect(
      triggerErrorLine(
        "onBad",
        new Error("Function 'onBad' (cosmosDBTrigger): Cosmos DB connection 'X' is unreachable"),
      ),
    ).toBe("The 'onBad' function is in error: Cosmos DB connection 'X' is unreachable");
    expect(triggerErrorLine("onBad", new Error("bad schedule"))).toBe(
      "The 'onBad' function is in error: bad schedule",
    );
  });
});

describe("chooseContainerDefinition", () => {
  const at = { databaseName: "db", containerName: "items" };
  it("the app's definitions first, then an output binding's path, then /id with a warning for lookups by a partition key", () => {
    const lookup = () => ({ partitionKey: { paths: ["/tenant"] }, defaultTtl: 60 });
    expect(chooseContainerDefinition({ ...at, lookup, bindings: [] })).toMatchObject({
      partitionKey: "/tenant",
      source: "the app's container definitions",
      definition: { defaultTtl: 60 },
    });
    expect(chooseContainerDefinition({ ...at, lookup, bindings: [] }).advice).toBeUndefined();
    const writer = { functionName: "w", kind: "output" as const, options: { ...at, partitionKey: "/pk" } };
    const reader = {
      functionName: "r",
      kind: "input" as const,
      options: { ...at, id: "{id}", partitionKey: "testPartKey" },
    };
    expect(chooseContainerDefinition({ ...at, bindings: [reader, writer] })).toMatchObject({
      partitionKey: "/pk",
      warnings: [],
    });
    // An output binding's partitionKey with a binding expression is not a path.
    const expression = { ...writer, options: { ...at, partitionKey: "{pk}" } };
    const fallback = chooseContainerDefinition({ ...at, bindings: [reader, expression] });
    expect(fallback).toMatchObject({
      partitionKey: "/id",
      source: "the dev host's default: the app defines no partition key for it",
    });
    expect(fallback.warnings).toEqual([
      "Function 'r' reads 'db/items' with partitionKey 'testPartKey': with partition key /id that value must be the document's id, so other documents are not found. Define the container with the partition key its documents use (--containers) or create it before starting.",
    ]);
    // A lookup whose partition key is its id works with /id: no warning.
    const byId = { ...reader, options: { ...at, id: "{id}", partitionKey: "{id}" } };
    expect(chooseContainerDefinition({ ...at, bindings: [byId] }).warnings).toEqual([]);
  });
});
