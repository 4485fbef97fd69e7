/**
 * The leases panel's expiry: counted from the lease's own last write, one instant, whatever `now` the refresh took.
 * A refresh takes `now` before it reads the lease container, so a lease renewed while the listing is read carries a
 * timestamp after `now`; its age is shown as 0, but its expiry must still be its last write + the interval.
 */
import { CosmosClient } from "@azure/cosmos";
import { describe, expect, it } from "vitest";
import { leaseId, leasePrefix } from "../../packages/changefeed/src/leases/ids.js";
import { resolveCosmosTriggerOptions } from "../../packages/devhost/src/cosmos/triggerOptions.js";
import { readTriggerLeases, type TriggerSource } from "../../packages/devhost/src/dashboard/sources.js";
import { WELL_KNOWN_EMULATOR_KEY } from "../../packages/emulator/src/index.js";

const ENDPOINT = "http://127.0.0.1:19901/";
const EXPIRATION_MS = 60_000;
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

function source(): TriggerSource {
  const resolved = resolveCosmosTriggerOptions("onResource", {
    connection: "CosmosDB",
    databaseName: "db",
    containerName: "items",
    leaseContainerName: "leases",
    leaseContainerPrefix: "dash-",
    leaseExpirationInterval: EXPIRATION_MS,
  });
  return {
    functionName: "onResource",
    resolved,
    // Never asked: the documents are handed over and lag is not due.
    leaseClient: new CosmosClient({ endpoint: ENDPOINT, key: WELL_KNOWN_EMULATOR_KEY }),
    endpoint: ENDPOINT,
    sameAccount: true,
    thisHostOwner: "host-1",
    leaseReadKey: "k",
  };
}

const lease = (token: string, writtenAt: number) => ({
  id: leaseId(leasePrefix("dash-", ENDPOINT, "dbRid", "collRid"), token),
  LeaseToken: token,
  Owner: "host-1",
  ContinuationToken: null,
  timestamp: new Date(writtenAt).toISOString(),
  _ts: Math.floor(writtenAt / 1000),
});

describe("the leases panel's expiry", () => {
  it("is the lease's last write + the expiration interval, also for a lease written after the refresh's now", async () => {
    const docs = [lease("0", NOW - 5_000), lease("1", NOW + 7)];
    const view = await readTriggerLeases(source(), {
      now: NOW,
      lagDue: false,
      lag: { values: new Map(), readAt: 0 },
      documents: async () => docs,
    });
    const byToken = new Map(view.leases.map((l) => [l.leaseToken, l]));
    expect(byToken.get("0")).toMatchObject({
      lastWriteAgeMs: 5_000,
      expired: false,
      expiresAt: new Date(NOW - 5_000 + EXPIRATION_MS).toISOString(),
    });
    // Written 7 ms after `now` (renewed during the read): its age shows 0, its expiry is not 7 ms early.
    expect(byToken.get("1")).toMatchObject({
      lastWriteAgeMs: 0,
      expired: false,
      expiresAt: new Date(NOW + 7 + EXPIRATION_MS).toISOString(),
    });
  });
});
