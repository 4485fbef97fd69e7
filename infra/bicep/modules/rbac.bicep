// Least privilege, data plane only: the app's identity (and optionally the deploying user) gets exactly the roles
// its connections use — Cosmos DB Built-in Data Contributor on the account; Storage Blob Data Owner, Queue and
// Table Data Contributor (the host, its deployment package, Durable's Azure Storage provider); Monitoring Metrics
// Publisher (telemetry with local auth off); Durable Task Data Contributor on the scheduler when there is one.
param principalIds array
param appPrincipalId string
param userPrincipalId string
param cosmosAccountName string
param storageAccountName string
param appInsightsName string
param schedulerName string

var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  durableTaskDataContributor: '0ad04412-c4d5-4796-b79c-f76d14c8d402'
}
// Cosmos DB's data-plane role (not an Azure RBAC role): Built-in Data Contributor.
var cosmosDataContributor = '00000000-0000-0000-0000-000000000002'

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' existing = {
  name: cosmosAccountName
}
resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}
resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource cosmosData 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-11-15' = [
  for p in principalIds: {
    parent: cosmos
    name: guid(cosmosDataContributor, p, cosmos.id)
    properties: {
      principalId: p
      roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/${cosmosDataContributor}'
      scope: cosmos.id
    }
  }
]

resource storageRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in [roles.storageBlobDataOwner, roles.storageQueueDataContributor, roles.storageTableDataContributor]: {
    scope: storage
    name: guid(storage.id, appPrincipalId, role)
    properties: {
      principalId: appPrincipalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
    }
  }
]

resource userBlobRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(userPrincipalId)) {
  scope: storage
  name: guid(storage.id, userPrincipalId, roles.storageBlobDataOwner)
  properties: {
    principalId: userPrincipalId
    principalType: 'User'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataOwner)
  }
}

resource metrics 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: appInsights
  name: guid(appInsights.id, appPrincipalId, roles.monitoringMetricsPublisher)
  properties: {
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
  }
}

resource scheduler 'Microsoft.DurableTask/schedulers@2026-02-01' existing = if (!empty(schedulerName)) {
  name: empty(schedulerName) ? 'none' : schedulerName
}

resource schedulerRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(schedulerName)) {
  scope: scheduler
  name: guid(schedulerName, appPrincipalId, roles.durableTaskDataContributor)
  properties: {
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.durableTaskDataContributor)
  }
}
