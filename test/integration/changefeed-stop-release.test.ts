/**
 * stop() leaves every lease released (Owner null), even one whose supervisor was not among those it released:
 * a lease closed on its local deadline while its document still names this host (a renewal slower than
 * expiration − margin, as on a loaded machine), or a lease whose release write failed. Faults are injected
 * into the real SDK's pipeline (test/support/faults.ts); the emulator and the lease documents are real.
 */
import type { Container, Database, RequestContext } from "@azure/cosmos";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { settled, waitUntil } from "../../bench/lib/until.js";
import {
  type ChangeFeedProcessor,
  createChangeFeedProcessor,
} from "../../packages/changefeed/src/processor.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import { type FaultRule, faultPlugins, serviceError } from "../support/faults.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";

/** How long a held lease write waits before it is sent (ms): far past the local deadline of FAST_INTERVALS. */
const HELD_WRITE_MS = 2 * FAST_INTERVALS.leaseExpirationInterval;

let t: TestEmulator;
let db: Database;
const running: ChangeFeedProcessor[] = [];

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("cfp-stop") })).database;
});
afterEach(async () => {
  await Promise.allSettled(running.splice(0).map((p) => p.stop()));
});
afterAll(async () => {
  await t.close();
});

/** A replace of a lease document in `leases`, with its body as sent. */
function leaseReplace(leases: Container, ctx: RequestContext): Record<string, unknown> | undefined {
  if (ctx.method !== "PUT" || !(ctx.path ?? "").includes(`/colls/${leases.id}/docs/`)) return undefined;
  const body: unknown = typeof ctx.body === "string" ? JSON.parse(ctx.body) : ctx.body;
  return body as Record<string, unknown>;
}

/** A host whose lease container is reached through a client with `rule` in its pipeline. */
function hostWithFaults(monitored: Container, leases: Container, name: string, rule: FaultRule) {
  const faulty = t.newClient(faultPlugins(rule));
  const p = createChangeFeedProcessor(
    {
      monitoredContainer: t.newClient().database(db.id).container(monitored.id),
      leaseContainer: faulty.database(db.id).container(leases.id),
      instanceName: name,
      handoffTimeout: 0,
      ...FAST_INTERVALS,
    },
    async () => {},
  );
  running.push(p);
  return p;
}

async function owners(leases: Container): Promise<(string | null)[]> {
  const { resources } = await leases.items
    .query<{ Owner: string | null }>("SELECT c.Owner FROM c WHERE IS_DEFINED(c.LeaseToken)")
    .fetchAll();
  return resources.map((r) => r.Owner);
}

describe("stop() releases every lease", () => {
  it("releases a lease that closed on its local deadline just before the stop (its document still names this host)", async () => {
    const { monitored, leases } = await processorContainers(db, 1);
    let hold = false;
    let held = 0;
    const p = hostWithFaults(monitored, leases, "slow-writer", {
      match: (ctx) => hold && leaseReplace(leases, ctx) !== undefined,
      run: async (_ctx, send) => {
        held++;
        await new Promise((r) => setTimeout(r, HELD_WRITE_MS));
        return send();
      },
    });
    const lost: string[] = [];
    let stopping: Promise<void> | undefined;
    p.on("lost", (_token, reason) => {
      lost.push(reason);
      // Stop at once, before a balancing round could take the lease back: the stop must release it itself.
      hold = false;
      stopping ??= p.stop();
    });
    await p.start();
    await waitUntil("the lease", () => p.ownedLeaseTokens().length === 1);
    hold = true;
    await waitUntil("the local deadline", () => stopping !== undefined);
    await settled("the stop", stopping as Promise<void>);
    expect(lost).toEqual(["expired"]);
    expect(held).toBeGreaterThan(0);
    expect(await owners(leases)).toEqual([null]);
  });

  it("retries a release that failed (503) instead of leaving the lease owned", async () => {
    const { monitored, leases } = await processorContainers(db, 2);
    let failed = 0;
    const p = hostWithFaults(monitored, leases, "unlucky", {
      match: (ctx) => leaseReplace(leases, ctx)?.Owner === null && failed < 2,
      run: async () => {
        failed++;
        throw serviceError(503);
      },
    });
    const errors: unknown[] = [];
    p.on("error", (e) => errors.push(e));
    await p.start();
    await waitUntil("both leases", () => p.ownedLeaseTokens().length === 2);
    await settled("the stop", p.stop());
    expect(failed).toBe(2);
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(await owners(leases)).toEqual([null, null]);
  });
});
