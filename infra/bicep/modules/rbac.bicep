// Least privilege, data plane only, each role at the narrowest scope that works:
// - the app's identity (and optionally the deploying user, for local runs against the deployed account): Cosmos DB
//   Built-in Data Contributor on the app's one database, not the account;
// - the app's identity on the host storage account: Storage Blob Data Owner (what the Functions host asks of an
//   identity-based AzureWebJobsStorage), Table Data Contributor (the host's diagnostic events; Durable's Azure
//   Storage provider), Queue Data Contributor only with that provider (nothing else here uses queues);
// - Monitoring Metrics Publisher on Application Insights (telemetry with local auth off);
// - Durable Task Data Contributor on the app's task hub (not the whole scheduler) when the scheduler is chosen, and
//   for the deploying user Durable Task Data Reader there (the scheduler's dashboard, read-only; the quickstart
//   grants the user Contributor on the whole scheduler).
// The deploying user gets no storage role: `azd deploy` posts the package to the app's deployment endpoint with an
// ARM token, and the platform writes it to the deployment container as the app's identity (functionapp.bicep);
// local runs keep their host storage on Azurite (infra/scripts/write-local-settings.sh).
param principalIds string[]
param appPrincipalId string
param cosmosAccountName string
@description('The one database the app uses (containers.json): the Cosmos DB data role\'s scope.')
param cosmosDatabaseName string
param storageAccountName string
@description('Durable Functions keeps its state in the host storage account (queues, tables, blobs).')
param durableAzureStorage bool
param appInsightsName string
param schedulerName string
param taskHubName string
@description('The deploying user: read-only on the task hub, for the scheduler\'s dashboard. Empty: none.')
param dashboardPrincipalId string

var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  durableTaskDataContributor: '0ad04412-c4d5-4796-b79c-f76d14c8d402'
  durableTaskDataReader: 'd6a5505f-6ebb-45a4-896e-ac8274cfc0ac'
}
// Cosmos DB's data-plane role (not an Azure RBAC role): Built-in Data Contributor.
var cosmosDataContributor = '00000000-0000-0000-0000-000000000002'

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2026-03-15' existing = {
  name: cosmosAccountName
}
resource storage 'Microsoft.Storage/storageAccounts@2026-09-01' existing = {
  name: storageAccountName
}
resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

// A data-plane scope is a path below the account: /dbs/<database> holds every container the app reads and writes
// (leases included), and the change feed processor reads the database's metadata, so no narrower scope fits.
var cosmosDatabaseScope = '${cosmos.id}/dbs/${cosmosDatabaseName}'

resource cosmosData 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2026-03-15' = [
  for p in principalIds: {
    parent: cosmos
    name: guid(cosmosDataContributor, p, cosmosDatabaseScope)
    properties: {
      principalId: p
      roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/${cosmosDataContributor}'
      scope: cosmosDatabaseScope
    }
  }
]

var storageRoleIds = concat(
  [roles.storageBlobDataOwner, roles.storageTableDataContributor],
  durableAzureStorage ? [roles.storageQueueDataContributor] : []
)

resource storageRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in storageRoleIds: {
    scope: storage
    name: guid(storage.id, appPrincipalId, role)
    properties: {
      principalId: appPrincipalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
    }
  }
]

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

resource taskHub 'Microsoft.DurableTask/schedulers/taskHubs@2026-02-01' existing = if (!empty(schedulerName)) {
  parent: scheduler
  name: taskHubName
}

resource schedulerRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(schedulerName)) {
  scope: taskHub
  name: guid(schedulerName, taskHubName, appPrincipalId, roles.durableTaskDataContributor)
  properties: {
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.durableTaskDataContributor)
  }
}

resource dashboardRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(schedulerName) && !empty(dashboardPrincipalId)) {
  scope: taskHub
  name: guid(schedulerName, taskHubName, dashboardPrincipalId, roles.durableTaskDataReader)
  properties: {
    principalId: dashboardPrincipalId
    principalType: 'User'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.durableTaskDataReader)
  }
}
