// The host's storage account (AzureWebJobsStorage, the deployment package, Durable's Azure Storage provider): shared
// keys off, identity access only. With privateNetwork it takes no traffic from the internet: the app reaches its
// blob, queue and table services through private endpoints (main.bicep). Every service logs to the workspace.
import { resourceTags } from '../types.bicep'

@minLength(3)
param name string
param location string
param tags resourceTags
param deploymentContainerName string
param privateNetwork bool
@description('The Log Analytics workspace the services\' diagnostic logs go to.')
param workspaceId string

resource account 'Microsoft.Storage/storageAccounts@2026-09-01' = {
  name: take(name, 24)
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    publicNetworkAccess: privateNetwork ? 'Disabled' : 'Enabled'
    networkAcls: privateNetwork
      ? { defaultAction: 'Deny', bypass: 'None' }
      : { defaultAction: 'Allow', bypass: 'AzureServices' }
  }
}

resource blobs 'Microsoft.Storage/storageAccounts/blobServices@2026-09-01' = {
  parent: account
  name: 'default'
}

resource queues 'Microsoft.Storage/storageAccounts/queueServices@2026-09-01' = {
  parent: account
  name: 'default'
}

resource tables 'Microsoft.Storage/storageAccounts/tableServices@2026-09-01' = {
  parent: account
  name: 'default'
}

resource packages 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-09-01' = {
  parent: blobs
  name: deploymentContainerName
}

// The account itself has metrics only; each service has its read, write and delete logs.
var storageLogs = map(['StorageRead', 'StorageWrite', 'StorageDelete'], category => { category: category, enabled: true })
// diagnosticSettings has no GA version after 2016-09-01, a legacy shape (its one name is 'service', metrics go by time
// grain, no category groups) that the linter calls the newest non-preview; 2021-05-01-preview, which the Verified
// Modules use, is the newest usable one.
#disable-next-line use-recent-api-versions
resource accountDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  scope: account
  name: 'to-log-analytics'
  properties: {
    workspaceId: workspaceId
    metrics: [{ category: 'Transaction', enabled: true }]
  }
}

#disable-next-line use-recent-api-versions
resource blobDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  scope: blobs
  name: 'to-log-analytics'
  properties: {
    workspaceId: workspaceId
    logs: storageLogs
    metrics: [{ category: 'Transaction', enabled: true }]
  }
}

#disable-next-line use-recent-api-versions
resource queueDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  scope: queues
  name: 'to-log-analytics'
  properties: {
    workspaceId: workspaceId
    logs: storageLogs
    metrics: [{ category: 'Transaction', enabled: true }]
  }
}

#disable-next-line use-recent-api-versions
resource tableDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  scope: tables
  name: 'to-log-analytics'
  properties: {
    workspaceId: workspaceId
    logs: storageLogs
    metrics: [{ category: 'Transaction', enabled: true }]
  }
}

output id string = account.id
output name string = account.name
output blobEndpoint string = account.properties.primaryEndpoints.blob
output queueEndpoint string = account.properties.primaryEndpoints.queue
output tableEndpoint string = account.properties.primaryEndpoints.table
output deploymentContainerName string = packages.name
