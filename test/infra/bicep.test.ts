/**
 * Checks of the Bicep that need no compiler, so that `npm test` makes them without .NET: every .bicep file parses
 * with a real Bicep grammar (tree-sitter-bicep, through web-tree-sitter's WebAssembly runtime) without one error node,
 * and the parse trees say what a first `azd up` needs: every container of the app's definition with its partition key
 * and TTL, local auth off, the data-plane roles at their narrowest scopes, every app setting the code reads, no secret
 * in an output, and nothing anonymous once deployed (App Service Authentication against the app's own HTTP routes).
 * The Bicep compiler checks the same on what it compiles and evaluates: test/infra/compiler (`npm run test:infra`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { Language, type Node, Parser } from "web-tree-sitter";
import { readContainerDefinitions } from "../../packages/devhost/src/containerDefinitions.js";
import { CONTAINER_ROLES, containerDefinition } from "../../src/shared/containers.js";
import { SETTINGS } from "../../src/shared/settings.js";
import { httpRoutes, isExcluded } from "./support/http-routes.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const infra = join(root, "infra", "bicep");

function bicepFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? bicepFiles(join(dir, e.name)) : e.name.endsWith(".bicep") ? [join(dir, e.name)] : [],
  );
}

const trees = new Map<string, Node>();
const sources = new Map<string, string>();

beforeAll(async () => {
  await Parser.init();
  const wasm = createRequire(import.meta.url).resolve("tree-sitter-bicep/tree-sitter-bicep.wasm");
  const parser = new Parser();
  parser.setLanguage(await Language.load(wasm));
  for (const file of bicepFiles(infra)) {
    const text = readFileSync(file, "utf8");
    const tree = parser.parse(text);
    if (!tree) throw new Error(`no tree for ${file}`);
    trees.set(relative(infra, file), tree.rootNode);
    sources.set(relative(infra, file), text);
  }
});

function all(node: Node, type: string): Node[] {
  const out: Node[] = [];
  const walk = (n: Node) => {
    if (n.type === type) out.push(n);
    for (const c of n.children) if (c) walk(c);
  };
  walk(node);
  return out;
}

const tree = (file: string) => trees.get(file) as Node;
const unquote = (s: string) => s.replace(/^'|'$/g, "");

/** Resource declarations of a file: symbolic name, type string, and the node. */
function resources(file: string) {
  return all(tree(file), "resource_declaration").map((r) => ({
    name: r.namedChildren[0]?.text ?? "",
    type: unquote(r.namedChildren[1]?.text ?? ""),
    node: r,
  }));
}

/** The object a resource declares (inside its `if (…)` or `for …` when it has one). */
function body(resource: Node | undefined): Node | undefined {
  const direct = resource?.namedChildren.find((c) => c?.type === "object");
  if (direct) return direct;
  const wrapped = resource?.namedChildren.find(
    (c) => c?.type === "if_statement" || c?.type === "for_statement",
  );
  return wrapped?.namedChildren.find((c) => c?.type === "object") ?? undefined;
}

/** The value at a key path of an object, one level per key (not a search: `enabled` means this object's own). */
function at(node: Node | undefined, ...keys: string[]): Node | undefined {
  let current = node;
  for (const key of keys) {
    if (current?.type !== "object") return undefined;
    const property = current.namedChildren.find(
      (p) => p?.type === "object_property" && unquote(p.namedChildren[0]?.text ?? "") === key,
    );
    current = property?.namedChildren[1] ?? undefined;
  }
  return current;
}

/** A parameter declaration of a file and its decorators' text. */
function param(file: string, name: string) {
  const node = all(tree(file), "parameter_declaration").find((p) => p.namedChildren[0]?.text === name);
  const decorators = node?.previousNamedSibling?.type === "decorators" ? node.previousNamedSibling.text : "";
  return { node, decorators, hasDefault: (node?.namedChildren.length ?? 0) > 2 };
}

/** `key: value` pairs anywhere under `node` (object properties), as text. */
function properties(node: Node): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const p of all(node, "object_property")) {
    const key = unquote(p.namedChildren[0]?.text ?? "");
    const value = p.namedChildren[1]?.text ?? "";
    out.set(key, [...(out.get(key) ?? []), value]);
  }
  return out;
}

describe("Bicep: parsed with tree-sitter-bicep", () => {
  it("every .bicep file parses without an error or missing node", () => {
    expect(trees.size).toBeGreaterThanOrEqual(8);
    for (const [file, node] of trees) {
      const errors = [...all(node, "ERROR"), ...all(node, "MISSING")].map(
        (e) => `${file}:${e.startPosition.row + 1}`,
      );
      expect(errors, file).toEqual([]);
      expect(node.hasError, file).toBe(false);
    }
  });

  it("provisions every container of src/shared/containers.json, with its partition key and TTL", () => {
    // main.bicep loads the app's own definition and hands it to the cosmos module …
    const load = all(tree("main.bicep"), "call_expression").find(
      (c) => c.namedChildren[0]?.text === "loadJsonContent",
    );
    const path = unquote(load?.namedChildren[1]?.namedChildren[0]?.text ?? "");
    expect(resolve(infra, path)).toBe(join(root, "src", "shared", "containers.json"));
    // … which declares one container per entry, taking its name, partition key, TTL and indexing from it.
    const containers = resources("modules/cosmos.bicep").find((r) =>
      r.type.startsWith("Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@"),
    );
    expect(containers).toBeDefined();
    const loop = all(containers?.node as Node, "for_statement")[0];
    expect(loop?.text).toContain("in provisioned");
    // … all of them but the dev host's own (devHostOnly), unless the deployment asks for those too.
    expect(sources.get("modules/cosmos.bicep")).toContain(
      "var provisioned = filter(definition.containers, c => devHostContainers || !(c.?devHostOnly ?? false))",
    );
    const text = containers?.node.text ?? "";
    for (const use of [
      "id: c.name",
      "paths: [c.partitionKey]",
      "defaultTtl: c.?defaultTtl",
      "indexingPolicy: c.?indexingPolicy",
    ]) {
      expect(text).toContain(use);
    }
    // And the definition has what the triggers and locks need.
    const byRole = new Map(containerDefinition.containers.map((c) => [c.role, c]));
    expect(byRole.get("leases")).toMatchObject({ partitionKey: "/id", defaultTtl: -1 });
    // A lean index on leases: reads are by id (always indexed); every lease write then costs the least.
    expect(byRole.get("leases")?.indexingPolicy?.excludedPaths).toEqual([{ path: "/*" }]);
    expect(byRole.get("locks")?.partitionKey).toBe("/id");
    expect(byRole.get("locks")?.defaultTtl).toBeGreaterThan(0);
    expect(byRole.get("durable")).toMatchObject({ partitionKey: "/pk", devHostOnly: true });
  });

  it("the Cosmos DB account has local (key) auth off and TLS 1.2; storage has shared keys off", () => {
    const account = resources("modules/cosmos.bicep").find((r) =>
      r.type.startsWith("Microsoft.DocumentDB/databaseAccounts@"),
    );
    const props = properties(account?.node as Node);
    expect(props.get("disableLocalAuth")).toEqual(["true"]);
    expect(props.get("minimalTlsVersion")).toEqual(["'Tls12'"]);
    const storage = resources("modules/storage.bicep").find((r) =>
      r.type.startsWith("Microsoft.Storage/storageAccounts@"),
    );
    expect(properties(storage?.node as Node).get("allowSharedKeyAccess")).toEqual(["false"]);
    const appInsights = resources("modules/monitoring.bicep").find((r) =>
      r.type.startsWith("Microsoft.Insights/components@"),
    );
    expect(properties(appInsights?.node as Node).get("DisableLocalAuth")).toEqual(["true"]);
  });

  it("assigns the data-plane roles: Cosmos DB Data Contributor, storage blob/queue/table, and the scheduler's when chosen", () => {
    const rbac = resources("modules/rbac.bicep");
    const cosmosRole = rbac.find((r) =>
      r.type.startsWith("Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@"),
    );
    // The Bicep interpolation, literally: ${cosmos.id}/sqlRoleDefinitions/${cosmosDataContributor}.
    expect(cosmosRole?.node.text).toContain(`sqlRoleDefinitions/${"$"}{cosmosDataContributor}`);
    expect(sources.get("modules/rbac.bicep")).toContain(
      "cosmosDataContributor = '00000000-0000-0000-0000-000000000002'",
    );
    const text = sources.get("modules/rbac.bicep") ?? "";
    for (const id of [
      "b7e6dc6d-f1e8-4753-8033-0f276bb0955b", // Storage Blob Data Owner
      "974c5e8b-45b9-4653-ba55-5f855dd0fb88", // Storage Queue Data Contributor
      "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3", // Storage Table Data Contributor
      "0ad04412-c4d5-4796-b79c-f76d14c8d402", // Durable Task Data Contributor
    ]) {
      expect(text).toContain(id);
    }
    const schedulerRole = rbac.find((r) => r.name === "schedulerRole");
    expect(schedulerRole?.node.text).toContain("if (!empty(schedulerName))");
    // No role above data plane: nothing grants Contributor/Owner (b24988ac…, 8e3af657…).
    expect(text).not.toMatch(/b24988ac-6180-42a0-ab88-20f7382dd24c|8e3af657-a8ff-443c-a75c-2fe8c4bcb635/);
  });

  it("sets every app setting the code reads, identity-based connections, and nothing the code does not know", () => {
    const appSettings = all(tree("main.bicep"), "object_property").find(
      (p) => p.namedChildren[0]?.text === "appSettings",
    );
    const keys = all(appSettings?.namedChildren[1] as Node, "object_property").map((p) =>
      unquote(p.namedChildren[0]?.text ?? ""),
    );
    const knobs: string[] = Object.values(SETTINGS).map((k) => k.setting);
    for (const setting of knobs) expect(keys, setting).toContain(setting);
    const connection = [
      "COSMOS_CONNECTION__accountEndpoint",
      "COSMOS_CONNECTION__credential",
      "COSMOS_CONNECTION__clientId",
    ];
    for (const k of connection) expect(keys).toContain(k);
    // Drift: every app setting main.bicep sets for the app is a knob or the identity connection.
    expect(keys.filter((k) => !knobs.includes(k) && !connection.includes(k))).toEqual([]);
    expect(keys).not.toContain("COSMOS_CONNECTION"); // never a connection string with a key
    const host = sources.get("modules/functionapp.bicep") ?? "";
    for (const k of [
      "AzureWebJobsStorage__credential",
      "AzureWebJobsStorage__clientId",
      "AzureWebJobsStorage__blobServiceUri",
      "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
    ]) {
      expect(host).toContain(k);
    }
    expect(host).toContain("runtime: { name: 'node', version: '22' }");
    expect(host).toContain("name: 'FC1'");
  });

  it("outputs no secret: no key, no listKeys/listConnectionStrings anywhere", () => {
    for (const [file, text] of sources) {
      expect(text, file).not.toMatch(/listKeys\(|listConnectionStrings\(|primaryMasterKey|AccountKey=/);
      for (const out of all(tree(file), "output_declaration")) {
        const name = out.namedChildren[0]?.text ?? "";
        expect(name, `${file}: output ${name}`).not.toMatch(/key|secret|password/i);
      }
    }
  });
});

describe("drift: one set of containers for the code, the dev host and Bicep", () => {
  it("the roles the code looks up are exactly the definition's; the dev host reads the same file", () => {
    expect([...CONTAINER_ROLES].sort()).toEqual(containerDefinition.containers.map((c) => c.role).sort());
    const devhost = readContainerDefinitions(join(root, "src", "shared", "containers.json"));
    expect([...(devhost?.roles.entries() ?? [])].sort()).toEqual(
      containerDefinition.containers.map((c) => [c.role, c.name]).sort(),
    );
    expect(devhost?.database).toBe(containerDefinition.database.name);
    // Bicep provisions from that same file (checked above), so the three sets are one.
  });
});

describe("azd wiring", () => {
  it("main.parameters.json feeds declared parameters only, every knob among them; azure.yaml names the service and the hook", () => {
    const declared = all(tree("main.bicep"), "parameter_declaration").map(
      (p) => p.namedChildren[0]?.text ?? "",
    );
    const parameters = JSON.parse(readFileSync(join(infra, "main.parameters.json"), "utf8")) as {
      parameters: Record<string, { value: string }>;
    };
    for (const name of Object.keys(parameters.parameters)) expect(declared, name).toContain(name);
    // Each knob's azd variable is its app setting name, with the settings module's default.
    const values = Object.values(parameters.parameters).map((p) => p.value);
    for (const knob of Object.values(SETTINGS)) {
      if (knob.setting === "COSMOS_ENSURE_CONTAINERS" || knob.setting === "COSMOS_CONNECTION_SETTING")
        continue;
      expect(values, knob.setting).toContain(`\${${knob.setting}=${knob.default}}`);
    }
    const yaml = readFileSync(join(root, "azure.yaml"), "utf8");
    expect(yaml).toMatch(/services:\s+api:\s+project: \.\s+language: ts\s+host: function/);
    expect(yaml).toContain("path: infra/bicep");
    // azd ships the folder the prepackage hook stages (npm run package --stage): production dependencies only.
    const dist = /\n\s+dist: (\S+)/.exec(yaml)?.[1];
    expect(dist).toBe(".data/package/app");
    expect(yaml).toContain(`run: node scripts/package.mjs --stage ${dist}`);
    // The hooks themselves (both OSes, what they write and check): test/infra/azure-yaml.test.ts, test/infra/hooks.
  });
});

describe("nothing anonymous in a deployment: Microsoft Entra ID in front of every route but the health probe", () => {
  const authSettings = () =>
    resources("modules/functionapp.bicep").find(
      (r) =>
        r.type.startsWith("Microsoft.Web/sites/config@") &&
        at(body(r.node), "name")?.text === "'authsettingsV2'",
    );

  it("App Service Authentication on the function app: a token required, 401 without one, no token store, only /api/health excluded", () => {
    const auth = body(authSettings()?.node);
    expect(at(auth, "parent")?.text).toBe("site");
    const props = at(auth, "properties");
    expect(at(props, "platform", "enabled")?.text).toBe("true");
    expect(at(props, "globalValidation", "requireAuthentication")?.text).toBe("true");
    expect(at(props, "globalValidation", "unauthenticatedClientAction")?.text).toBe("'Return401'");
    const excluded = at(props, "globalValidation", "excludedPaths");
    expect(excluded?.namedChildren.map((p) => p?.text)).toEqual(["'/api/health'"]);
    expect(at(props, "login", "tokenStore", "enabled")?.text).toBe("false");
    const entra = at(props, "identityProviders", "azureActiveDirectory");
    expect(at(entra, "enabled")?.text).toBe("true");
    expect(at(entra, "registration", "clientId")?.text).toBe("authClientId");
    // Tokens of the one tenant: its issuer, and the tid check App Service Authentication reads from an app setting.
    expect(at(entra, "registration", "openIdIssuer")?.text).toContain(`${"$"}{authTenantId}/v2.0`);
    expect(sources.get("modules/functionapp.bicep")).toContain(
      "WEBSITE_AUTH_AAD_ALLOWED_TENANTS: authTenantId",
    );
    expect(at(entra, "validation", "allowedAudiences")?.text).toBe("authAudiences");
    const policy = at(entra, "validation", "defaultAuthorizationPolicy");
    expect(at(policy, "allowedApplications")?.text).toBe("authAllowedClientApplications");
    expect(at(policy, "allowedPrincipals")?.text).toContain("identities: authAllowedPrincipals");
    // An empty list would mean "no check" (or refuse everyone): the module takes at least one of each.
    for (const name of ["authAudiences", "authAllowedClientApplications"]) {
      expect(param("modules/functionapp.bicep", name).decorators, name).toContain("@minLength(1)");
    }
    // No other identity provider, nothing that lets an anonymous caller through.
    expect(at(props, "identityProviders")?.namedChildren.length).toBe(1);
    for (const [file, text] of sources) expect(text, file).not.toMatch(/AllowAnonymous/);
  });

  it("the API's app registration, audiences, allowed clients and principals, and tenant are azd variables wired through main.bicep", () => {
    // The client ID has no default, so azd asks for it (and a bare deployment fails) instead of deploying open.
    const clientId = param("main.bicep", "authClientId");
    expect(clientId.node).toBeDefined();
    expect(clientId.hasDefault).toBe(false);
    expect(clientId.decorators).toContain("@minLength(1)");
    const parameters = JSON.parse(readFileSync(join(infra, "main.parameters.json"), "utf8")) as {
      parameters: Record<string, { value: string }>;
    };
    const azdVariables = {
      authClientId: "AUTH_CLIENT_ID",
      authAudiences: "AUTH_AUDIENCES",
      authAllowedClientApplications: "AUTH_ALLOWED_CLIENT_APPLICATIONS",
      authAllowedPrincipals: "AUTH_ALLOWED_PRINCIPALS",
      authTenantId: "AUTH_TENANT_ID",
    };
    for (const [name, variable] of Object.entries(azdVariables)) {
      // No `=default`: an unset variable leaves Bicep's default, or makes azd ask when there is none.
      expect(parameters.parameters[name]?.value, name).toBe(`\${${variable}}`);
      expect(param("main.bicep", name).node, name).toBeDefined();
      expect(param("modules/functionapp.bicep", name).node, name).toBeDefined();
    }
    const module = all(tree("main.bicep"), "module_declaration").find(
      (m) => m.namedChildren[0]?.text === "api",
    );
    const params = at(body(module), "params");
    expect(at(params, "authClientId")?.text).toBe("authClientId");
    expect(at(params, "authAudiences")?.text).toBe(
      `empty(csv(authAudiences)) ? ['api://${"$"}{authClientId}', authClientId] : csv(authAudiences)`,
    );
    // Without a list, the Azure CLI alone (the documented `az account get-access-token`) …
    expect(at(params, "authAllowedClientApplications")?.text).toMatch(
      /^empty\(csv\(authAllowedClientApplications\)\)\s*\?\s*\[azureCliClientId\]\s*:\s*csv\(authAllowedClientApplications\)$/,
    );
    expect(sources.get("main.bicep")).toContain("azureCliClientId = '04b07795-8ddb-461a-bbee-02f9e1bf7b46'");
    // … as the deploying user alone.
    expect(at(params, "authAllowedPrincipals")?.text).toMatch(
      /^empty\(csv\(authAllowedPrincipals\)\)\s*\?\s*\(empty\(principalId\) \? \[\] : \[principalId\]\)\s*:\s*csv\(authAllowedPrincipals\)$/,
    );
    expect(at(params, "authTenantId")?.text).toBe("empty(authTenantId) ? tenant().tenantId : authTenantId");
  });

  it("no mutation route is anonymous once deployed: the one excluded path serves GET /api/health only; admin routes need a function key too", async () => {
    const routes = await httpRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(10);
    const excluded = (
      at(at(body(authSettings()?.node), "properties"), "globalValidation", "excludedPaths")?.namedChildren ??
      []
    ).map((p) => unquote(p?.text ?? ""));
    // What stays anonymous once deployed: the health probe, a GET, and nothing else.
    expect(routes.filter((r) => isExcluded(excluded, r.path))).toEqual([
      { name: "getHealth", path: "/api/health", methods: ["GET"], authLevel: "anonymous" },
    ]);
    for (const r of routes) {
      if (r.methods.some((m) => m !== "GET" && m !== "HEAD"))
        expect(isExcluded(excluded, r.path), r.name).toBe(false);
      // The operational reads need a function key on top of the token; the API itself, a token alone.
      expect(r.authLevel, r.name).toBe(r.path.startsWith("/api/admin/") ? "function" : "anonymous");
    }
    expect(
      routes
        .filter((r) => r.authLevel === "function")
        .map((r) => r.name)
        .sort(),
    ).toEqual(["getLeases", "getLocks"]);
  });
});

describe("least privilege: each role at the narrowest scope", () => {
  const rbac = () => resources("modules/rbac.bicep");

  it("the Cosmos DB data role is scoped to the app's one database, not the account", () => {
    const assignment = body(
      rbac().find((r) => r.type.startsWith("Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@"))
        ?.node,
    );
    expect(at(assignment, "properties", "scope")?.text).toBe("cosmosDatabaseScope");
    expect(sources.get("modules/rbac.bicep")).toContain(
      `var cosmosDatabaseScope = '${"$"}{cosmos.id}/dbs/${"$"}{cosmosDatabaseName}'`,
    );
    const module = all(tree("main.bicep"), "module_declaration").find(
      (m) => m.namedChildren[0]?.text === "rbac",
    );
    expect(at(at(body(module), "params"), "cosmosDatabaseName")?.text).toBe(
      "containerDefinition.database.name",
    );
    // The database the code uses is the one of containers.json, which main.bicep loads.
    expect(containerDefinition.database.name).toBe("cosmos-feed-app");
  });

  it("the deploying user gets no storage role; the app's identity gets blob and table, queue only with Durable's Azure Storage provider", () => {
    const assignments = rbac().filter((r) => r.type.startsWith("Microsoft.Authorization/roleAssignments@"));
    expect(assignments.map((a) => a.name).sort()).toEqual([
      "dashboardRole",
      "metrics",
      "schedulerRole",
      "storageRoles",
    ]);
    // Every Azure RBAC assignment is the app's but one: the user (in principalIds) gets the Cosmos DB data role and,
    // with the scheduler, a read-only role on the task hub for its dashboard — no storage role.
    for (const a of assignments.filter((a) => a.name !== "dashboardRole")) {
      expect(at(at(body(a.node), "properties"), "principalId")?.text, a.name).toBe("appPrincipalId");
    }
    const dashboard = assignments.find((a) => a.name === "dashboardRole");
    expect(at(at(body(dashboard?.node), "properties"), "principalId")?.text).toBe("dashboardPrincipalId");
    expect(at(body(dashboard?.node), "scope")?.text).toBe("taskHub");
    expect(at(at(body(dashboard?.node), "properties"), "roleDefinitionId")?.text).toContain(
      "roles.durableTaskDataReader",
    );
    expect(param("modules/rbac.bicep", "userPrincipalId").node).toBeUndefined();
    const text = sources.get("modules/rbac.bicep") ?? "";
    expect(text).toMatch(
      /var storageRoleIds = concat\(\s*\[roles\.storageBlobDataOwner, roles\.storageTableDataContributor\],\s*durableAzureStorage \? \[roles\.storageQueueDataContributor\] : \[\]\s*\)/,
    );
    const storageRoles = assignments.find((a) => a.name === "storageRoles");
    expect(all(storageRoles?.node as Node, "for_statement")[0]?.text).toContain("in storageRoleIds");
    const module = all(tree("main.bicep"), "module_declaration").find(
      (m) => m.namedChildren[0]?.text === "rbac",
    );
    expect(at(at(body(module), "params"), "durableAzureStorage")?.text).toBe(
      "durableStorageProvider == 'AzureStorage'",
    );
  });

  it("the Durable Task Scheduler role is on the app's task hub, not the whole scheduler", () => {
    const role = rbac().find((r) => r.name === "schedulerRole");
    expect(at(body(role?.node), "scope")?.text).toBe("taskHub");
    const hub = rbac().find((r) => r.name === "taskHub");
    expect(hub?.type).toMatch(/^Microsoft\.DurableTask\/schedulers\/taskHubs@/);
    expect(hub?.node.text).toContain("existing");
    expect(at(body(hub?.node), "parent")?.text).toBe("scheduler");
    expect(at(body(hub?.node), "name")?.text).toBe("taskHubName");
  });
});
