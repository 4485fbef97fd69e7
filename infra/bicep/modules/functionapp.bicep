// The Function App on Flex Consumption (Node 22), running as the user-assigned identity: identity-based
// connections for storage, Application Insights, Cosmos DB and (when chosen) the Durable Task Scheduler.
param name string
param planName string
param location string
param tags object
param identityId string
param identityClientId string
param storageBlobEndpoint string
param storageQueueEndpoint string
param storageTableEndpoint string
param deploymentContainerName string
param appInsightsConnectionString string
@description('The app\'s own settings (connections and every knob of src/shared/settings.ts).')
param appSettings object
param durableTaskScheduler bool
param durableTaskSchedulerEndpoint string

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: { name: 'FC1', tier: 'FlexConsumption' }
  properties: { reserved: true }
}

var hostSettings = {
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId
  AzureWebJobsStorage__blobServiceUri: storageBlobEndpoint
  AzureWebJobsStorage__queueServiceUri: storageQueueEndpoint
  AzureWebJobsStorage__tableServiceUri: storageTableEndpoint
  APPLICATIONINSIGHTS_CONNECTION_STRING: appInsightsConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
}
// host.json names Azure Storage; app settings override it for the scheduler (AzureFunctionsJobHost__ paths).
var schedulerSettings = durableTaskScheduler
  ? {
      AzureFunctionsJobHost__extensions__durableTask__storageProvider__type: 'azureManaged'
      AzureFunctionsJobHost__extensions__durableTask__storageProvider__connectionStringName: 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING'
      DURABLE_TASK_SCHEDULER_CONNECTION_STRING: 'Endpoint=${durableTaskSchedulerEndpoint};Authentication=ManagedIdentity;ClientID=${identityClientId}'
    }
  : {}

resource site 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  tags: tags
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: { minTlsVersion: '1.2', alwaysOn: false }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storageBlobEndpoint}${deploymentContainerName}'
          authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: identityId }
        }
      }
      scaleAndConcurrency: { instanceMemoryMB: 2048, maximumInstanceCount: 100 }
      runtime: { name: 'node', version: '22' }
    }
  }
}

resource settings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'appsettings'
  properties: union(hostSettings, appSettings, schedulerSettings)
}

output name string = site.name
