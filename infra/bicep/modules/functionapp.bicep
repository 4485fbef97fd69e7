// The Function App on Flex Consumption (Node 22), running as the user-assigned identity: identity-based
// connections for storage, Application Insights, Cosmos DB and (when chosen) the Durable Task Scheduler.
// Callers authenticate with Microsoft Entra ID (App Service Authentication, authsettingsV2): a request without a
// valid token for the API's app registration gets 401 before any function runs; only GET /api/health, which
// answers healthy/unhealthy and nothing more, is left anonymous.
import { resourceTags, settingsMap } from '../types.bicep'

param name string
param planName string
param location string
param tags resourceTags
param identityId string
param identityClientId string
param storageBlobEndpoint string
param storageQueueEndpoint string
param storageTableEndpoint string
param deploymentContainerName string
param appInsightsConnectionString string
@description('The app\'s own settings (connections and every knob of src/shared/settings.ts).')
param appSettings settingsMap
param durableTaskScheduler bool
param durableTaskSchedulerEndpoint string
@description('Application (client) ID of the Entra app registration that represents the API.')
param authClientId string
@minLength(1)
@description('Token audiences accepted (the aud claim).')
param authAudiences string[]
@minLength(1)
@description('Client IDs of the applications allowed to call (the appid/azp claim): a token got by any other application is refused with 403.')
param authAllowedClientApplications string[]
@description('Object IDs of the users and identities allowed to call (the oid claim). Empty: any identity an allowed application brings.')
param authAllowedPrincipals string[]
@description('Entra tenant that issues the tokens; tokens of any other tenant are refused.')
param authTenantId string

resource plan 'Microsoft.Web/serverfarms@2025-03-01' = {
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
  // App Service Authentication's tenant check (the tid claim), on top of the tenant's issuer below.
  WEBSITE_AUTH_AAD_ALLOWED_TENANTS: authTenantId
}
// host.json names Azure Storage; app settings override it for the scheduler (AzureFunctionsJobHost__ paths).
var schedulerSettings = durableTaskScheduler
  ? {
      AzureFunctionsJobHost__extensions__durableTask__storageProvider__type: 'azureManaged'
      AzureFunctionsJobHost__extensions__durableTask__storageProvider__connectionStringName: 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING'
      DURABLE_TASK_SCHEDULER_CONNECTION_STRING: 'Endpoint=${durableTaskSchedulerEndpoint};Authentication=ManagedIdentity;ClientID=${identityClientId}'
    }
  : {}

resource site 'Microsoft.Web/sites@2025-03-01' = {
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

resource settings 'Microsoft.Web/sites/config@2025-03-01' = {
  parent: site
  name: 'appsettings'
  properties: union(hostSettings, appSettings, schedulerSettings)
}

// Nothing anonymous but the health probe: every other path (the API, /api/admin/*, the durable extension's
// /runtime/webhooks/durabletask) needs an Entra access token for the API; the function keys of /api/admin/* come
// on top of it (functions/admin.ts). No client secret: the app only validates bearer tokens, it signs nobody in.
resource auth 'Microsoft.Web/sites/config@2025-03-01' = {
  parent: site
  name: 'authsettingsV2'
  // One site config write at a time (two in parallel on one site can conflict).
  dependsOn: [settings]
  properties: {
    platform: { enabled: true }
    globalValidation: {
      requireAuthentication: true
      unauthenticatedClientAction: 'Return401'
      excludedPaths: ['/api/health']
    }
    httpSettings: { requireHttps: true }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: authClientId
          openIdIssuer: '${environment().authentication.loginEndpoint}${authTenantId}/v2.0'
        }
        validation: {
          allowedAudiences: authAudiences
          defaultAuthorizationPolicy: {
            allowedApplications: authAllowedClientApplications
            allowedPrincipals: empty(authAllowedPrincipals) ? {} : { identities: authAllowedPrincipals }
          }
        }
      }
    }
    // Callers send bearer tokens; there is no sign-in session whose tokens would need keeping.
    login: { tokenStore: { enabled: false } }
  }
}

output name string = site.name
output url string = 'https://${site.properties.defaultHostName}'
