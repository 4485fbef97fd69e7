import { CosmosClient, type CosmosClientOptions } from "@azure/cosmos";
import { DefaultAzureCredential, ManagedIdentityCredential, type TokenCredential } from "@azure/identity";
import { CosmosFeedError } from "../errors.js";

export { CosmosFeedError } from "../errors.js";

/** The connection setting is missing or malformed (code "CosmosConnection"); the message names the setting. */
export class CosmosConnectionError extends CosmosFeedError {}

/** How to reach an account: its endpoint with an account key, or with a token credential (Entra ID). */
export type CosmosConnectionInfo =
  | { kind: "key"; endpoint: string; key: string }
  | { kind: "credential"; endpoint: string; credential: TokenCredential };

/**
 * Reads the connection the way the Functions Cosmos DB extension names it: `<NAME>` holding a connection string
 * (`AccountEndpoint=…;AccountKey=…;`), else the identity section `<NAME>__accountEndpoint` with
 * `<NAME>__credential=managedidentity` (+ `__clientId`) → ManagedIdentityCredential, anything else →
 * DefaultAzureCredential (`az login` locally; `__clientId` as its managed identity). The exact setting wins.
 */
export function resolveCosmosConnection(
  settingName: string,
  env: Record<string, string | undefined> = process.env,
): CosmosConnectionInfo {
  const direct = env[settingName]?.trim();
  if (direct) return parseConnectionString(direct, settingName);
  const section = (key: string) => env[`${settingName}__${key}`]?.trim() || undefined;
  const endpoint = section("accountEndpoint");
  if (!endpoint) {
    throw new CosmosConnectionError(
      `No Cosmos DB connection: set ${settingName} to a connection string (AccountEndpoint=…;AccountKey=…;) or ${settingName}__accountEndpoint to the account's endpoint (identity-based).`,
    );
  }
  checkEndpoint(endpoint, `${settingName}__accountEndpoint`);
  const clientId = section("clientId");
  const credential =
    section("credential")?.toLowerCase() === "managedidentity"
      ? clientId
        ? new ManagedIdentityCredential({ clientId })
        : new ManagedIdentityCredential()
      : new DefaultAzureCredential(clientId ? { managedIdentityClientId: clientId } : {});
  return { kind: "credential", endpoint, credential };
}

/**
 * The endpoint and key of `AccountEndpoint=…;AccountKey=…;` (keys compared case-insensitively, as the SDKs do;
 * values may contain `=`), or undefined when either is missing.
 */
export function readConnectionString(value: string): { endpoint: string; key: string } | undefined {
  const parts = new Map<string, string>();
  for (const part of value.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) parts.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const endpoint = parts.get("accountendpoint");
  const key = parts.get("accountkey");
  return endpoint && key ? { endpoint, key } : undefined;
}

/** `AccountEndpoint=…;AccountKey=…;` as a connection; a clear error naming the setting otherwise. */
export function parseConnectionString(value: string, settingName: string): CosmosConnectionInfo {
  const parts = readConnectionString(value);
  if (!parts) {
    throw new CosmosConnectionError(
      `${settingName} is not a Cosmos DB connection string: it needs AccountEndpoint=…;AccountKey=…;`,
    );
  }
  checkEndpoint(parts.endpoint, settingName);
  return { kind: "key", ...parts };
}

function checkEndpoint(endpoint: string, settingName: string): void {
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) {
    throw new CosmosConnectionError(`${settingName}: '${endpoint}' is not an http(s) URL.`);
  }
}

/** A CosmosClient for the connection named `settingName` (see resolveCosmosConnection). */
export function createCosmosClient(
  settingName: string,
  options: { env?: Record<string, string | undefined>; clientOptions?: Partial<CosmosClientOptions> } = {},
): CosmosClient {
  const info = resolveCosmosConnection(settingName, options.env);
  return info.kind === "key"
    ? new CosmosClient({ endpoint: info.endpoint, key: info.key, ...options.clientOptions })
    : new CosmosClient({
        endpoint: info.endpoint,
        aadCredentials: info.credential,
        ...options.clientOptions,
      });
}
