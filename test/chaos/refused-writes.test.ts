import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ChangeFeedStartFrom,
  type Container,
  CosmosClient,
  type OperationInput,
  StatusCodes,
} from "@azure/cosmos";
import { afterAll, describe, expect, it } from "vitest";
import { spawnEmulator } from "../support/child.js";

const dataDir = mkdtempSync(join(tmpdir(), "cosmos-emu-refused-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Doc {
  id: string;
  pk: string;
  blob?: string;
}

const clientFor = (endpoint: string, key: string) =>
  new CosmosClient({
    endpoint,
    key,
    connectionPolicy: {
      retryOptions: { maxRetryAttemptCount: 0, fixedRetryIntervalInMilliseconds: 0, maxWaitTimeInSeconds: 0 },
    },
  });

/** Reads a feed from a continuation until 304; returns the ids seen and the continuation to resume from. */
async function drain(
  container: Container,
  from: string | undefined,
): Promise<{ ids: string[]; token: string }> {
  const it = container.items.getChangeFeedIterator<Doc>({
    changeFeedStartFrom:
      from === undefined ? ChangeFeedStartFrom.Beginning() : ChangeFeedStartFrom.Continuation(from),
  });
  const ids: string[] = [];
  for (;;) {
    const res = await it.readNext();
    if (res.statusCode === StatusCodes.NotModified) return { ids, token: res.continuationToken };
    ids.push(...res.result.map((d) => d.id));
  }
}

/** Each refusal the service gives without applying anything; none may take an LSN. */
const refusals: ((c: Container, i: number) => Promise<number>)[] = [
  // 413: the document is larger than 2 MB.
  async (c, i) =>
    (
      await c.items
        .create<Doc>({ id: `big${i}`, pk: "p", blob: "x".repeat(2 * 1024 * 1024 + 10) })
        .catch((e) => e)
    ).code,
  // A transactional batch whose last operation fails: the creates before it are not applied.
  async (c, i) => {
    const ops: OperationInput[] = [
      { operationType: "Create", resourceBody: { id: `b${i}-1`, pk: "p" } },
      { operationType: "Create", resourceBody: { id: `b${i}-2`, pk: "p" } },
      { operationType: "Replace", id: "missing", resourceBody: { id: "missing", pk: "p" } },
    ];
    const res = await c.items.batch(ops, "p");
    return res.result?.[2]?.statusCode ?? 0;
  },
  // 409: a create over a live id.
  async (c) => (await c.items.create<Doc>({ id: "a0", pk: "p" }).catch((e) => e)).code,
  // 400: an invalid ttl.
  async (c, i) =>
    (await c.items.create({ id: `t${i}`, pk: "p", ttl: "soon" as unknown as number }).catch((e) => e)).code,
];

describe("refused writes and restarts", () => {
  it("keeps every saved change feed continuation valid across kill -9, with refused writes in between", async () => {
    const first = await spawnEmulator({ port: 0, dataDir });
    const client = clientFor(first.endpoint, first.key);
    const { database } = await client.databases.create({ id: "refused" });
    const { container } = await database.containers.create({
      id: "docs",
      partitionKey: { paths: ["/pk"], version: 2 },
      defaultTtl: -1,
    });
    // saved[k] = the continuation after step k; accepted[k] = the id written at step k.
    const saved: string[] = [];
    const accepted: string[] = [];
    let token: string | undefined;
    const statuses: number[] = [];
    // The last step ends with a refused batch: the newest continuation then points past every stored LSN
    // unless refused writes take none.
    for (let i = 0; i < 14; i++) {
      const id = `a${i}`;
      await container.items.create<Doc>({ id, pk: "p" });
      accepted.push(id);
      statuses.push(await refusals[i % refusals.length](container, i));
      const read = await drain(container, token);
      expect(read.ids).toEqual([id]);
      token = read.token;
      saved.push(token);
    }
    expect(statuses).toEqual([413, 404, 409, 400, 413, 404, 409, 400, 413, 404, 409, 400, 413, 404]);
    first.process.kill("SIGKILL");
    await first.exited;
    client.dispose();

    const second = await spawnEmulator({ port: first.port, dataDir });
    const client2 = clientFor(second.endpoint, second.key);
    try {
      const c2 = client2.database("refused").container("docs");
      // A refused write after the restart takes no LSN either; the next accepted one is delivered.
      expect(await refusals[0](c2, 99)).toBe(413);
      await c2.items.create<Doc>({ id: "after-restart", pk: "p" });
      for (let k = 0; k < saved.length; k++) {
        const resumed = await drain(c2, saved[k]);
        expect(resumed.ids).toEqual([...accepted.slice(k + 1), "after-restart"]);
      }
      const all = await drain(c2, undefined);
      expect(all.ids).toEqual([...accepted, "after-restart"]);
    } finally {
      client2.dispose();
      second.process.kill("SIGTERM");
      await second.exited;
    }
  });
});
