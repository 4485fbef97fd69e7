/**
 * Two dev hosts on one Cosmos DB account share the change feed leases of a trigger, as two Functions hosts do: the
 * unmodified fixture app (test/fixtures/app-cjs, its cosmosDB trigger `onThing`) runs in two `cosmos-feed start`
 * child processes against one emulator; the monitored container has two physical ranges, each host ends up owning
 * one lease, and every document is handled — by one of them.
 */
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppChild, startAppChild } from "../e2e/support/app-child.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

const appDir = fileURLToPath(new URL("../fixtures/app-cjs", import.meta.url));
let t: TestEmulator;
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  const { database } = await t.client.databases.createIfNotExists({ id: "fixture" });
  // 12,000 RU/s: two physical ranges (the emulator's 6,000 RU/s per range), so two leases to share.
  await database.containers.createIfNotExists(
    { id: "things", partitionKey: { paths: ["/id"] } },
    { offerThroughput: 12_000 },
  );
});

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await t?.close();
});

async function until<T>(what: string, read: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const seen = (host: AppChild) =>
  new Set([...host.output().matchAll(/saw \d+ documents: ([^\n]*)/g)].flatMap((m) => m[1].split(",")));

describe("two dev hosts on one account", () => {
  it("share the trigger's leases and handle every document between them", async () => {
    const env = { FIXTURE_COSMOS: t.emulator.connectionString };
    const conn = t.emulator.connectionString;
    const [a, b] = await Promise.all([
      startAppChild({ appDir, connectionString: conn, env, children }),
      startAppChild({ appDir, connectionString: conn, env, children }),
    ]);
    const leases = t.client.database("fixture").container("leases");
    const ownership = async () => {
      const { resources } = await leases.items
        .query<{ id: string; Owner?: string | null }>(
          "SELECT c.id, c.Owner FROM c WHERE STARTSWITH(c.id, 'fixture-') AND IS_DEFINED(c.LeaseToken)",
        )
        .fetchAll();
      return resources.map((l) => `${l.id} ${l.Owner}`).sort();
    };
    // Settled: one lease each, unchanged over several balancing rounds (the fixture balances every 500 ms).
    const owners = await until("each host to own one lease, steadily", async () => {
      const before = await ownership();
      const distinct = new Set(before.map((x) => x.split(" ")[1]));
      if (before.length !== 2 || distinct.size !== 2 || distinct.has("null")) return undefined;
      await new Promise((r) => setTimeout(r, 2_000));
      return (await ownership()).join() === before.join() ? distinct : undefined;
    });
    expect(owners.size).toBe(2);

    const things = t.client.database("fixture").container("things");
    const ids = Array.from({ length: 40 }, (_v, i) => `thing-${i}`);
    for (const id of ids) await things.items.create({ id });
    await until("every document handled", async () => {
      const all = new Set([...seen(a), ...seen(b)]);
      return ids.every((id) => all.has(id)) ? true : undefined;
    });
    // Both hosts worked, each on its own range.
    expect(seen(a).size).toBeGreaterThan(0);
    expect(seen(b).size).toBeGreaterThan(0);
  });
});
