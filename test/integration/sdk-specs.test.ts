import type { Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";

// What Microsoft's own @azure/cosmos functional specs (sdk/cosmosdb/cosmos/test in Azure/azure-sdk-for-js) still saw
// differ from the service here: each behaviour as the service has it, through the unmodified SDK over a socket.

let t: TestEmulator;
let db: Database;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("specs") })).database;
});
afterAll(async () => {
  await t.close();
});

describe("indexing policy of the SDK's specs", () => {
  it.each(["/", "/?"])("accepts the first API's root path %j and answers with /*", async (path) => {
    const { resource } = await db.containers.create({
      id: uniqueName("root"),
      partitionKey: { paths: ["/pk"] },
      indexingPolicy: { includedPaths: [{ path }] },
    });
    expect(resource?.indexingPolicy?.includedPaths).toEqual([{ path: "/*" }]);
  });
});

describe("cross-partition queries of the SDK's specs", () => {
  async function seeded(count: number, doc: (i: number) => Record<string, unknown>) {
    const { container } = await db.containers.create({
      id: uniqueName("xq"),
      partitionKey: { paths: ["/pk"] },
      throughput: 12_000, // two physical partitions: the SDK fans the query out
    });
    const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
    expect(ranges.length).toBeGreaterThan(1);
    for (let i = 0; i < count; i++) await container.items.create({ id: `d${i}`, pk: `p${i}`, ...doc(i) });
    return container;
  }

  it("ends on a last page that is exactly full: no continuation, hasMoreResults() false", async () => {
    const container = await seeded(6, (i) => ({ n: i }));
    const it = container.items.query("SELECT * FROM c", { maxItemCount: 3 });
    const sizes: number[] = [];
    while (it.hasMoreResults()) {
      const { resources } = await it.fetchNext();
      sizes.push(resources.length);
      if (sizes.length > 10) break;
    }
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(6);
    expect(sizes).not.toContain(0);
    expect(it.hasMoreResults()).toBe(false);
  });

  it("GROUP BY over a field missing in some documents returns that group, its key absent", async () => {
    // Two without a team, one with team null: null and undefined are two groups, as the service keeps them.
    const teams = ["a", "b", "a", null, undefined, undefined];
    const container = await seeded(6, (i) => (teams[i] === undefined ? {} : { team: teams[i] }));
    const { resources } = await container.items
      .query("SELECT c.team, COUNT(1) AS n FROM c GROUP BY c.team")
      .fetchAll();
    const byTeam = new Map(resources.map((r: { team?: string | null; n: number }) => [r.team, r.n]));
    expect(byTeam).toEqual(
      new Map<string | null | undefined, number>([
        ["a", 2],
        ["b", 1],
        [null, 1],
        [undefined, 2],
      ]),
    );
    const missing = resources.find((r: { team?: string | null }) => r.team === undefined);
    expect(missing && "team" in missing).toBe(false);
    const { resources: values } = await container.items
      .query("SELECT VALUE c.team FROM c GROUP BY c.team")
      .fetchAll();
    // SELECT VALUE of an undefined value yields no row (as any VALUE projection of undefined).
    expect(values.sort()).toEqual(["a", "b", null]);
  });
});
