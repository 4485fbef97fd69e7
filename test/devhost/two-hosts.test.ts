/**
 * Two dev hosts on one account share the change feed leases of a trigger, as two Functions hosts do: the
 * unmodified fixture app (test/fixtures/app-cjs, its cosmosDB trigger `onThing`) runs in two `cosmos-feed start`
 * child processes against one emulator (test/support/two-hosts.ts); the monitored container has two physical
 * ranges, each host ends up owning one lease, and every document is handled — by one of them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppChild } from "../../bench/lib/app-child.js";
import { startTwoHosts, type TwoHosts, until } from "../support/two-hosts.js";

let hosts: TwoHosts;

beforeAll(async () => {
  hosts = await startTwoHosts();
});

afterAll(async () => {
  await hosts?.close();
});

const seen = (host: AppChild) =>
  new Set([...host.output().matchAll(/saw \d+ documents: ([^\n]*)/g)].flatMap((m) => m[1].split(",")));

describe("two dev hosts on one account", () => {
  it("share the trigger's leases and handle every document between them", async () => {
    const { a, b } = hosts;
    // Settled: one lease each, unchanged over several balancing rounds (the fixture balances every 500 ms).
    const owners = await hosts.settled();
    expect(owners.size).toBe(2);

    const things = hosts.t.client.database("fixture").container("things");
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
