// The app's user-assigned managed identity: every connection of the app (Cosmos DB, storage, Application Insights,
// the Durable Task Scheduler) authenticates as it; no keys anywhere.
param name string
param location string
param tags object

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output clientId string = identity.properties.clientId
output principalId string = identity.properties.principalId
