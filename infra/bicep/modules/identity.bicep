// The app's user-assigned managed identity: every connection of the app (Cosmos DB, storage, Application Insights,
// the Durable Task Scheduler) authenticates as it; no keys anywhere.
import { resourceTags } from '../types.bicep'

param name string
param location string
param tags resourceTags

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output clientId string = identity.properties.clientId
output principalId string = identity.properties.principalId
