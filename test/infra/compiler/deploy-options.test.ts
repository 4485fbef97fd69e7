/**
 * The deployment's options and what is closed in every one of them, on what the ARM template engine inside the pinned
 * Bicep evaluates (`bicep snapshot`; nothing reaches Azure): the task hub's one name (a non-default one, with both
 * durable providers), private networking off (azd's first deployment) and on, the scale parameters, the regions
 * azd may offer, the deploying user's read-only dashboard role, and — in all of them — no basic publishing
 * credentials, FTP off, TLS 1.2, a workspace without shared keys and every diagnostic log sent to it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerDefinition } from "../../../src/shared/containers.js";
import { environment, firstDeployment, type TemplateParameter } from "./support/azd-parameters.js";
import {
  bicep,
  bicepConfig,
  type ParameterValue,
  type PredictedResource,
  removeScratches,
  root,
  type Snapshot,
  scratch,
  snapshot,
} from "./support/bicep.js";

type Variant = "open" | "private" | "storageHub";
type Deployment = Snapshot & { parameters: Record<string, ParameterValue> };
const deployments = {} as Record<Variant, Deployment>;
let template: { parameters: Record<string, TemplateParameter & { metadata?: unknown }> };
let base: Record<string, ParameterValue>;
let dir: string;

const durableTaskDataReader = "d6a5505f-6ebb-45a4-896e-ac8274cfc0ac";
const durableTaskDataContributor = "0ad04412-c4d5-4796-b79c-f76d14c8d402";

beforeAll(async () => {
  const build = await bicep(["build", "infra/bicep/main.bicep", "--stdout", "--config", bicepConfig]);
  expect(build.status, build.stderr).toBe(0);
  template = JSON.parse(build.stdout);
  base = firstDeployment(template.parameters);
  const variants: Record<Variant, Record<string, ParameterValue>> = {
    open: base,
    // Everything the options allow at once: private networking, the scheduler, a task hub name of its own, scale.
    private: {
      ...base,
      location: "northeurope",
      vnetEnabled: true,
      durableStorageProvider: "DurableTaskScheduler",
      taskHubName: "feedhub7",
      instanceMemoryMB: 4096,
      maximumInstanceCount: 40,
      alwaysReady: "http=1, durable=2",
      cosmosDevHostContainers: true,
    },
    // Durable's Azure Storage provider with a name of its own: the app setting is the only place it goes.
    storageHub: { ...base, taskHubName: "feedhub9" },
  };
  dir = scratch("options");
  await Promise.all(
    Object.entries(variants).map(async ([name, parameters]) => {
      deployments[name as Variant] = { ...(await snapshot(dir, name, parameters)), parameters };
    }),
  );
});

afterAll(removeScratches);

const ofType = (d: Deployment, type: string) => d.predictedResources.filter((r) => r.type === type);
function single(d: Deployment, type: string): PredictedResource {
  const found = ofType(d, type);
  expect(
    found.map((r) => r.name),
    type,
  ).toHaveLength(1);
  return found[0] as PredictedResource;
}
const props = (r: PredictedResource | undefined) => (r?.properties ?? {}) as Record<string, unknown>;
const appSettings = (d: Deployment) =>
  props(ofType(d, "Microsoft.Web/sites/config").find((r) => r.name.endsWith("/appsettings"))) as Record<
    string,
    string
  >;
const roleAssignments = (d: Deployment) =>
  ofType(d, "Microsoft.Authorization/roleAssignments").map((r) => ({
    // A name known at the start is a plain id below its scope; one known once deployed, an extensionResourceId().
    scope:
      /^\[extensionResourceId\('([^']+)', 'Microsoft\.Authorization\/roleAssignments'/.exec(r.id)?.[1] ??
      r.id.replace(/\/providers\/Microsoft\.Authorization\/roleAssignments\/[^/]+$/, ""),
    ...(props(r) as { principalId: string; principalType: string; roleDefinitionId: string }),
  }));

describe("the task hub: one name, from TASKHUB_NAME to Bicep, the app settings and host.json", () => {
  it("host.json's hubName is the app setting TASKHUB_NAME, which Bicep sets; the default is one value everywhere", () => {
    const host = JSON.parse(readFileSync(join(root, "host.json"), "utf8")) as {
      extensions: { durableTask: { hubName: string } };
    };
    expect(host.extensions.durableTask.hubName).toBe("%TASKHUB_NAME%");
    for (const d of Object.values(deployments)) expect(Object.keys(appSettings(d))).toContain("TASKHUB_NAME");
    const sample = JSON.parse(readFileSync(join(root, "local.settings.sample.json"), "utf8")) as {
      Values: Record<string, string>;
    };
    // Bicep's default (and azd's, checked against it in build.test.ts) is what a local run of the sample uses.
    expect(template.parameters.taskHubName?.defaultValue).toBe("cosmosfeed");
    expect(sample.Values.TASKHUB_NAME).toBe("cosmosfeed");
    expect(appSettings(deployments.open).TASKHUB_NAME).toBe("cosmosfeed");
  });

  it("with the scheduler, a non-default name is the app setting, the task hub Bicep creates, both roles' scope and the output", () => {
    const d = deployments.private;
    const scheduler = single(d, "Microsoft.DurableTask/schedulers");
    const hub = single(d, "Microsoft.DurableTask/schedulers/taskHubs");
    expect(hub.name).toBe(`${scheduler.name}/feedhub7`);
    expect(appSettings(d).TASKHUB_NAME).toBe("feedhub7");
    expect(d.outputs.TASKHUB_NAME).toBe("feedhub7");
    const onHub = roleAssignments(d).filter((a) => a.scope === hub.id);
    expect(onHub.map((a) => a.roleDefinitionId.split("/").pop()).sort()).toEqual(
      [durableTaskDataContributor, durableTaskDataReader].sort(),
    );
    // Nothing on the scheduler above the hub.
    expect(roleAssignments(d).filter((a) => a.scope === scheduler.id)).toEqual([]);
  });

  it("with Azure Storage, a non-default name is the app setting and the output, and no scheduler exists", () => {
    const d = deployments.storageHub;
    expect(appSettings(d).TASKHUB_NAME).toBe("feedhub9");
    expect(d.outputs.TASKHUB_NAME).toBe("feedhub9");
    expect(ofType(d, "Microsoft.DurableTask/schedulers/taskHubs")).toEqual([]);
    expect(Object.keys(appSettings(d)).filter((k) => /durableTask/.test(k))).toEqual([]);
  });

  it("Bicep refuses a name Azure Storage would refuse (shorter than 3 or longer than 45 characters)", () => {
    expect(template.parameters.taskHubName).toMatchObject({ minLength: 3, maxLength: 45 });
  });
});

describe("the deploying user sees the scheduler's dashboard, read-only", () => {
  it("Durable Task Data Reader on the task hub for the user (a User principal), nothing more", () => {
    const d = deployments.private;
    const user = roleAssignments(d).filter((a) => a.principalId === environment.principalId);
    expect(user.map((a) => [a.roleDefinitionId.split("/").pop(), a.principalType])).toEqual([
      [durableTaskDataReader, "User"],
    ]);
    // Without the scheduler there is no dashboard, and no such role.
    expect(
      roleAssignments(deployments.open).filter((a) => a.principalId === environment.principalId),
    ).toEqual([]);
  });
});

describe("nothing left open, in every deployment", () => {
  it("no basic publishing credentials (FTP, SCM), FTP(S) off, TLS 1.2 on the site and SCM, HTTPS only", () => {
    for (const d of Object.values(deployments)) {
      const site = single(d, "Microsoft.Web/sites");
      const policies = ofType(d, "Microsoft.Web/sites/basicPublishingCredentialsPolicies");
      expect(policies.map((p) => [p.name.split("/").pop(), props(p).allow]).sort()).toEqual([
        ["ftp", false],
        ["scm", false],
      ]);
      expect(props(site)).toMatchObject({
        httpsOnly: true,
        siteConfig: { minTlsVersion: "1.2", scmMinTlsVersion: "1.2", ftpsState: "Disabled" },
      });
    }
  });

  it("the Log Analytics workspace takes no shared key; Cosmos DB, every storage service and the app send their logs to it", () => {
    for (const d of Object.values(deployments)) {
      const workspace = single(d, "Microsoft.OperationalInsights/workspaces");
      expect(props(workspace)).toMatchObject({ features: { disableLocalAuth: true } });
      const settings = ofType(d, "Microsoft.Insights/diagnosticSettings");
      for (const s of settings) expect(props(s).workspaceId, s.id).toBe(workspace.id);
      const scopes = settings.map((s) =>
        s.id.replace(/\/providers\/Microsoft\.Insights\/diagnosticSettings\/.*$/, ""),
      );
      const storage = single(d, "Microsoft.Storage/storageAccounts").id;
      expect(scopes.sort()).toEqual(
        [
          single(d, "Microsoft.DocumentDB/databaseAccounts").id,
          storage,
          `${storage}/blobServices/default`,
          `${storage}/queueServices/default`,
          `${storage}/tableServices/default`,
          single(d, "Microsoft.Web/sites").id,
        ].sort(),
      );
      // Logs from each source that has them (the storage account itself has metrics only).
      const logged = settings.filter((s) => ((props(s).logs as unknown[] | undefined) ?? []).length > 0);
      expect(logged).toHaveLength(5);
    }
  });
});

describe("private networking (vnetEnabled)", () => {
  const endpoints = (d: Deployment) =>
    ofType(d, "Microsoft.Network/privateEndpoints").map((e) => {
      const connection = (
        props(e).privateLinkServiceConnections as {
          properties: { privateLinkServiceId: string; groupIds: string[] };
        }[]
      )[0]?.properties;
      return {
        target: connection?.privateLinkServiceId,
        group: connection?.groupIds.join(),
        subnet: props(e).subnet,
      };
    });

  it("off (the default, azd's first deployment): no network, no private endpoint, public access on", () => {
    const d = deployments.open;
    expect(template.parameters.vnetEnabled?.defaultValue).toBe(false);
    expect(d.predictedResources.filter((r) => r.type.startsWith("Microsoft.Network/"))).toEqual([]);
    expect(props(single(d, "Microsoft.Web/sites")).virtualNetworkSubnetId).toBeNull();
    expect(props(single(d, "Microsoft.DocumentDB/databaseAccounts")).publicNetworkAccess).toBe("Enabled");
    expect(props(single(d, "Microsoft.Storage/storageAccounts")).publicNetworkAccess).toBe("Enabled");
    expect(d.outputs.VNET_ENABLED).toBe(false);
  });

  it("on: the app integrated into a delegated subnet; private endpoints for Cosmos DB, blob, queue, table and the scheduler", () => {
    const d = deployments.private;
    const vnet = single(d, "Microsoft.Network/virtualNetworks");
    const subnets = props(vnet).subnets as { name: string; properties: { delegations?: unknown[] } }[];
    expect(subnets.map((s) => s.name)).toEqual(["app", "private-endpoints"]);
    expect(subnets[0]?.properties.delegations).toEqual([
      { name: "flex-consumption", properties: { serviceName: "Microsoft.App/environments" } },
    ]);
    expect(props(single(d, "Microsoft.Web/sites")).virtualNetworkSubnetId).toBe(`${vnet.id}/subnets/app`);
    const cosmos = single(d, "Microsoft.DocumentDB/databaseAccounts").id;
    const storage = single(d, "Microsoft.Storage/storageAccounts").id;
    const scheduler = single(d, "Microsoft.DurableTask/schedulers").id;
    expect(endpoints(d)).toEqual(
      [
        [cosmos, "Sql"],
        [storage, "blob"],
        [storage, "queue"],
        [storage, "table"],
        [scheduler, "scheduler"],
      ].map(([target, group]) => ({ target, group, subnet: { id: `${vnet.id}/subnets/private-endpoints` } })),
    );
  });

  it("on: each endpoint's private DNS zone, linked to the network, and the zone group that keeps its record", () => {
    const d = deployments.private;
    const zones = ofType(d, "Microsoft.Network/privateDnsZones").map((z) => z.name);
    expect(zones).toEqual([
      "privatelink.documents.azure.com",
      // The storage suffix is the cloud's (environment().suffixes.storage), known once deployed.
      "[format('privatelink.{0}.{1}', 'blob', environment().suffixes.storage)]",
      "[format('privatelink.{0}.{1}', 'queue', environment().suffixes.storage)]",
      "[format('privatelink.{0}.{1}', 'table', environment().suffixes.storage)]",
      "privatelink.durabletask.io",
    ]);
    const vnet = single(d, "Microsoft.Network/virtualNetworks").id;
    const links = ofType(d, "Microsoft.Network/privateDnsZones/virtualNetworkLinks");
    expect(links).toHaveLength(5);
    for (const l of links)
      expect(props(l)).toEqual({ registrationEnabled: false, virtualNetwork: { id: vnet } });
    expect(ofType(d, "Microsoft.Network/privateEndpoints/privateDnsZoneGroups")).toHaveLength(5);
  });

  it("on: Cosmos DB, storage and the scheduler refuse public network access", () => {
    const d = deployments.private;
    expect(props(single(d, "Microsoft.DocumentDB/databaseAccounts")).publicNetworkAccess).toBe("Disabled");
    expect(props(single(d, "Microsoft.Storage/storageAccounts"))).toMatchObject({
      publicNetworkAccess: "Disabled",
      networkAcls: { defaultAction: "Deny", bypass: "None" },
    });
    expect(props(single(d, "Microsoft.DurableTask/schedulers"))).toMatchObject({
      publicNetworkAccess: "Disabled",
      ipAllowlist: [],
    });
    expect(d.outputs.VNET_ENABLED).toBe(true);
  });
});

describe("scale and the dev host's container", () => {
  const scale = (d: Deployment) =>
    (props(single(d, "Microsoft.Web/sites")).functionAppConfig as { scaleAndConcurrency: unknown })
      .scaleAndConcurrency;

  it("instance memory, maximum instances and always-ready instances: today's values by default, parameters otherwise", () => {
    expect(scale(deployments.open)).toEqual({
      instanceMemoryMB: 2048,
      maximumInstanceCount: 100,
      alwaysReady: [],
    });
    expect(scale(deployments.private)).toEqual({
      instanceMemoryMB: 4096,
      maximumInstanceCount: 40,
      alwaysReady: [
        { name: "durable", instanceCount: 2 },
        { name: "http", instanceCount: 1 },
      ],
    });
  });

  it("cosmosDevHostContainers provisions the dev host's durable task hub container too (off by default)", () => {
    const names = (d: Deployment) =>
      ofType(d, "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers").map((c) =>
        c.name.split("/").pop(),
      );
    expect(names(deployments.open)).not.toContain("durable-tasks");
    expect(names(deployments.private)).toEqual(containerDefinition.containers.map((c) => c.name));
  });
});

describe("regions: only where Flex Consumption (and the scheduler, when chosen) is offered", () => {
  it("location is azd's location parameter, limited to the Flex Consumption regions", () => {
    const location = template.parameters.location;
    expect(location?.metadata).toMatchObject({ azd: { type: "location" } });
    expect(location?.allowedValues).toEqual(
      expect.arrayContaining(["westeurope", "eastus2", "swedencentral"]),
    );
    expect(location?.allowedValues).not.toContain("chinanorth");
  });

  it("the scheduler in a region without it is refused before anything is created, naming the regions that have it", async () => {
    const run = snapshot(dir, "wrong-region", {
      ...base,
      location: "westeurope",
      durableStorageProvider: "DurableTaskScheduler",
    });
    await expect(run).rejects.toThrow(
      /The Durable Task Scheduler is not offered in westeurope: choose one of australiaeast, .*northeurope.*, or DURABLE_STORAGE_PROVIDER=AzureStorage/,
    );
  });

  it("an always-ready item that is not group=count is refused by name", async () => {
    await expect(
      snapshot(dir, "bad-always-ready", { ...base, alwaysReady: "http=1,durable" }),
    ).rejects.toThrow(/ALWAYS_READY: 'durable' is not group=count/);
  });
});
