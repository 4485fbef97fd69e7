import { CosmosClient, type CosmosClientOptions, type PluginConfig } from "@azure/cosmos";
import {
  ClientSecretCredential,
  DefaultAzureCredential,
  ManagedIdentityCredential,
  type TokenCredential,
  WorkloadIdentityCredential,
} from "@azure/identity";
import { readConnectionString } from "@cosmos-feed/core/cosmos/client";
import { CosmosFeedError } from "@cosmos-feed/core/errors";
import { emulatorAgent } from "./cosmos/emulatorAgent.js";

/**
 * Resolves a binding's `connection` the way the Functions Cosmos DB extension does
 * (WebJobsConfigurationExtensions.GetWebJobsConnectionStringSection + DefaultCosmosDBServiceFactory):
 *
 * 1. the names `AzureWebJobs<NAME>` then `<NAME>`, each first under `ConnectionStrings` (`ConnectionStrings__<NAME>`
 *    in the environment) and then as a plain setting;
 * 2. the first name whose setting holds a non-blank value is a **connection string**
 *    (`AccountEndpoint=…;AccountKey=…;`) — an exact match wins over a prefix;
 * 3. otherwise the first name that is a **section** (`<NAME>__…` settings) must have `accountEndpoint`; the credential
 *    comes from the same section as Microsoft.Extensions.Azure builds it: `credential=managedidentity` →
 *    ManagedIdentityCredential (`clientId` or `managedIdentityResourceId`), `credential=workloadidentity` →
 *    WorkloadIdentityCredential, `tenantId` + `clientId` + `clientSecret` → ClientSecretCredential, anything else →
 *    DefaultAzureCredential (with `clientId` as its managed identity client id).
 *
 * Setting names compare case-insensitively (.NET configuration keys do); `:` and `__` are both section separators.
 */

export type CosmosConnection =
  | {
      kind: "key";
      /** The setting the connection came from (e.g. `COSMOS` or `ConnectionStrings:COSMOS`). */
      source: string;
      endpoint: string;
      key: string;
    }
  | {
      kind: "credential";
      source: string;
      endpoint: string;
      credential: TokenCredential;
      /** What built the credential: "DefaultAzureCredential", "ManagedIdentityCredential", … (for logs). */
      credentialType: string;
    };

/** No setting resolves, or one is malformed. `tried` lists the setting names looked at, in order. */
export class CosmosConnectionError extends CosmosFeedError {
  readonly settingName: string;
  readonly tried: readonly string[];
  constructor(message: string, settingName: string, tried: readonly string[]) {
    super(message, { statusCode: 500 });
    this.settingName = settingName;
    this.tried = tried;
  }
}

/** Factories for the credential types (tests replace them; the defaults are @azure/identity's). */
export interface CredentialFactories {
  defaultAzure(options: { managedIdentityClientId?: string; tenantId?: string }): TokenCredential;
  managedIdentity(options: { clientId?: string; resourceId?: string }): TokenCredential;
  workloadIdentity(options: { clientId?: string; tenantId?: string }): TokenCredential;
  clientSecret(tenantId: string, clientId: string, secret: string): TokenCredential;
}

const identityFactories: CredentialFactories = {
  defaultAzure: (o) =>
    new DefaultAzureCredential({
      ...(o.managedIdentityClientId ? { managedIdentityClientId: o.managedIdentityClientId } : {}),
      ...(o.tenantId ? { tenantId: o.tenantId } : {}),
    }),
  managedIdentity: (o) =>
    o.resourceId
      ? new ManagedIdentityCredential({ resourceId: o.resourceId })
      : o.clientId
        ? new ManagedIdentityCredential({ clientId: o.clientId })
        : new ManagedIdentityCredential(),
  workloadIdentity: (o) =>
    new WorkloadIdentityCredential({
      ...(o.clientId ? { clientId: o.clientId } : {}),
      ...(o.tenantId ? { tenantId: o.tenantId } : {}),
    }),
  clientSecret: (t, c, s) => new ClientSecretCredential(t, c, s),
};

/** Parses `AccountEndpoint=…;AccountKey=…;`: the library's reader, so the app and the dev host agree. */
export const parseCosmosConnectionString = readConnectionString;

type Env = Record<string, string | undefined>;

/** Case-insensitive view of the settings, with `:` and `__` both as separators. */
function normalizedSettings(env: Env): Map<string, string> {
  const map = new Map<string, string>();
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    const key = k.replace(/__/g, ":").toLowerCase();
    if (!map.has(key)) map.set(key, v);
  }
  return map;
}

function sectionOf(settings: Map<string, string>, name: string): Map<string, string> {
  const prefix = `${name.toLowerCase()}:`;
  const section = new Map<string, string>();
  for (const [k, v] of settings) if (k.startsWith(prefix)) section.set(k.slice(prefix.length), v);
  return section;
}

export interface ResolveConnectionOptions {
  credentials?: Partial<CredentialFactories>;
}

/**
 * Resolves the app setting `settingName` (a binding's `connection`) against `env` (process.env with the app's
 * local.settings.json Values). Throws {@link CosmosConnectionError} when nothing resolves, listing what it tried.
 */
export function resolveCosmosConnection(
  settingName: string,
  env: Env,
  options: ResolveConnectionOptions = {},
): CosmosConnection {
  if (typeof settingName !== "string" || settingName.trim() === "") {
    throw new CosmosConnectionError(
      "A Cosmos DB binding has no 'connection': set it to the name of an app setting holding a connection string, or the prefix of <NAME>__accountEndpoint.",
      String(settingName),
      [],
    );
  }
  const settings = normalizedSettings(env);
  const names = [`AzureWebJobs${settingName}`, settingName];
  const candidates = names.flatMap((n) => [`ConnectionStrings:${n}`, n]);
  const tried: string[] = [];
  for (const candidate of candidates) {
    tried.push(candidate, `${candidate}:accountEndpoint`);
    const value = settings.get(candidate.toLowerCase());
    const section = sectionOf(settings, candidate);
    if (value !== undefined && value.trim() !== "") {
      const parsed = parseCosmosConnectionString(value);
      if (!parsed) {
        throw new CosmosConnectionError(
          `App setting '${candidate}' (the connection '${settingName}') is not a Cosmos DB connection string: expected 'AccountEndpoint=https://…;AccountKey=…;'.`,
          settingName,
          tried,
        );
      }
      return { kind: "key", source: candidate, ...parsed };
    }
    if (section.size === 0) continue;
    const endpoint = section.get("accountendpoint");
    if (!endpoint || endpoint.trim() === "") {
      throw new CosmosConnectionError(
        `Connection '${settingName}': the settings '${candidate}__…' have no 'accountEndpoint' (found: ${[...section.keys()].join(", ")}). Set ${candidate}__accountEndpoint=https://<account>.documents.azure.com:443/ or make '${settingName}' a connection string.`,
        settingName,
        tried,
      );
    }
    const { credential, credentialType } = credentialFor(section, {
      ...identityFactories,
      ...options.credentials,
    });
    return { kind: "credential", source: candidate, endpoint: endpoint.trim(), credential, credentialType };
  }
  throw new CosmosConnectionError(
    `Cosmos DB connection '${settingName}' does not resolve: none of these settings is set: ${tried.join(", ")}. Set '${settingName}' to a connection string (AccountEndpoint=…;AccountKey=…;) or '${settingName}__accountEndpoint' for an identity-based connection.`,
    settingName,
    tried,
  );
}

function credentialFor(
  section: Map<string, string>,
  f: CredentialFactories,
): { credential: TokenCredential; credentialType: string } {
  const get = (k: string) => {
    const v = section.get(k.toLowerCase());
    return v && v.trim() !== "" ? v.trim() : undefined;
  };
  const kind = get("credential")?.toLowerCase();
  const clientId = get("clientId");
  const tenantId = get("tenantId");
  if (kind === "managedidentity") {
    return {
      credential: f.managedIdentity({ clientId, resourceId: get("managedIdentityResourceId") }),
      credentialType: "ManagedIdentityCredential",
    };
  }
  if (kind === "workloadidentity") {
    return {
      credential: f.workloadIdentity({ clientId, tenantId }),
      credentialType: "WorkloadIdentityCredential",
    };
  }
  const secret = get("clientSecret");
  if (tenantId && clientId && secret) {
    return {
      credential: f.clientSecret(tenantId, clientId, secret),
      credentialType: "ClientSecretCredential",
    };
  }
  return {
    credential: f.defaultAzure({ managedIdentityClientId: clientId, tenantId }),
    credentialType: "DefaultAzureCredential",
  };
}

/**
 * A CosmosClient for a resolved connection, with the binding's preferred regions (as the extension's
 * BuildClientOptions; the JS SDK always uses the gateway, the extension's default mode) and a user agent suffix
 * (host.json `extensions.cosmosDB.userAgentSuffix`); `plugins` are SDK request plugins (the dev host dashboard's RU
 * tally).
 */
export function createCosmosClient(
  connection: CosmosConnection,
  options: { preferredLocations?: string[]; userAgentSuffix?: string; plugins?: PluginConfig[] } = {},
): CosmosClient {
  // `plugins` is a supported client option the SDK's public typings leave out.
  const common: Omit<CosmosClientOptions, "key" | "aadCredentials"> & { plugins?: PluginConfig[] } = {
    endpoint: connection.endpoint,
    agent: emulatorAgent(connection.endpoint),
    ...(options.preferredLocations?.length
      ? { connectionPolicy: { preferredLocations: options.preferredLocations } }
      : {}),
    ...(options.userAgentSuffix ? { userAgentSuffix: options.userAgentSuffix } : {}),
    ...(options.plugins?.length ? { plugins: options.plugins } : {}),
  };
  return connection.kind === "key"
    ? new CosmosClient({ ...common, key: connection.key })
    : new CosmosClient({ ...common, aadCredentials: connection.credential });
}
