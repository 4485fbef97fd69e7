/**
 * Issue 23: an entity signal is delivered exactly once across kill -9 and lease moves, and one sender's operations
 * apply in the order it sent them. Counter entities (ordered-counter.ts: the SDK's Entity handler, each `add`
 * naming its sender and the sender's own count) get adds from orchestrations (runs of signalEntity, each ended by
 * a callEntity) and from the durable client, while the task hub runs in child processes (hub-child.ts): host A
 * alone, then host B joins and a lease moves to it, then A is killed with SIGKILL and its lease moves to B, then
 * host C joins and a lease moves again. Once nothing is pending, each entity's count is the number of adds sent
 * to it — none lost, none applied twice — and no add came out of its sender's order. Everything is counted: the
 * phases move on when the entities' counts say so, never after a time.
 */
import type { ChildProcess } from "node:child_process";
import type { Container, Database } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import type { HubChildConfig } from "./hub-child.js";
import { type Child, startChild } from "./hub-children.js";
import { createHub, hubContainers, isFinished, leaseOwners } from "./hub-harness.js";
import type { AddInput, CounterState, SignallerInput } from "./ordered-counter.js";

const HUB = "OnceHub";
const KEYS = ["k0", "k1", "k2", "k3"];
/** Four batches; in each, orchestrations sending OPS adds (every CALL_EVERY-th a callEntity) and client adds. */
const BATCHES = 4;
const SENDERS_PER_BATCH = 2;
const OPS = 25;
const CALL_EVERY = 5;
/** Adds the durable client sends per batch (round robin over the entities, one at a time). */
const CLIENT_ADDS_PER_BATCH = 20;
const BATCH = SENDERS_PER_BATCH * OPS + CLIENT_ADDS_PER_BATCH;
const TOTAL = BATCHES * BATCH;

let t: TestEmulator;
let db: Database;
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-once") })).database;
});

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await t?.close();
});

/**
 * The entities' messages and every outbox document (work not applied or not delivered yet): `kind pk/id` each. An
 * orchestration's messages are not counted: a callEntity answer delivered again to a completed orchestration is not
 * what this test is about.
 */
async function pendingDocs(container: Container): Promise<string[]> {
  const { resources } = await container.items
    .query<{ kind: string; pk: string; id: string }>({
      query:
        "SELECT c.kind, c.pk, c.id FROM c WHERE c.hub = @hub AND (c.kind = 'outbox' OR (c.kind = 'message' AND STARTSWITH(c.pk, @entities)))",
      parameters: [
        { name: "@hub", value: HUB },
        { name: "@entities", value: `${HUB}|@` },
      ],
    })
    .fetchAll();
  return resources.map((d) => `${d.kind} ${d.pk}/${d.id}`);
}

describe("entities: exactly once across kill -9 and lease moves", () => {
  it("counters get every add once, in each sender's order, while hosts are killed and leases move", async () => {
    // Two physical ranges: two dispatch leases, so a joining host takes one from a live host.
    const { container, leaseContainer } = await hubContainers(db, 2);
    const base: HubChildConfig = {
      endpoint: t.emulator.endpoint,
      key: t.emulator.key,
      databaseId: db.id,
      containerId: container.id,
      leaseId: leaseContainer.id,
      hubName: HUB,
      instanceName: "A",
      // No activities here: the log stays empty.
      logFile: "/dev/null",
    };
    const host = (instanceName: string) => startChild({ ...base, instanceName }, children);
    // A client of the hub in this process: never started, it dispatches nothing.
    const client = createHub({ container, leaseContainer, hubName: HUB, orchestrators: {}, activities: {} });
    const states = async () =>
      Promise.all(
        KEYS.map(async (k) => {
          const e = await client.readEntity("counter", k);
          return e?.state === undefined ? undefined : (JSON.parse(e.state) as CounterState);
        }),
      );
    const applied = async () => (await states()).reduce((n, s) => n + (s?.count ?? 0), 0);
    const hosts: Record<string, Child> = {};
    const stderr = () =>
      Object.entries(hosts)
        .map(([name, h]) => `[${name}] ${h.stderr().slice(-1_000)}`)
        .join("\n");
    const whenApplied = async (n: number) =>
      until(`${n} of ${TOTAL} adds to be applied`, async () =>
        (await applied()) >= n ? true : undefined,
      ).catch(async (e: Error) => {
        throw new Error(`${e.message} (applied: ${await applied()})\n${stderr()}`);
      });
    const whenOwners = async (owners: string) =>
      until(`the dispatch leases to be owned by ${owners}`, async () =>
        (await leaseOwners(leaseContainer, HUB)).join() === owners ? true : undefined,
      ).catch(async (e: Error) => {
        throw new Error(`${e.message} (owners: ${await leaseOwners(leaseContainer, HUB)})\n${stderr()}`);
      });

    // Four batches of adds, one per phase, each sent before the phase's move: every move happens with adds in flight.
    const senders: string[] = [];
    const sentByClient = new Map<string, number>();
    const clientAdds: Promise<void>[] = [];
    const sendBatch = async (b: number) => {
      for (let i = b * SENDERS_PER_BATCH; i < (b + 1) * SENDERS_PER_BATCH; i++) {
        const id = `sender-${i}`;
        senders.push(id);
        const input: SignallerInput = {
          key: KEYS[i % KEYS.length] as string,
          ops: OPS,
          callEvery: CALL_EVERY,
        };
        await client.startNew("signaller", { instanceId: id, input: JSON.stringify(input) });
      }
      // The client's adds, one at a time (one sender: its order counts), alongside the phase.
      clientAdds.push(
        (async () => {
          for (let j = 0; j < CLIENT_ADDS_PER_BATCH; j++) {
            const key = KEYS[j % KEYS.length] as string;
            const n = (sentByClient.get(key) ?? 0) + 1;
            sentByClient.set(key, n);
            const add: AddInput = { s: "client", n };
            await client.signalEntity("counter", key, "add", JSON.stringify(add));
          }
        })(),
      );
      // The phase's move comes once part of this batch is applied.
      await whenApplied(b * BATCH + BATCH / 4);
    };

    hosts.A = await host("A");
    await whenOwners("A,A");
    await sendBatch(0);
    // B joins: one lease moves from A, a live host, to B.
    hosts.B = await host("B");
    await whenOwners("A,B");
    await sendBatch(1);
    // A dies with work in flight: its lease expires and moves to B.
    await hosts.A.kill();
    await whenOwners("B,B");
    await sendBatch(2);
    // C joins: a lease moves again, from B, a live host, to C.
    hosts.C = await host("C");
    await whenOwners("B,C");
    await sendBatch(3);
    await Promise.all(clientAdds);

    // Every sender done and nothing left to deliver.
    await until("every sender to finish and no outbox document to be left", async () => {
      for (const id of senders) {
        const s = await client.getStatus(id);
        if (!s || !isFinished(s)) return undefined;
      }
      return (await pendingDocs(container)).some((d) => d.startsWith("outbox")) ? undefined : true;
    }).catch(async (e: Error) => {
      throw new Error(
        `${e.message} (applied: ${await applied()}, pending: ${await pendingDocs(container)})\n${stderr()}`,
      );
    });
    // A request delivered again after its entity consumed it is a message again: a host that never saw the
    // entities (nothing cached) reads each whole, with every such copy, when the client's last signal (a `get`,
    // which changes nothing) reaches it. Then no entity has anything pending: what they hold is final.
    await hosts.B.stop();
    await hosts.C.stop();
    hosts.D = await host("D");
    for (const k of KEYS) await client.signalEntity("counter", k, "get", null);
    await until("no entity to have anything pending", async () =>
      (await pendingDocs(container)).length === 0 ? true : undefined,
    ).catch(async (e: Error) => {
      throw new Error(
        `${e.message} (applied: ${await applied()}, pending: ${(await pendingDocs(container)).join(", ")}, states: ${JSON.stringify(await states())})\n${stderr()}`,
      );
    });
    for (const id of senders) expect((await client.getStatus(id))?.runtimeStatus, id).toBe("Completed");
    const final = await states();
    const expected = KEYS.map((k, i) => {
      const mine = senders.filter((_s, j) => j % KEYS.length === i);
      return {
        count: mine.length * OPS + (sentByClient.get(k) ?? 0),
        last: Object.fromEntries([...mine.map((s) => [s, OPS]), ["client", sentByClient.get(k) ?? 0]]),
        disorder: [],
      };
    });
    expect(final).toEqual(expected);
    expect(final.reduce((n, s) => n + (s?.count ?? 0), 0)).toBe(TOTAL);
    await hosts.D.stop();
  });
});
