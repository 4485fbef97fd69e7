#!/bin/sh
# azd postprovision hook: writes local.settings.json for running the app locally against the deployed Cosmos DB
# account, with an identity-based connection (your `az login`/DefaultAzureCredential; no keys). The deploying user
# got the Cosmos DB data-plane role when AZURE_PRINCIPAL_ID was set. Storage stays on Azurite (npm run azurite).
set -eu
endpoint=$(azd env get-value COSMOS_ENDPOINT)
cat > local.settings.json <<JSON
{
  "IsEncrypted": false,
  "Values": {
    "FUNCTIONS_WORKER_RUNTIME": "node",
    "AzureWebJobsStorage": "UseDevelopmentStorage=true",
    "COSMOS_CONNECTION__accountEndpoint": "${endpoint}",
    "COSMOS_CONNECTION_SETTING": "COSMOS_CONNECTION",
    "COSMOS_ENSURE_CONTAINERS": "false"
  },
  "Host": { "LocalHttpPort": 7071 }
}
JSON
echo "wrote local.settings.json for ${endpoint} (identity-based connection, no keys)"
