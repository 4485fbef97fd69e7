import { HttpRequest, InvocationContext, type Timer } from "@azure/functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until, WAIT_MS } from "../../bench/lib/until.js";
import { getHealth, getLeases, getLocks, getSummary, reportLag } from "../../functions/admin.js";
import { reactToResources, summarizeResources } from "../../functions/reactions.js";
import {
  appContext,
  type OperationDocument,
  RESOURCE_TRIGGERS,
  type ResourceDocument,
  readSummary,
  subscriptionLockName,
  updateSummaries,
} from "../../src/shared/resources/index.js";
import { putThroughFunction } from "../support/app-put.js";
import { type AppOnEmulator, startAppOnEmulator } from "../support/app-task-hub.js";
import type { InProcessTaskHub } from "../support/durable-host.js";
import { summariesProcessor } from "../support/summaries-processor.js";

// The trigger handlers of functions/reactions.ts and the admin handlers of functions/admin.ts, called directly with
// the documents the change feed delivers, against the emulator. The reactions trigger's durable client is a real
// one: a Cosmos DB task hub and the extension's HTTP API in this process run the app's own orchestrations.

let app: AppOnEmulator;
let durable: InProcessTaskHub;

beforeAll(async () => {
  app = await startAppOnEmulator();
  ({ durable } = app);
});
afterAll(() => app?.close());

async function put(sub: string, name: string, sku = "basic") {
  const res = await putThroughFunction(sub, name, { properties: { sku } });
  expect(res.status).toBe(201);
}

/** The subscription's resources as the change feed delivers them (with _etag, _lsn, …). */
async function changesOf(sub: string) {
  const { resources } = await appContext()
    .containers.resources.items.query<ResourceDocument & { _etag: string }>({
      query: "SELECT * FROM c WHERE c.subscriptionId = @s AND c.docType = 'resource'",
      parameters: [{ name: "@s", value: sub }],
    })
    .fetchAll();
  return resources;
}

const http = (url: string, params: Record<string, string> = {}) =>
  new HttpRequest({ method: "GET", url: `http://localhost:7071/api/${url}`, params });

describe("summary trigger", () => {
  it("is idempotent: the same batch twice gives the same counts, and writes nothing the second time", async () => {
    const sub = "sum-1";
    await put(sub, "a");
    await put(sub, "b");
    await put(sub, "c", "premium");
    const batch = await changesOf(sub);
    await summarizeResources(batch, new InvocationContext());
    const first = await readSummary(appContext(), sub);
    expect(first?.counts).toEqual({ Accepted: 3 });
    expect(first?.total).toBe(3);
    await summarizeResources(batch, new InvocationContext());
    await summarizeResources([...batch, ...batch], new InvocationContext());
    const second = await readSummary(appContext(), sub);
    expect(second?.counts).toEqual({ Accepted: 3 });
    expect(second?._etag).toBe(first?._etag);
    const res = await getSummary(
      http(`subscriptions/${sub}/summary`, { subscriptionId: sub }),
      new InvocationContext(),
    );
    expect(res.jsonBody).toMatchObject({ subscriptionId: sub, counts: { Accepted: 3 }, total: 3 });
  });

  it("follows state changes and keeps subscriptions apart", async () => {
    await put("sum-2", "x");
    await put("sum-3", "y");
    const ctx = appContext();
    const [x] = await changesOf("sum-2");
    await ctx.containers.resources.item(x.id, "sum-2").replace({ ...x, provisioningState: "Succeeded" });
    const changed = await updateSummaries(ctx, [
      ...(await changesOf("sum-2")),
      ...(await changesOf("sum-3")),
    ]);
    expect(changed.sort()).toEqual(["sum-2", "sum-3"]);
    expect((await readSummary(ctx, "sum-2"))?.counts).toEqual({ Succeeded: 1 });
    expect((await readSummary(ctx, "sum-3"))?.counts).toEqual({ Accepted: 1 });
    // Documents that are not resources are ignored.
    expect(await updateSummaries(ctx, [{ id: "other" }, null, 42])).toEqual([]);
  });
});

describe("reactions trigger", () => {
  it("starts the orchestration with its sighting, which validate records on the operation, once per change", async () => {
    const sub = "react-1";
    await put(sub, "r");
    const batch = await changesOf(sub);
    await reactToResources(batch, durable.context());
    const ops = appContext().containers.resources;
    const opId = `op:${batch[0].operationId}`;
    const readOp = async () =>
      (await ops.item(opId, sub).read<OperationDocument & { _etag: string }>()).resource;
    // The trigger wrote nothing itself: the orchestration's validate step recorded the sighting it was given.
    const op = await until("validate to record the sighting", async () => {
      const o = await readOp();
      return o?.observed ? o : undefined;
    });
    expect(op.observed).toMatchObject({ provisioningState: "Accepted", resourceEtag: batch[0]._etag });
    expect(op.observed?.by).toBeUndefined();
    await reactToResources(batch, durable.context()); // redelivery: the instance exists, nothing is started
    // The orchestration may have moved the operation on since (its status), but `observed` is the first record.
    expect((await readOp())?.observed).toEqual(op.observed);
    const instances = await durable.hub.list({ instanceIdPrefix: `provisioning-${batch[0].operationId}` });
    expect(instances.instances).toHaveLength(1);
  });

  it("starts the provisioning orchestration once per operation; it ends Succeeded, and a failure ends Failed", async () => {
    const sub = "react-3";
    await put(sub, "ok");
    const [doc] = await changesOf(sub);
    await reactToResources([doc], durable.context());
    await reactToResources([doc], durable.context()); // redelivery: the instance exists, left alone
    const ops = appContext().containers.resources;
    const readOp = async (id: string) => (await ops.item(`op:${id}`, sub).read<OperationDocument>()).resource;
    const op = await until("the operation to succeed", async () => {
      const o = await readOp(doc.operationId);
      return o?.status === "Succeeded" ? o : undefined;
    });
    expect(op).toMatchObject({
      status: "Succeeded",
      orchestration: { name: "provisioning", instanceId: `provisioning-${doc.operationId}`, step: "done" },
      attempts: { provision: 1 },
    });
    const resource = (await appContext().containers.resources.item(doc.id, sub).read<ResourceDocument>())
      .resource;
    expect(resource?.provisioningState).toBe("Succeeded");
    const instances = await durable.hub.list({ instanceIdPrefix: `provisioning-${doc.operationId}` });
    expect(instances.instances).toHaveLength(1);

    // Tagged to fail every attempt: the orchestration marks resource and operation Failed with the reason.
    await putThroughFunction(sub, "bad", {
      properties: { sku: "basic" },
      tags: { "cosmos-feed.simulate": "fail" },
    });
    const bad = (await changesOf(sub)).find((d) => d.id === "bad") as ResourceDocument;
    await reactToResources([bad], durable.context());
    const failed = await until("the operation to fail", async () => {
      const o = await readOp(bad.operationId);
      return o?.status === "Failed" ? o : undefined;
    });
    expect(failed?.status).toBe("Failed");
    expect(failed?.error?.message).toContain("cosmos-feed.simulate=fail");
    expect(failed?.attempts?.provision).toBe(3);
    const status = await until("the orchestration to fail", async () => {
      const s = await durable.hub.getStatus(`provisioning-${bad.operationId}`);
      return s?.runtimeStatus === "Failed" ? s : undefined;
    });
    expect(status?.runtimeStatus).toBe("Failed");
    expect(String(status?.output)).toContain("Provisioning of react-3/bad failed");
  });

  it("skips terminal states", async () => {
    const sub = "react-2";
    await put(sub, "s");
    const [doc] = await changesOf(sub);
    const { resource: done } = await appContext()
      .containers.resources.item(doc.id, sub)
      .replace({ ...doc, provisioningState: "Succeeded" });
    const ops = appContext().containers.resources;
    await reactToResources([done], durable.context());
    const { resource: op } = await ops.item(`op:${doc.operationId}`, sub).read<OperationDocument>();
    expect(op?.observed).toBeUndefined();
  });
});

describe("admin", () => {
  it("GET /api/admin/leases reports owner, continuation and lag per lease for each prefix", async () => {
    const ctx = appContext();
    // A real processor on the summaries prefix (as the dev host runs the trigger), the reactions prefix idle.
    const processor = summariesProcessor(ctx, async (docs: unknown[]) => {
      await updateSummaries(ctx, docs);
    });
    await processor.start();
    try {
      await put("lease-sub", "l1");
      await expect
        .poll(async () => (await readSummary(ctx, "lease-sub"))?.total, { timeout: WAIT_MS })
        .toBe(1);
      type Report = {
        leaseContainerPrefix: string;
        leases: { owner: string | null; continuation: string | null; estimatedLag: number | null }[];
      }[];
      const leaseReport = async () =>
        ((await getLeases(http("admin/leases"), new InvocationContext())).jsonBody as { value: Report })
          .value;
      // The summary is written by the handler; the lease's checkpoint follows it (coalesced): wait for that too.
      let report: Report = [];
      await expect
        .poll(
          async () => {
            report = await leaseReport();
            return report
              .find((p) => p.leaseContainerPrefix === RESOURCE_TRIGGERS.summaries.leaseContainerPrefix)
              ?.leases.some((l) => l.continuation !== null);
          },
          { timeout: WAIT_MS },
        )
        .toBe(true);
      const summaries = report.find(
        (p) => p.leaseContainerPrefix === RESOURCE_TRIGGERS.summaries.leaseContainerPrefix,
      );
      const reactions = report.find(
        (p) => p.leaseContainerPrefix === RESOURCE_TRIGGERS.reactions.leaseContainerPrefix,
      );
      expect(summaries?.leases.length).toBeGreaterThanOrEqual(1);
      for (const l of summaries?.leases ?? []) {
        expect(l.owner).toBe("host-a");
        expect(typeof l.estimatedLag).toBe("number");
      }
      expect(summaries?.leases.some((l) => l.continuation !== null)).toBe(true);
      expect(reactions?.leases).toEqual([]);
      const logged: string[] = [];
      const timerCtx = new InvocationContext({
        logHandler: (_level, ...args) => {
          logged.push(args.map(String).join(" "));
        },
      });
      await reportLag({ isPastDue: false, scheduleStatus: undefined } as unknown as Timer, timerCtx);
      expect(logged.some((l) => l.includes("summarizeResources"))).toBe(true);
    } finally {
      await processor.stop();
    }
  });

  it("GET /api/admin/locks lists held locks; GET /api/health is 200 healthy", async () => {
    const lock = await appContext().locks.tryAcquire(subscriptionLockName("locked-sub"));
    try {
      const res = await getLocks(http("admin/locks"), new InvocationContext());
      const names = (res.jsonBody as { value: { name: string; expiresAt: string }[] }).value.map(
        (l) => l.name,
      );
      expect(names).toContain("subscription-locked-sub");
    } finally {
      await lock.release();
    }
    const after = await getLocks(http("admin/locks"), new InvocationContext());
    expect((after.jsonBody as { value: { name: string }[] }).value.map((l) => l.name)).not.toContain(
      "subscription-locked-sub",
    );
    const health = await getHealth(http("health"), new InvocationContext());
    expect(health.status).toBe(200);
    expect(health.jsonBody).toEqual({ status: "healthy" });
  });
});
