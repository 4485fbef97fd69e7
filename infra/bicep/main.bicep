// cosmos-feed-app: everything the app needs, provisioned from the app's own definitions.
// - Containers come from src/shared/containers.json (the file the app and the dev host read): the app's identity
//   has data-plane rights only and cannot create containers, so a container missing here is a trigger that never starts.
// - Every knob of src/shared/settings.ts is an app setting (parameters below, defaults as in the settings module).
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('azd environment name; names and tags derive from it.')
param environmentName string

@minLength(1)
@description('Azure region of every resource.')
param location string

@description('Object id of the deploying user: given the Cosmos DB data role too, for local runs against the deployed account, and the only identity allowed to call the API unless authAllowedPrincipals says otherwise. Empty: none.')
param principalId string = ''

@description('Cosmos DB throughput: serverless account, provisioned manual RU/s, or autoscale.')
@allowed(['serverless', 'manual', 'autoscale'])
param cosmosThroughputMode string = 'serverless'

@description('With manual or autoscale: throughput shared at the database instead of per container.')
param cosmosSharedThroughput bool = false

@description('Autoscale maximum RU/s (1000–1000000, steps of 1000), per container or for the shared database.')
param cosmosAutoscaleMaxThroughput int = 1000

@description('Continuous backup (needed by the all-versions-and-deletes change feed mode).')
param cosmosContinuousBackup bool = false

@description('Durable Functions storage provider: Azure Storage (queues/tables of the host storage account) or the Durable Task Scheduler.')
@allowed(['AzureStorage', 'DurableTaskScheduler'])
param durableStorageProvider string = 'AzureStorage'

@description('Durable task hub name: host.json extensions.durableTask.hubName (the scheduler\'s task hub takes it).')
param taskHubName string = 'cosmosfeed'

// ---- who may call the API (App Service Authentication with Microsoft Entra ID; docs/deploy.md) ----------------
// Lists are comma-separated strings, so that each is one azd environment variable.
@minLength(1)
@description('Application (client) ID of the Entra app registration that represents the API (AUTH_CLIENT_ID). No default: azd asks.')
param authClientId string

@description('Accepted token audiences, comma-separated (AUTH_AUDIENCES). Empty: api://<authClientId> and <authClientId>.')
param authAudiences string = ''

@description('Client IDs of the applications allowed to call, comma-separated (AUTH_ALLOWED_CLIENT_APPLICATIONS): e.g. each calling managed identity\'s client ID. Empty: the Azure CLI only.')
param authAllowedClientApplications string = ''

@description('Object IDs of the users and identities allowed to call, comma-separated (AUTH_ALLOWED_PRINCIPALS). Empty: the deploying user (principalId) only, or, without one, any identity that an allowed application brings.')
param authAllowedPrincipals string = ''

@description('Tenant ID whose tokens are accepted (AUTH_TENANT_ID). Empty: the tenant of this deployment.')
param authTenantId string = ''

// ---- the app's knobs (src/shared/settings.ts: setting, unit, default) -------------------------------------
@description('FEED_POLL_DELAY_MS (ms): wait after an empty change feed read.')
param feedPollDelayMs int = 1000
@description('LEASE_ACQUIRE_INTERVAL_MS (ms): lease balancing period.')
param leaseAcquireIntervalMs int = 13000
@description('LEASE_EXPIRATION_INTERVAL_MS (ms): a lease not renewed this long is taken over (failover time).')
param leaseExpirationIntervalMs int = 60000
@description('LEASE_RENEW_INTERVAL_MS (ms): lease renewal period; below the expiration interval.')
param leaseRenewIntervalMs int = 17000
@description('MAX_ITEMS_PER_INVOCATION (items).')
param maxItemsPerInvocation int = 100
@description('TRIGGER_MAX_RETRY_COUNT (count; -1 = forever).')
param triggerMaxRetryCount int = 10
@description('TRIGGER_RETRY_MIN_INTERVAL_MS (ms).')
param triggerRetryMinIntervalMs int = 1000
@description('TRIGGER_RETRY_MAX_INTERVAL_MS (ms).')
param triggerRetryMaxIntervalMs int = 30000
@description('LOCK_TTL_SECONDS (s).')
param lockTtlSeconds int = 10
@description('LOCK_WAIT_MS (ms).')
param lockWaitMs int = 0
@description('LOCK_CONTENTION_STATUS (409 or 503).')
@allowed([409, 503])
param lockContentionStatus int = 409
@description('LIST_PAGE_SIZE (items).')
param listPageSize int = 50
@description('MAX_REQUEST_BODY_BYTES (bytes).')
param maxRequestBodyBytes int = 65536
@description('OPERATION_TTL_SECONDS (s).')
param operationTtlSeconds int = 604800
@description('OPERATION_STALL_SECONDS (s).')
param operationStallSeconds int = 300
@description('OPERATION_RECONCILE_SCHEDULE (six-field NCRONTAB).')
param operationReconcileSchedule string = '0 * * * * *'
@description('ACTIVITY_MAX_ATTEMPTS (count).')
param activityMaxAttempts int = 3
@description('ACTIVITY_FIRST_RETRY_INTERVAL_MS (ms).')
param activityFirstRetryIntervalMs int = 1000
@description('LAG_REPORT_SCHEDULE (six-field NCRONTAB).')
param lagReportSchedule string = '0 */5 * * * *'

var containerDefinition = loadJsonContent('../../src/shared/containers.json')
// The Azure CLI's well-known client ID: `az account get-access-token --resource <audience>` gets tokens as it.
var azureCliClientId = '04b07795-8ddb-461a-bbee-02f9e1bf7b46'
// A comma-separated azd variable as a list: items trimmed, empty ones dropped.
func csv(text string) string[] => filter(map(split(text, ','), item => trim(item)), item => !empty(item))
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = { 'azd-env-name': environmentName }

resource rg 'Microsoft.Resources/resourceGroups@2025-04-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: { name: 'id-${resourceToken}', location: location, tags: tags }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: { name: 'appi-${resourceToken}', workspaceName: 'log-${resourceToken}', location: location, tags: tags }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: { name: 'st${resourceToken}', location: location, tags: tags, deploymentContainerName: 'app-package-${resourceToken}' }
}

module cosmos 'modules/cosmos.bicep' = {
  name: 'cosmos'
  scope: rg
  params: {
    name: 'cosmos-${resourceToken}'
    location: location
    tags: tags
    definition: containerDefinition
    throughputMode: cosmosThroughputMode
    sharedThroughput: cosmosSharedThroughput
    autoscaleMaxThroughput: cosmosAutoscaleMaxThroughput
    continuousBackup: cosmosContinuousBackup
  }
}

module scheduler 'modules/durable-task-scheduler.bicep' = if (durableStorageProvider == 'DurableTaskScheduler') {
  name: 'scheduler'
  scope: rg
  params: { name: 'dts-${resourceToken}', location: location, tags: tags, taskHubName: taskHubName }
}

module api 'modules/functionapp.bicep' = {
  name: 'api'
  scope: rg
  params: {
    name: 'func-${resourceToken}'
    planName: 'plan-${resourceToken}'
    location: location
    tags: union(tags, { 'azd-service-name': 'api' })
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    storageBlobEndpoint: storage.outputs.blobEndpoint
    storageQueueEndpoint: storage.outputs.queueEndpoint
    storageTableEndpoint: storage.outputs.tableEndpoint
    deploymentContainerName: storage.outputs.deploymentContainerName
    appInsightsConnectionString: monitoring.outputs.connectionString
    appSettings: {
      COSMOS_CONNECTION__accountEndpoint: cosmos.outputs.endpoint
      COSMOS_CONNECTION__credential: 'managedidentity'
      COSMOS_CONNECTION__clientId: identity.outputs.clientId
      COSMOS_CONNECTION_SETTING: 'COSMOS_CONNECTION'
      // In Azure the containers exist (above) and the identity could not create them anyway.
      COSMOS_ENSURE_CONTAINERS: 'false'
      FEED_POLL_DELAY_MS: string(feedPollDelayMs)
      LEASE_ACQUIRE_INTERVAL_MS: string(leaseAcquireIntervalMs)
      LEASE_EXPIRATION_INTERVAL_MS: string(leaseExpirationIntervalMs)
      LEASE_RENEW_INTERVAL_MS: string(leaseRenewIntervalMs)
      MAX_ITEMS_PER_INVOCATION: string(maxItemsPerInvocation)
      TRIGGER_MAX_RETRY_COUNT: string(triggerMaxRetryCount)
      TRIGGER_RETRY_MIN_INTERVAL_MS: string(triggerRetryMinIntervalMs)
      TRIGGER_RETRY_MAX_INTERVAL_MS: string(triggerRetryMaxIntervalMs)
      LOCK_TTL_SECONDS: string(lockTtlSeconds)
      LOCK_WAIT_MS: string(lockWaitMs)
      LOCK_CONTENTION_STATUS: string(lockContentionStatus)
      LIST_PAGE_SIZE: string(listPageSize)
      MAX_REQUEST_BODY_BYTES: string(maxRequestBodyBytes)
      OPERATION_TTL_SECONDS: string(operationTtlSeconds)
      OPERATION_STALL_SECONDS: string(operationStallSeconds)
      OPERATION_RECONCILE_SCHEDULE: operationReconcileSchedule
      ACTIVITY_MAX_ATTEMPTS: string(activityMaxAttempts)
      ACTIVITY_FIRST_RETRY_INTERVAL_MS: string(activityFirstRetryIntervalMs)
      LAG_REPORT_SCHEDULE: lagReportSchedule
    }
    durableTaskScheduler: durableStorageProvider == 'DurableTaskScheduler'
    // The scheduler module exists only with that provider; without it, no endpoint (and no scheduler settings).
    durableTaskSchedulerEndpoint: scheduler.?outputs.endpoint ?? ''
    authClientId: authClientId
    authAudiences: empty(csv(authAudiences)) ? ['api://${authClientId}', authClientId] : csv(authAudiences)
    authAllowedClientApplications: empty(csv(authAllowedClientApplications))
      ? [azureCliClientId]
      : csv(authAllowedClientApplications)
    authAllowedPrincipals: empty(csv(authAllowedPrincipals))
      ? (empty(principalId) ? [] : [principalId])
      : csv(authAllowedPrincipals)
    authTenantId: empty(authTenantId) ? tenant().tenantId : authTenantId
  }
}

module rbac 'modules/rbac.bicep' = {
  name: 'rbac'
  scope: rg
  params: {
    principalIds: empty(principalId) ? [identity.outputs.principalId] : [identity.outputs.principalId, principalId]
    appPrincipalId: identity.outputs.principalId
    cosmosAccountName: cosmos.outputs.name
    cosmosDatabaseName: containerDefinition.database.name
    storageAccountName: storage.outputs.name
    durableAzureStorage: durableStorageProvider == 'AzureStorage'
    appInsightsName: monitoring.outputs.name
    schedulerName: scheduler.?outputs.name ?? ''
    taskHubName: taskHubName
  }
}

// What azd and the postprovision hook need; names and endpoints only, never a key.
output AZURE_LOCATION string = location
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_APP_NAME string = api.outputs.name
output API_URL string = api.outputs.url
output COSMOS_ENDPOINT string = cosmos.outputs.endpoint
output COSMOS_DATABASE_NAME string = containerDefinition.database.name
output AZURE_CLIENT_ID string = identity.outputs.clientId
output TASKHUB_NAME string = taskHubName
