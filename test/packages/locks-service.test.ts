// Scenario 4 (issue 33): @cosmos-feed/locks on its own in a small HTTP service (fixtures/locks-service/server.mjs),
// installed from the locks and core tarballs with @azure/cosmos from the registry — no emulator, no dev host, no
// change feed in its node_modules. Its Cosmos DB is the emulator package, run as a process of its own (from the
// change feed service's install: it is this service's infrastructure, as Azure would be).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliRun, killAll } from "../support/start-cli.js";
import { jsonLine, outside, runOutside } from "./support/outside.js";

const runs: CliRun[] = [];
let base = "";

beforeAll(async () => {
  const { scenarios } = outside();
  const emulator = runOutside(process.execPath, ["emulator.mjs"], scenarios.changefeedService.dir, {
    RANGES: "1",
  });
  runs.push(emulator);
  const { endpoint, key } = await jsonLine<{ endpoint: string; key: string }>(emulator);
  const service = runOutside(process.execPath, ["server.mjs"], scenarios.locksService.dir, {
    COSMOS_ENDPOINT: endpoint,
    COSMOS_KEY: key,
  });
  runs.push(service);
  [, base] = await service.waitFor(/listening (http:\/\/127\.0\.0\.1:\d+)/);
});
afterAll(() => killAll(runs));

const put = (path: string, value: unknown) =>
  fetch(`${base}${path}`, { method: "PUT", body: JSON.stringify({ value }) });

describe("the locks package in a plain HTTP service", () => {
  it("installs without the emulator, the dev host or the change feed processor", () => {
    const modules = join(outside().scenarios.locksService.dir, "node_modules");
    expect(existsSync(join(modules, "@cosmos-feed", "locks", "dist", "index.js"))).toBe(true);
    for (const absent of [
      "@cosmos-feed/emulator",
      "@cosmos-feed/devhost",
      "@cosmos-feed/changefeed",
      "better-sqlite3",
    ])
      expect(existsSync(join(modules, absent)), absent).toBe(false);
  });

  it("a second writer while the first holds the item's lock gets 409 + Retry-After; the first's write lands", async () => {
    const service = runs[1];
    const first = put("/items/sku-1?gate=g1", "first");
    await service.waitFor(/holding item-sku-1 for gate g1/);
    const second = await put("/items/sku-1", "second");
    expect(second.status).toBe(409);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe("Conflict");
    // Another item is not held.
    expect((await put("/items/sku-2", "other")).status).toBe(200);
    await fetch(`${base}/gates/g1`, { method: "POST" });
    const done = await first;
    expect(done.status).toBe(200);
    expect(((await done.json()) as { value: string }).value).toBe("first");
    // The lock was released with the request: the next writer gets it at once.
    expect((await put("/items/sku-1", "third")).status).toBe(200);
    const item = (await (await fetch(`${base}/items/sku-1`)).json()) as { value: string };
    expect(item.value).toBe("third");
  });

  it("fencing: a write from a holder whose lock was superseded is refused; the current token's is not", async () => {
    const older = (await (await put("/items/sku-3", "v1")).json()) as { fencingToken: number };
    const newer = (await (await put("/items/sku-3", "v2")).json()) as { fencingToken: number };
    expect(newer.fencingToken).toBeGreaterThan(older.fencingToken);
    // The first holder's write, delayed in flight past the second acquisition, arrives now with its old token.
    const stale = await fetch(`${base}/items/sku-3/replay?token=${older.fencingToken}`, {
      method: "PUT",
      body: JSON.stringify({ value: "late" }),
    });
    expect(stale.status).toBe(412);
    expect(((await stale.json()) as { error: { code: string } }).error.code).toBe("StaleFencingToken");
    expect(((await (await fetch(`${base}/items/sku-3`)).json()) as { value: string }).value).toBe("v2");
    // The same path with the current token writes: the refusal above is the token's, not the path's.
    const current = await fetch(`${base}/items/sku-3/replay?token=${newer.fencingToken}`, {
      method: "PUT",
      body: JSON.stringify({ value: "v3" }),
    });
    expect(current.status).toBe(200);
    expect(((await (await fetch(`${base}/items/sku-3`)).json()) as { value: string }).value).toBe("v3");
  });
});
