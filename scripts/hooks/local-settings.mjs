// What the postprovision hook (postprovision.mjs) writes to local.settings.json, from the azd environment's values:
// a local run (`npm start`, `npm run start:func`) against the deployed Cosmos DB account with an identity-based
// connection (your `az login` through DefaultAzureCredential; no key), the deployed task hub's name, and host storage
// on Azurite. Plain Node, no dependencies (azd runs it on every OS).

/**
 * `{ settings, lines }`: the local.settings.json object to write (undefined when none should be: with private
 * networking the account takes no traffic from this machine) and the lines to print.
 */
export function localSettingsFor(env) {
  const endpoint = env.COSMOS_ENDPOINT;
  if (!endpoint)
    return { settings: undefined, lines: ["COSMOS_ENDPOINT is not set: run `azd provision` first."] };
  if (env.VNET_ENABLED === "true") {
    return {
      settings: undefined,
      lines: [
        `left local.settings.json as it is: with VNET_ENABLED the account ${endpoint} takes no traffic from outside its virtual network.`,
      ],
    };
  }
  const settings = {
    IsEncrypted: false,
    Values: {
      FUNCTIONS_WORKER_RUNTIME: "node",
      AzureWebJobsStorage: "UseDevelopmentStorage=true",
      COSMOS_CONNECTION__accountEndpoint: endpoint,
      COSMOS_CONNECTION_SETTING: "COSMOS_CONNECTION",
      COSMOS_ENSURE_CONTAINERS: "false",
      TASKHUB_NAME: env.TASKHUB_NAME || "cosmosfeed",
    },
    Host: { LocalHttpPort: 7071 },
  };
  const lines = [`wrote local.settings.json for ${endpoint} (identity-based connection, no keys)`];
  if (env.COSMOS_DEV_HOST_CONTAINERS !== "true") {
    lines.push(
      "the dev host's durable task hub container is not provisioned: for orchestrations in a local run, `azd env set COSMOS_DEV_HOST_CONTAINERS true` and `azd provision`.",
    );
  }
  return { settings, lines };
}
