import { ChangeFeedStartFrom } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databaseRidOf } from "../../packages/changefeed/src/leases/ids.js";
import { decodeRid, encodeRid } from "../../packages/emulator/src/store/rid.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

let t: TestEmulator;
beforeAll(async () => {
  t = await startTestEmulator();
});
afterAll(() => t.close());

describe("resource ids in Cosmos DB's base64 alphabet", () => {
  it("writes '-' where standard base64 has '/', and reads both back", () => {
    // 00 00 00 ff → standard base64 "AAAA/w==" → the service's "AAAA-w==" (worked out by hand).
    expect(encodeRid(Uint8Array.from([0, 0, 0, 0xff]))).toBe("AAAA-w==");
    expect([...decodeRid("AAAA-w==")]).toEqual([0, 0, 0, 0xff]);
    expect([...decodeRid("AAAA/w==")]).toEqual([0, 0, 0, 0xff]);
    // Node alone would read '-' as URL-safe base64 ('+', 62): the last byte would be 0xfb.
    expect([...Buffer.from("AAAA-w==", "base64")]).toEqual([0, 0, 0, 0xfb]);
  });

  it("a database whose rid has a '-' works end to end, and its containers' rids start with its bytes", async () => {
    // Sequence 252 = 00 00 00 fc is the first whose base64 has a 63 (fc >> 2): "AAAA/A==", the service's "AAAA-A==".
    let db = "";
    let rid = "";
    for (let i = 0; i < 255 && !rid.includes("-"); i++) {
      const { resource } = await t.client.databases.create({ id: `rid-${i}` });
      db = resource?.id ?? "";
      rid = resource?._rid ?? "";
    }
    expect(rid).toBe("AAAA-A==");
    const database = t.client.database(db);
    const { resource: coll, container } = await database.containers.create({
      id: "c",
      partitionKey: { paths: ["/pk"] },
    });
    expect(coll?._rid).not.toContain("/");
    expect(coll?._self).toBe(`dbs/AAAA-A==/colls/${coll?._rid}/`);
    expect(databaseRidOf(coll?._rid ?? "")).toBe("AAAA-A==");
    const { resource: item } = await container.items.create({ id: "x", pk: "p" });
    expect(item?._self).toBe(`dbs/AAAA-A==/colls/${coll?._rid}/docs/${item?._rid}/`);
    expect((await container.item("x", "p").read()).resource?.id).toBe("x");
    const { resources } = await container.items.query("SELECT VALUE c.id FROM c").fetchAll();
    expect(resources).toEqual(["x"]);
    const feed = await container.items
      .getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() })
      .readNext();
    expect(feed.result.map((d) => d.id)).toEqual(["x"]);
  });
});
