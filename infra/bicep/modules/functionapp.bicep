// The Function App on Flex Consumption (Node 22), running as the user-assigned identity: identity-based
// connections for storage, Application Insights, Cosmos DB and (when chosen) the Durable Task Scheduler.
// Callers authenticate with Microsoft Entra ID (App Service Authentication, authsettingsV2): a request without a
// valid token for the API's app registration gets 401 before any function runs; only GET /api/health, which
// answers healthy/unhealthy and nothing more, is left anonymous. Nothing else is open: no basic (FTP or SCM)
// publishing credentials, FTP(S) off, TLS 1.2 at least on the site and its SCM endpoint, HTTPS only.
// Only the site carries azd's service tag: azd before 1.23.4 fails `azd deploy` when two resources carry it.
import { resourceTags, settingsMap } from '../types.bicep'

param name string
param planName string
param location string
param tags resourceTags
@description('azd\'s service name (azure.yaml): the azd-service-name tag of the site, and of nothing else.')
param azdServiceName string
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
@description('The task hub the app addresses: the app setting host.json\'s hubName (%TASKHUB_NAME%) resolves.')
param taskHubName string
@description('Memory of each instance (MB).')
param instanceMemoryMB int
@description('Most instances the app scales out to.')
param maximumInstanceCount int
@description('Always-ready instances per Flex Consumption scale group (e.g. { http: 1 }); empty: none.')
param alwaysReady { *: int }
@description('Subnet the app is integrated into (private networking); empty: none.')
param subnetId string
@description('The Log Analytics workspace the app\'s diagnostic logs go to.')
param workspaceId string
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
  // host.json: "hubName": "%TASKHUB_NAME%". One name for the app, the scheduler's task hub and its role.
  TASKHUB_NAME: taskHubName
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
  tags: union(tags, { 'azd-service-name': azdServiceName })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    virtualNetworkSubnetId: empty(subnetId) ? null : subnetId
    siteConfig: {
      minTlsVersion: '1.2'
      scmMinTlsVersion: '1.2'
      ftpsState: 'Disabled'
      alwaysOn: false
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storageBlobEndpoint}${deploymentContainerName}'
          authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: identityId }
        }
      }
      scaleAndConcurrency: {
        instanceMemoryMB: instanceMemoryMB
        maximumInstanceCount: maximumInstanceCount
        alwaysReady: map(items(alwaysReady), group => { name: group.key, instanceCount: group.value })
      }
      runtime: { name: 'node', version: '22' }
    }
  }
}

// No basic authentication for publishing, FTP or SCM: deployments use Microsoft Entra ID (azd's ARM token).
resource ftpCredentials 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2025-03-01' = {
  parent: site
  name: 'ftp'
  properties: { allow: false }
}

resource scmCredentials 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2025-03-01' = {
  parent: site
  name: 'scm'
  properties: { allow: false }
}

// diagnosticSettings has no GA version after 2016-09-01, a legacy shape (its one name is 'service', metrics go by time
// grain, no category groups) that the linter calls the newest non-preview; 2021-05-01-preview, which the Verified
// Modules use, is the newest usable one.
#disable-next-line use-recent-api-versions
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  scope: site
  name: 'to-log-analytics'
  properties: {
    workspaceId: workspaceId
    logs: [{ category: 'FunctionAppLogs', enabled: true }]
    metrics: [{ category: 'AllMetrics', enabled: true }]
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
