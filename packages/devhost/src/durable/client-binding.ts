/**
 * The `durableClient` input binding's data as the Durable Functions extension builds it
 * (BindingHelper.DurableOrchestrationClientToString + HttpApiHandler.GetInstanceCreationLinks /
 * CreateHttpManagementPayload), pointing at the dev host's own port. `df.getClient(context)` reads it; the JS
 * DurableClient sends every call to `rpcBaseUrl` and builds `createCheckStatusResponse` from `managementUrls`.
 *
 * Keys: the extension appends `code=<systemKey>` (the webhook URL's query) to every link. Locally nothing checks
 * keys (Core Tools does not either), so the dev host uses no key: `requiredQueryStringParameters` is "" and the
 * links carry only `taskHub` and `connection` — exactly what the extension writes when its webhook URL has no query.
 */

/** The webhook API's path; the dev host also serves the rpc API here (same path shapes). */
export const DURABLE_WEBHOOK_PATH = "/runtime/webhooks/durabletask";
/** The extension's placeholder for the instance id in `managementUrls` (BindingHelper.InstanceIdPlaceholder). */
export const INSTANCE_ID_PLACEHOLDER = "INSTANCEID";
/** The extension's default connection name (Azure Storage's `AzureWebJobsStorage`, written as "Storage"). */
export const DEFAULT_CONNECTION_NAME = "Storage";

export interface HttpCreationPayload {
  createNewInstancePostUri: string;
  createAndWaitOnNewInstancePostUri: string;
}

export interface HttpManagementPayload {
  id: string;
  statusQueryGetUri: string;
  sendEventPostUri: string;
  terminatePostUri: string;
  rewindPostUri: string;
  purgeHistoryDeleteUri: string;
  restartPostUri: string;
  suspendPostUri: string;
  resumePostUri: string;
}

/** OrchestrationClientInputData as the extension serializes it (null-valued `connectionName` included). */
export interface DurableClientInputData {
  taskHubName: string;
  connectionName: string | null;
  creationUrls: HttpCreationPayload;
  managementUrls: HttpManagementPayload;
  baseUrl: string;
  requiredQueryStringParameters: string;
  rpcBaseUrl: string;
}

/** The durableClient binding's own options (function.json / extraInputs: `taskHub`, `connectionName`). */
export interface DurableClientBindingOptions {
  taskHub?: unknown;
  connectionName?: unknown;
}

export interface DurableClientDataOptions {
  /** The dev host's base URL as it listens, e.g. `http://127.0.0.1:7071`. */
  baseUrl: string;
  /** The host's task hub (host.json `extensions.durableTask.hubName`). */
  hubName: string;
  /** The binding definition; its `taskHub` / `connectionName` override the host's, as the extension's attribute. */
  binding?: DurableClientBindingOptions;
  /** Appended to every link as the extension appends its system key; "" (default) = no key locally. */
  requiredQueryStringParameters?: string;
}

const nonEmpty = (v: unknown): string | undefined =>
  typeof v === "string" && v.trim() !== "" ? v : undefined;

/**
 * The origin links should use. A host listening on every interface (0.0.0.0 / ::) is reached on the loopback
 * address; a link to 0.0.0.0 would not work from a browser and getClient would rewrite it anyway.
 */
export function reachableOrigin(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.hostname === "0.0.0.0") url.hostname = "127.0.0.1";
  if (url.hostname === "[::]") url.hostname = "[::1]";
  return url.origin;
}

/** `?suffix` / `&suffix` joins as the extension writes them (it always writes the separator). */
function managementLinks(
  origin: string,
  instanceId: string,
  taskHub: string,
  connection: string,
  requiredQuery: string,
): HttpManagementPayload {
  const instancePrefix = `${origin}${DURABLE_WEBHOOK_PATH}/instances/${encodeURIComponent(instanceId)}`;
  let suffix = `taskHub=${encodeURIComponent(taskHub)}&connection=${encodeURIComponent(connection)}`;
  if (requiredQuery !== "") suffix += `&${requiredQuery}`;
  return {
    id: instanceId,
    statusQueryGetUri: `${instancePrefix}?${suffix}`,
    sendEventPostUri: `${instancePrefix}/raiseEvent/{eventName}?${suffix}`,
    terminatePostUri: `${instancePrefix}/terminate?reason={text}&${suffix}`,
    rewindPostUri: `${instancePrefix}/rewind?reason={text}&${suffix}`,
    purgeHistoryDeleteUri: `${instancePrefix}?${suffix}`,
    restartPostUri: `${instancePrefix}/restart?${suffix}`,
    suspendPostUri: `${instancePrefix}/suspend?reason={text}&${suffix}`,
    resumePostUri: `${instancePrefix}/resume?reason={text}&${suffix}`,
  };
}

/** The management links of one instance (the body of a check-status response), for links on `origin`. */
export function instanceManagementUrls(options: {
  origin: string;
  instanceId: string;
  taskHub: string;
  connectionName?: string;
  requiredQueryStringParameters?: string;
}): HttpManagementPayload {
  return managementLinks(
    reachableOrigin(options.origin),
    options.instanceId,
    options.taskHub,
    options.connectionName ?? DEFAULT_CONNECTION_NAME,
    options.requiredQueryStringParameters ?? "",
  );
}

/** The binding data the extension gives a `durableClient` input, for a dev host at `options.baseUrl`. */
export function durableClientInputData(options: DurableClientDataOptions): DurableClientInputData {
  const origin = reachableOrigin(options.baseUrl);
  const requiredQuery = options.requiredQueryStringParameters ?? "";
  const attributeHub = nonEmpty(options.binding?.taskHub);
  const attributeConnection = nonEmpty(options.binding?.connectionName);
  // client.TaskHubName is the attribute's hub when it names one (DurableTaskExtension.GetClient).
  const taskHubName = attributeHub ?? options.hubName;
  const baseUrl = `${origin}${DURABLE_WEBHOOK_PATH}`;
  // Creation links carry only the universal query (the key), not taskHub/connection (GetInstanceCreationLinks).
  const instancePrefix = `${baseUrl}/orchestrators/{functionName}[/{instanceId}]`;
  return {
    taskHubName,
    // Only the gRPC (middleware passthrough) flavour fills connectionName; JsonConvert writes the null.
    connectionName: null,
    creationUrls: {
      createNewInstancePostUri: `${instancePrefix}?${requiredQuery}`,
      createAndWaitOnNewInstancePostUri: `${instancePrefix}?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}&${requiredQuery}`,
    },
    managementUrls: managementLinks(
      origin,
      INSTANCE_ID_PLACEHOLDER,
      taskHubName,
      attributeConnection ?? DEFAULT_CONNECTION_NAME,
      requiredQuery,
    ),
    baseUrl,
    requiredQueryStringParameters: requiredQuery,
    // The extension's rpcBaseUrl is a second local listener (127.0.0.1:17071/durabletask/); the dev host serves
    // the same API on its own port, so one port is enough and no other port can collide.
    rpcBaseUrl: `${baseUrl}/`,
  };
}

/**
 * The WEBSITE_HOSTNAME the app's process needs. durable-functions' getClient rewrites the origin of every
 * creation/management link to `http://localhost:7071` when WEBSITE_HOSTNAME is unset or contains 0.0.0.0 — right
 * only for a host on port 7071. Core Tools sets `WEBSITE_HOSTNAME=localhost:<port>`; the dev host does the same
 * with its own address so links are right on any port. Returns the value set, or undefined when the
 * environment already names a usable host (the user's value wins).
 */
export function ensureWebsiteHostname(env: NodeJS.ProcessEnv, baseUrl: string): string | undefined {
  const current = env.WEBSITE_HOSTNAME;
  if (current && !current.includes("0.0.0.0")) return undefined;
  const host = new URL(reachableOrigin(baseUrl)).host;
  env.WEBSITE_HOSTNAME = host;
  return host;
}
