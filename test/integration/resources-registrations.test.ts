import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

// What functions/*.ts hand the Functions worker (captured through a stub @azure/functions-core in a child process,
// the TypeScript loaded through tsx): routes, methods and every trigger option the settings module feeds.

const capture = fileURLToPath(new URL("../devhost/support/capture-registrations.cjs", import.meta.url));
const root = fileURLToPath(new URL("../..", import.meta.url));

interface Registration {
  name: string;
  bindings: Record<string, Record<string, unknown>>;
  retryOptions?: Record<string, unknown>;
}

it("registers every function with its route or trigger options, knobs from the environment", async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      "--import",
      "tsx",
      capture,
      "functions/resources.ts",
      "functions/reactions.ts",
      "functions/admin.ts",
      "functions/provisioning.ts",
      "functions/reconcile.ts",
    ],
    {
      cwd: root,
      env: {
        ...process.env,
        FEED_POLL_DELAY_MS: "250",
        SUMMARY_POLL_DELAY_MS: "4000",
        SUMMARY_MAX_ITEMS_PER_INVOCATION: "700",
        TRIGGER_MAX_RETRY_COUNT: "3",
        OPERATION_RECONCILE_SCHEDULE: "30 */2 * * * *",
      },
    },
  );
  const regs = JSON.parse(stdout) as Registration[];
  const trigger = (name: string) => {
    const r = regs.find((x) => x.name === name);
    return Object.values(r?.bindings ?? {}).find((b) => b.direction === "in") as Record<string, unknown>;
  };
  expect(regs.map((r) => r.name).sort()).toEqual(
    [
      "deleteResource",
      "deprovisionResource",
      "deprovisioning",
      "failResource",
      "finalizeResource",
      "getHealth",
      "getLeases",
      "getLocks",
      "getOperation",
      "getResource",
      "getSummary",
      "listResources",
      "patchResource",
      "provisioning",
      "provisionResource",
      "putResource",
      "reactToResources",
      "reconcileOperations",
      "reportLag",
      "summarizeResources",
      "validateResource",
    ].sort(),
  );
  expect(trigger("putResource")).toMatchObject({
    type: "httpTrigger",
    methods: ["PUT"],
    route: "subscriptions/{subscriptionId}/resources/{resourceName}",
    authLevel: "anonymous",
  });
  // The summaries trigger polls at SUMMARY_POLL_DELAY_MS (summaries may lag), the reactions one at FEED_POLL_DELAY_MS;
  // the summaries trigger takes pages of SUMMARY_MAX_ITEMS_PER_INVOCATION (a storm's window in one page).
  for (const [name, prefix, feedPollDelay, maxItemsPerInvocation] of [
    ["reactToResources", "reactions-", 250, 100],
    ["summarizeResources", "summaries-", 4000, 700],
  ] as const) {
    expect(trigger(name)).toMatchObject({
      type: "cosmosDBTrigger",
      connection: "COSMOS_CONNECTION",
      databaseName: "cosmos-feed-app",
      containerName: "resources",
      leaseContainerName: "leases",
      leaseContainerPrefix: prefix,
      createLeaseContainerIfNotExists: false,
      feedPollDelay,
      leaseAcquireInterval: 13_000,
      leaseExpirationInterval: 60_000,
      leaseRenewInterval: 17_000,
      maxItemsPerInvocation,
    });
    expect(regs.find((r) => r.name === name)?.retryOptions).toMatchObject({
      strategy: "exponentialBackoff",
      maxRetryCount: 3,
    });
  }
  expect(trigger("reportLag")).toMatchObject({ type: "timerTrigger", schedule: "0 */5 * * * *" });
  // The reactions trigger starts orchestrations: it declares the durable client input (df.getClient needs it).
  const reactions = regs.find((r) => r.name === "reactToResources");
  expect(Object.values(reactions?.bindings ?? {}).map((b) => b.type)).toContain("durableClient");
  // So does the stalled-operation net, on its own schedule setting.
  expect(trigger("reconcileOperations")).toMatchObject({ type: "timerTrigger", schedule: "30 */2 * * * *" });
  const reconcile = regs.find((r) => r.name === "reconcileOperations");
  expect(Object.values(reconcile?.bindings ?? {}).map((b) => b.type)).toContain("durableClient");
  expect(trigger("provisioning")).toMatchObject({ type: "orchestrationTrigger" });
  expect(trigger("provisionResource")).toMatchObject({ type: "activityTrigger" });
});

it("refuses to load with a bad setting, naming it", async () => {
  const run = promisify(execFile)(process.execPath, ["--import", "tsx", capture, "functions/reactions.ts"], {
    cwd: root,
    env: { ...process.env, LOCK_TTL_SECONDS: "zero" },
  });
  await expect(run).rejects.toMatchObject({ stderr: expect.stringContaining("LOCK_TTL_SECONDS must be") });
});
