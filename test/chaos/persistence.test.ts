import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChangeFeedStartFrom, CosmosClient, StatusCodes } from "@azure/cosmos";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../bench/lib/until.js";
import { spawnEmulator } from "../support/child.js";

const dataDir = mkdtempSync(join(tmpdir(), "cosmos-emu-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Doc {
  id: string;
  pk: string;
  n: number;
}

/** No retries: a request either is acknowledged by this emulator process or fails when it dies. */
const clientFor = (endpoint: string, key: string) =>
  new CosmosClient({
    endpoint,
    key,
    connectionPolicy: {
      retryOptions: { maxRetryAttemptCount: 0, fixedRetryIntervalInMilliseconds: 0, maxWaitTimeInSeconds: 0 },
    },
  });

describe("persistence across kill -9", () => {
  it("keeps every acknowledged write, the range layout and change feed positions", async () => {
    const first = await spawnEmulator({ port: 0, dataDir });
    const client = clientFor(first.endpoint, first.key);
    const { database } = await client.databases.create({ id: "crash" });
    const { container } = await database.containers.create(
      { id: "docs", partitionKey: { paths: ["/pk"], version: 2 } },
      { offerThroughput: 20_000 },
    );
    for (let i = 0; i < 50; i++) await container.items.create<Doc>({ id: `pre${i}`, pk: `p${i % 7}`, n: i });
    await container.item("pre1", "p1").replace<Doc>({ id: "pre1", pk: "p1", n: 1000 });
    await container.item("pre2", "p2").delete();
    const rangesBeforeSplit = (await container.getFeedRanges()).length;
    // Split a range through the admin API, so the layout must survive too.
    const { rawRequest } = await import("../support/raw.js");
    const split = await rawRequest(first.endpoint, first.key, "POST", "/_emulator/split", {
      body: { databaseId: "crash", containerId: "docs", rangeId: "0" },
    });
    expect(split.status).toBe(200);
    const feed = container.items.getChangeFeedIterator<Doc>({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
    });
    let token = "";
    let before = 0;
    for (;;) {
      const res = await feed.readNext();
      token = res.continuationToken;
      if (res.statusCode === StatusCodes.NotModified) break;
      before += res.result.length;
    }
    expect(before).toBe(49);

    // Writers keep writing; kill -9 lands while requests are in flight.
    const acknowledged = new Set<string>();
    let stop = false;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const id = `w${w}-${i}`;
        try {
          await container.items.create<Doc>({ id, pk: `p${i % 11}`, n: i });
          acknowledged.add(id);
        } catch {
          return;
        }
      }
    });
    // A number of writes, not a duration: a slower machine takes longer to get there, it does not write fewer.
    await waitUntil("200 acknowledged writes", () => acknowledged.size >= 200);
    first.process.kill("SIGKILL");
    await first.exited;
    stop = true;
    await Promise.all(writers);
    client.dispose();
    expect(acknowledged.size).toBeGreaterThanOrEqual(200);

    const second = await spawnEmulator({ port: first.port, dataDir });
    const client2 = clientFor(second.endpoint, second.key);
    try {
      const c2 = client2.database("crash").container("docs");
      const { resources: ids } = await c2.items.query<string>("SELECT VALUE c.id FROM c").fetchAll();
      const present = new Set(ids);
      const lost = [...acknowledged].filter((id) => !present.has(id));
      expect(lost).toEqual([]);
      expect((await c2.item("pre1", "p1").read<Doc>()).resource?.n).toBe(1000);
      expect((await c2.item("pre2", "p2").read()).statusCode).toBe(404);
      expect((await c2.getFeedRanges()).length).toBe(rangesBeforeSplit + 1);

      // The continuation taken before the crash resumes after it: exactly the writes made since.
      await c2.items.create<Doc>({ id: "after-restart", pk: "p0", n: 0 });
      const resumed = c2.items.getChangeFeedIterator<Doc>({
        changeFeedStartFrom: ChangeFeedStartFrom.Continuation(token),
      });
      const seen: string[] = [];
      for (;;) {
        const res = await resumed.readNext();
        if (res.statusCode === StatusCodes.NotModified) break;
        seen.push(...res.result.map((d) => d.id));
      }
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toContain("after-restart");
      expect(seen.some((id) => id.startsWith("pre"))).toBe(false);
      for (const id of acknowledged) expect(seen).toContain(id);
    } finally {
      client2.dispose();
      second.process.kill("SIGTERM");
      await second.exited;
    }
  });
});
