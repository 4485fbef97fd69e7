// The host's storage account (AzureWebJobsStorage, the deployment package, Durable's Azure Storage provider): shared
// keys off, identity access only.
import { resourceTags } from '../types.bicep'

@minLength(3)
param name string
param location string
param tags resourceTags
param deploymentContainerName string

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
  }
}

resource blobs 'Microsoft.Storage/storageAccounts/blobServices@2026-09-01' = {
  parent: account
  name: 'default'
}

resource packages 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-09-01' = {
  parent: blobs
  name: deploymentContainerName
}

output name string = account.name
output blobEndpoint string = account.properties.primaryEndpoints.blob
output queueEndpoint string = account.properties.primaryEndpoints.queue
output tableEndpoint string = account.properties.primaryEndpoints.table
output deploymentContainerName string = packages.name
