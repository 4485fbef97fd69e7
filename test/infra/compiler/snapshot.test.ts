/**
 * What infra/bicep deploys, as the ARM template engine inside the pinned Bicep CLI evaluates it (`bicep snapshot`:
 * main.bicep compiled, its parameters applied, loops unrolled, conditions decided, names and ids computed — for a
 * made-up subscription, nothing reaches Azure). Three deployments: azd's first one (main.parameters.json's defaults),
 * the Durable Task Scheduler with manual throughput and no deploying user, and autoscale shared throughput with every
 * AUTH_* list set. Each is checked for what `npm test`'s tree-sitter test (test/infra/bicep.test.ts) reads in the
 * source: every container of containers.json with its partition key, TTL, indexing and throughput; local auth off;
 * each role at its narrowest scope; identity-based app settings for every knob; nothing anonymous but the health probe.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerDefinition } from "../../../src/shared/containers.js";
import { SETTINGS } from "../../../src/shared/settings.js";
import { httpRoutes, isExcluded } from "../support/http-routes.js";
import { environment, firstDeployment, type TemplateParameter } from "./support/azd-parameters.js";
import {
  bicep,
  bicepConfig,
  deployment,
  type ParameterValue,
  type PredictedResource,
  removeScratches,
  type Snapshot,
  scratch,
  snapshot,
} from "./support/bicep.js";

const roles = {
  storageBlobDataOwner: "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
  storageQueueDataContributor: "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
  storageTableDataContributor: "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",
  monitoringMetricsPublisher: "3913510d-42f4-4e42-8a64-420c390055eb",
  durableTaskDataContributor: "0ad04412-c4d5-4796-b79c-f76d14c8d402",
};
const cosmosDataContributor = "00000000-0000-0000-0000-000000000002";
const azureCliClientId = "04b07795-8ddb-461a-bbee-02f9e1bf7b46";
const otherTenant = "e8c5b2a0-0000-4000-8000-000000000005";

type Deployment = Snapshot & { parameters: Record<string, ParameterValue> };
const deployments: Record<"first" | "scheduler" | "autoscale", Deployment> = {} as never;

beforeAll(async () => {
  const build = await bicep(["build", "infra/bicep/main.bicep", "--stdout", "--config", bicepConfig]);
  expect(build.status, build.stderr).toBe(0);
  const template = JSON.parse(build.stdout) as { parameters: Record<string, TemplateParameter> };
  const first = firstDeployment(template.parameters);
  const variants: Record<keyof typeof deployments, Record<string, ParameterValue>> = {
    first,
    scheduler: {
      ...first,
      // A region that offers the scheduler too (main.bicep refuses the others with that provider).
      location: "northeurope",
      durableStorageProvider: "DurableTaskScheduler",
      cosmosThroughputMode: "manual",
      principalId: "",
    },
    autoscale: {
      ...first,
      cosmosThroughputMode: "autoscale",
      cosmosSharedThroughput: true,
      cosmosAutoscaleMaxThroughput: 4000,
      cosmosContinuousBackup: true,
      authAudiences: " api://feed-api , feed-api ",
      authAllowedClientApplications:
        "1f0b6c3e-0000-4000-8000-00000000000a,, 2e1c7d4f-0000-4000-8000-00000000000b",
      authAllowedPrincipals: "3d2e8f5a-0000-4000-8000-00000000000c",
      authTenantId: otherTenant,
    },
  };
  const dir = scratch("snapshot");
  await Promise.all(
    Object.entries(variants).map(async ([name, parameters]) => {
      const result = await snapshot(dir, name, parameters);
      deployments[name as keyof typeof deployments] = { ...result, parameters };
    }),
  );
});

afterAll(removeScratches);

/** The containers of containers.json that Azure gets (not the dev host's own, without cosmosDevHostContainers). */
const forAzure = containerDefinition.containers.filter((c) => !c.devHostOnly);
const ofType = (d: Deployment, type: string) => d.predictedResources.filter((r) => r.type === type);
function single(d: Deployment, type: string): PredictedResource {
  const found = ofType(d, type);
  expect(
    found.map((r) => r.name),
    type,
  ).toHaveLength(1);
  return found[0] as PredictedResource;
}
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
/** `[reference('<id>', '<version>').<property>]`: a value of that resource known once it exists. */
const referenceTo = (id: string, property: string) =>
  new RegExp(`^\\[reference\\('${escapeRegExp(id)}', '[0-9a-z-]+'\\)\\.${escapeRegExp(property)}\\]$`);
const identityOf = (d: Deployment) => single(d, "Microsoft.ManagedIdentity/userAssignedIdentities");
const props = (r: PredictedResource | undefined) => (r?.properties ?? {}) as Record<string, unknown>;

/** Azure RBAC assignments: the scope is the first argument of the extensionResourceId() that makes each id. */
function roleAssignments(d: Deployment) {
  return ofType(d, "Microsoft.Authorization/roleAssignments").map((r) => {
    const scope = /^\[extensionResourceId\('([^']+)', 'Microsoft\.Authorization\/roleAssignments'/.exec(
      r.id,
    )?.[1];
    const p = props(r) as { principalId: string; principalType: string; roleDefinitionId: string };
    return { scope, role: p.roleDefinitionId.split("/").pop(), principalId: p.principalId, p };
  });
}

describe("containers: every one of src/shared/containers.json, as the file says, and no other", () => {
  it("one container per entry with its partition key (hash, v2), TTL and indexing policy, in the app's database", () => {
    for (const d of Object.values(deployments)) {
      const account = single(d, "Microsoft.DocumentDB/databaseAccounts");
      const database = single(d, "Microsoft.DocumentDB/databaseAccounts/sqlDatabases");
      expect(database.name).toBe(`${account.name}/${containerDefinition.database.name}`);
      const containers = ofType(d, "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers");
      // The dev host's own container (its durable task hub) is not Azure's: Durable keeps its state in its provider.
      expect(containers.map((c) => c.name)).toEqual(forAzure.map((c) => `${database.name}/${c.name}`));
      expect(containers.map((c) => c.name)).not.toContain(`${database.name}/durable-tasks`);
      for (const c of forAzure) {
        const deployed = containers.find((r) => r.name === `${database.name}/${c.name}`);
        const resource = (props(deployed).resource ?? {}) as Record<string, unknown>;
        const expected: Record<string, unknown> = {
          id: c.name,
          partitionKey: { paths: [c.partitionKey], kind: "Hash", version: 2 },
        };
        // Absent in the file, absent in the deployment (TTL off; the service's default indexing).
        if (c.defaultTtl !== undefined) expected.defaultTtl = c.defaultTtl;
        if (c.indexingPolicy !== undefined) expected.indexingPolicy = c.indexingPolicy;
        expect(resource, c.name).toEqual(expected);
      }
    }
    // What the triggers and locks need, as deployed: leases /id with TTL on, locks with a default TTL.
    const deployed = (name: string) =>
      props(
        ofType(deployments.first, "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers").find((r) =>
          r.name.endsWith(`/${name}`),
        ),
      ).resource as { partitionKey: { paths: string[] }; defaultTtl?: number };
    expect(deployed("leases")).toMatchObject({ partitionKey: { paths: ["/id"] }, defaultTtl: -1 });
    expect(deployed("locks").defaultTtl).toBeGreaterThan(0);
  });

  it("throughput: serverless has none to set; manual gives each container its definition's RU/s; autoscale shared is the database's", () => {
    const options = (d: Deployment) =>
      ofType(d, "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers").map((r) => props(r).options);
    const capabilities = (d: Deployment) =>
      props(single(d, "Microsoft.DocumentDB/databaseAccounts")).capabilities;
    const databaseOptions = (d: Deployment) =>
      props(single(d, "Microsoft.DocumentDB/databaseAccounts/sqlDatabases")).options;

    expect(capabilities(deployments.first)).toEqual([{ name: "EnableServerless" }]);
    expect(options(deployments.first)).toEqual(forAzure.map(() => ({})));
    expect(databaseOptions(deployments.first)).toEqual({});

    expect(capabilities(deployments.scheduler)).toEqual([]);
    expect(options(deployments.scheduler)).toEqual(
      forAzure.map((c) => ({ throughput: c.throughput ?? 400 })),
    );
    expect(containerDefinition.containers.every((c) => c.throughput !== undefined)).toBe(true);

    expect(options(deployments.autoscale)).toEqual(forAzure.map(() => ({})));
    expect(databaseOptions(deployments.autoscale)).toEqual({ autoscaleSettings: { maxThroughput: 4000 } });
    expect(
      props(single(deployments.autoscale, "Microsoft.DocumentDB/databaseAccounts")).backupPolicy,
    ).toMatchObject({
      type: "Continuous",
    });
  });
});

describe("no keys: local auth off everywhere", () => {
  it("Cosmos DB: local auth off, TLS 1.2, Session; storage: shared keys and public blobs off; Application Insights: local auth off", () => {
    for (const d of Object.values(deployments)) {
      expect(props(single(d, "Microsoft.DocumentDB/databaseAccounts"))).toMatchObject({
        disableLocalAuth: true,
        minimalTlsVersion: "Tls12",
        consistencyPolicy: { defaultConsistencyLevel: "Session" },
      });
      expect(props(single(d, "Microsoft.Storage/storageAccounts"))).toMatchObject({
        allowSharedKeyAccess: false,
        allowBlobPublicAccess: false,
        minimumTlsVersion: "TLS1_2",
        supportsHttpsTrafficOnly: true,
      });
      expect(props(single(d, "Microsoft.Insights/components")).DisableLocalAuth).toBe(true);
    }
  });
});

describe("least privilege: data-plane roles, each at the narrowest scope", () => {
  it("Cosmos DB Built-in Data Contributor on the app's database (not the account), for the app's identity and the deploying user only", () => {
    for (const d of Object.values(deployments)) {
      const account = single(d, "Microsoft.DocumentDB/databaseAccounts");
      const assignments = ofType(d, "Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments").map(
        (r) => props(r) as { principalId: string; roleDefinitionId: string; scope: string },
      );
      for (const a of assignments) {
        expect(a.scope).toBe(`${account.id}/dbs/${containerDefinition.database.name}`);
        expect(a.roleDefinitionId).toBe(`${account.id}/sqlRoleDefinitions/${cosmosDataContributor}`);
      }
      const principals = assignments.map((a) => a.principalId);
      expect(principals[0]).toMatch(referenceTo(identityOf(d).id, "principalId"));
      const user = d.parameters.principalId;
      expect(principals.slice(1)).toEqual(user ? [user] : []);
    }
  });

  it("Azure RBAC: the app's identity only; blob and table on the storage account, queue only with Durable's Azure Storage provider, metrics on Application Insights, the scheduler's role on the task hub", () => {
    for (const [name, d] of Object.entries(deployments)) {
      const storage = single(d, "Microsoft.Storage/storageAccounts").id;
      const insights = single(d, "Microsoft.Insights/components").id;
      // The deploying user's read-only dashboard role is deploy-options.test.ts's; none here (no user with the scheduler).
      const assignments = roleAssignments(d);
      for (const a of assignments) {
        expect(a.principalId, name).toMatch(referenceTo(identityOf(d).id, "principalId"));
        expect(a.p.principalType).toBe("ServicePrincipal");
        expect(a.p.roleDefinitionId).toBe(
          `/subscriptions/${deployment.subscriptionId}/providers/Microsoft.Authorization/roleDefinitions/${a.role}`,
        );
      }
      const expected = [
        { scope: storage, role: roles.storageBlobDataOwner },
        { scope: storage, role: roles.storageTableDataContributor },
        ...(d.parameters.durableStorageProvider === "AzureStorage"
          ? [{ scope: storage, role: roles.storageQueueDataContributor }]
          : []),
        { scope: insights, role: roles.monitoringMetricsPublisher },
        ...(d.parameters.durableStorageProvider === "DurableTaskScheduler"
          ? [
              {
                scope: single(d, "Microsoft.DurableTask/schedulers/taskHubs").id,
                role: roles.durableTaskDataContributor,
              },
            ]
          : []),
      ];
      const key = (a: { scope?: string; role?: string }) => `${a.role} on ${a.scope}`;
      expect(assignments.map(key).sort(), name).toEqual(expected.map(key).sort());
    }
    // The task hub, not the scheduler above it.
    const hub = single(deployments.scheduler, "Microsoft.DurableTask/schedulers/taskHubs");
    // The default name here; a non-default one reaches the hub, the role and the app setting: deploy-options.test.ts.
    expect(hub.name).toBe(
      `${single(deployments.scheduler, "Microsoft.DurableTask/schedulers").name}/cosmosfeed`,
    );
    expect(ofType(deployments.first, "Microsoft.DurableTask/schedulers")).toEqual([]);
  });
});

describe("the function app: identity-based connections, every knob an app setting", () => {
  const settingsOf = (d: Deployment) =>
    props(ofType(d, "Microsoft.Web/sites/config").find((r) => r.name.endsWith("/appsettings"))) as Record<
      string,
      string
    >;

  it("every knob of src/shared/settings.ts, at its default on a first deployment, and nothing the code does not know", () => {
    const d = deployments.first;
    const settings = settingsOf(d);
    for (const knob of Object.values(SETTINGS)) {
      expect(settings[knob.setting], knob.setting).toBe(
        knob.setting === "COSMOS_ENSURE_CONTAINERS" ? "false" : String(knob.default),
      );
    }
    const host = [
      "AzureWebJobsStorage__credential",
      "AzureWebJobsStorage__clientId",
      "AzureWebJobsStorage__blobServiceUri",
      "AzureWebJobsStorage__queueServiceUri",
      "AzureWebJobsStorage__tableServiceUri",
      "APPLICATIONINSIGHTS_CONNECTION_STRING",
      "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
      "WEBSITE_AUTH_AAD_ALLOWED_TENANTS",
      "TASKHUB_NAME",
    ];
    const connection = [
      "COSMOS_CONNECTION__accountEndpoint",
      "COSMOS_CONNECTION__credential",
      "COSMOS_CONNECTION__clientId",
    ];
    const knobs: string[] = Object.values(SETTINGS).map((k) => k.setting);
    expect(Object.keys(settings).sort()).toEqual([...host, ...connection, ...knobs].sort());
  });

  it("Cosmos DB, host storage and Application Insights connect as the app's user-assigned identity; no key, no connection string with one", () => {
    for (const d of Object.values(deployments)) {
      const settings = settingsOf(d);
      const identity = identityOf(d).id;
      const account = single(d, "Microsoft.DocumentDB/databaseAccounts").id;
      expect(settings.COSMOS_CONNECTION__credential).toBe("managedidentity");
      expect(settings.COSMOS_CONNECTION__clientId).toMatch(referenceTo(identity, "clientId"));
      expect(settings.COSMOS_CONNECTION__accountEndpoint).toMatch(referenceTo(account, "documentEndpoint"));
      expect(settings.AzureWebJobsStorage__credential).toBe("managedidentity");
      expect(settings.AzureWebJobsStorage__clientId).toMatch(referenceTo(identity, "clientId"));
      expect(settings.APPLICATIONINSIGHTS_AUTHENTICATION_STRING).toMatch(
        /^\[format\('ClientId=\{0\};Authorization=AAD'/,
      );
      expect(settings).not.toHaveProperty("AzureWebJobsStorage");
      expect(settings).not.toHaveProperty("COSMOS_CONNECTION");
      expect(JSON.stringify(settings)).not.toMatch(
        /AccountKey=|SharedAccessKey|listKeys|AccountEndpoint=.*;AccountKey/,
      );
      const site = single(d, "Microsoft.Web/sites");
      expect(site.identity).toEqual({ type: "UserAssigned", userAssignedIdentities: { [identity]: {} } });
      expect(props(site).functionAppConfig).toMatchObject({
        deployment: {
          storage: {
            authentication: { type: "UserAssignedIdentity", userAssignedIdentityResourceId: identity },
          },
        },
        runtime: { name: "node", version: "22" },
      });
      expect(props(site).httpsOnly).toBe(true);
      expect(site.tags).toMatchObject({
        "azd-service-name": "api",
        "azd-env-name": environment.environmentName,
      });
      const plan = single(d, "Microsoft.Web/serverfarms");
      expect(plan.sku).toMatchObject({ name: "FC1" });
      // azd before 1.23.4 fails `azd deploy` when two resources carry the service tag: the site alone does.
      expect(plan.tags).toEqual({ "azd-env-name": environment.environmentName });
      expect(
        d.predictedResources.filter((r) => r.tags?.["azd-service-name"] !== undefined).map((r) => r.type),
      ).toEqual(["Microsoft.Web/sites"]);
    }
  });

  it("with the Durable Task Scheduler: host.json's provider switched to it, connected as the identity; without it, no such setting", () => {
    const settings = settingsOf(deployments.scheduler);
    const scheduler = single(deployments.scheduler, "Microsoft.DurableTask/schedulers").id;
    expect(settings).toMatchObject({
      AzureFunctionsJobHost__extensions__durableTask__storageProvider__type: "azureManaged",
      AzureFunctionsJobHost__extensions__durableTask__storageProvider__connectionStringName:
        "DURABLE_TASK_SCHEDULER_CONNECTION_STRING",
    });
    const connection = settings.DURABLE_TASK_SCHEDULER_CONNECTION_STRING ?? "";
    expect(connection).toContain("Authentication=ManagedIdentity;ClientID=");
    expect(connection).toContain(`reference('${scheduler}'`);
    expect(Object.keys(settingsOf(deployments.first)).filter((k) => /durable/i.test(k))).toEqual([]);
  });
});

describe("nothing anonymous once deployed: Microsoft Entra ID in front of every route but the health probe", () => {
  const authOf = (d: Deployment) =>
    props(ofType(d, "Microsoft.Web/sites/config").find((r) => r.name.endsWith("/authsettingsV2"))) as {
      globalValidation: { excludedPaths: string[] };
      identityProviders: Record<string, unknown>;
      [k: string]: unknown;
    };

  it("a token required (401 without), no token store, only /api/health excluded, one identity provider", () => {
    for (const d of Object.values(deployments)) {
      const auth = authOf(d);
      expect(auth).toMatchObject({
        platform: { enabled: true },
        globalValidation: {
          requireAuthentication: true,
          unauthenticatedClientAction: "Return401",
          excludedPaths: ["/api/health"],
        },
        httpSettings: { requireHttps: true },
        login: { tokenStore: { enabled: false } },
      });
      expect(Object.keys(auth.identityProviders)).toEqual(["azureActiveDirectory"]);
    }
  });

  it("the first deployment: the API's own audiences, the Azure CLI as the one client, the deploying user as the one caller, this tenant", () => {
    const entra = authOf(deployments.first).identityProviders.azureActiveDirectory;
    expect(entra).toMatchObject({
      enabled: true,
      registration: { clientId: environment.authClientId },
      validation: {
        allowedAudiences: [`api://${environment.authClientId}`, environment.authClientId],
        defaultAuthorizationPolicy: {
          allowedApplications: [azureCliClientId],
          allowedPrincipals: { identities: [environment.principalId] },
        },
      },
    });
    // The issuer comes from environment() (any cloud), for the deployment's tenant; the tid check says the same.
    const issuer = (entra as { registration: { openIdIssuer: string } }).registration.openIdIssuer;
    expect(issuer).toBe(
      `[format('{0}{1}/v2.0', environment().authentication.loginEndpoint, '${deployment.tenantId}')]`,
    );
    expect(settingsTenant(deployments.first)).toBe(deployment.tenantId);
    // Without a deploying user and no list: no principal check (any identity an allowed application brings).
    const scheduler = authOf(deployments.scheduler).identityProviders.azureActiveDirectory as {
      validation: { defaultAuthorizationPolicy: { allowedPrincipals: unknown } };
    };
    expect(scheduler.validation.defaultAuthorizationPolicy.allowedPrincipals).toEqual({});
  });

  it("AUTH_* lists set: items trimmed, empty ones dropped; another tenant's issuer and tid", () => {
    const entra = authOf(deployments.autoscale).identityProviders.azureActiveDirectory as {
      registration: { openIdIssuer: string };
      validation: unknown;
    };
    expect(entra.validation).toEqual({
      allowedAudiences: ["api://feed-api", "feed-api"],
      defaultAuthorizationPolicy: {
        allowedApplications: ["1f0b6c3e-0000-4000-8000-00000000000a", "2e1c7d4f-0000-4000-8000-00000000000b"],
        allowedPrincipals: { identities: ["3d2e8f5a-0000-4000-8000-00000000000c"] },
      },
    });
    expect(entra.registration.openIdIssuer).toContain(`'${otherTenant}'`);
    expect(settingsTenant(deployments.autoscale)).toBe(otherTenant);
  });

  it("no mutation route is anonymous: the one excluded path serves GET /api/health only; admin routes need a function key too", async () => {
    const routes = await httpRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(10);
    const excluded = authOf(deployments.first).globalValidation.excludedPaths;
    expect(routes.filter((r) => isExcluded(excluded, r.path))).toEqual([
      { name: "getHealth", path: "/api/health", methods: ["GET"], authLevel: "anonymous" },
    ]);
    for (const r of routes) {
      if (r.methods.some((m) => m !== "GET" && m !== "HEAD"))
        expect(isExcluded(excluded, r.path), r.name).toBe(false);
      expect(r.authLevel, r.name).toBe(r.path.startsWith("/api/admin/") ? "function" : "anonymous");
    }
  });
});

describe("outputs for azd: names and endpoints, never a key", () => {
  it("exactly what azd and the postprovision hook read", () => {
    for (const d of Object.values(deployments)) {
      expect(Object.keys(d.outputs).sort()).toEqual(
        [
          "API_URL",
          "AZURE_CLIENT_ID",
          "AZURE_FUNCTION_APP_NAME",
          "AZURE_LOCATION",
          "AZURE_RESOURCE_GROUP",
          "COSMOS_DATABASE_NAME",
          "COSMOS_ENDPOINT",
          "TASKHUB_NAME",
          "VNET_ENABLED",
        ].sort(),
      );
      expect(d.outputs).toMatchObject({
        AZURE_LOCATION: d.parameters.location,
        AZURE_RESOURCE_GROUP: `rg-${environment.environmentName}`,
        COSMOS_DATABASE_NAME: containerDefinition.database.name,
      });
      expect(JSON.stringify(d.outputs)).not.toMatch(/listKeys|AccountKey|primaryMasterKey|ConnectionString/i);
      expect(d.diagnostics).toEqual([]);
    }
  });
});

function settingsTenant(d: Deployment): string | undefined {
  const settings = props(
    ofType(d, "Microsoft.Web/sites/config").find((r) => r.name.endsWith("/appsettings")),
  );
  return settings.WEBSITE_AUTH_AAD_ALLOWED_TENANTS as string | undefined;
}
