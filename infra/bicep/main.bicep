// cosmos-feed-app: everything the app needs, provisioned from the app's own definitions.
// - Containers come from src/shared/containers.json (the file the app and the dev host read): the app's identity
//   has data-plane rights only and cannot create containers, so a container missing here is a trigger that never starts.
// - Every knob of src/shared/settings.ts is an app setting (parameters below, defaults as in the settings module).
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('azd environment name; names and tags derive from it.')
param environmentName string

// Regions that offer Flex Consumption (the Flex Consumption quickstart templates' list; `az functionapp
// list-flexconsumption-locations`). azd offers only these, and refuses any other before anything is created.
@minLength(1)
@description('Azure region of every resource: one that offers Flex Consumption (and the Durable Task Scheduler, when chosen).')
@allowed([
  'australiaeast'
  'australiasoutheast'
  'brazilsouth'
  'canadacentral'
  'centralindia'
  'centralus'
  'eastasia'
  'eastus'
  'eastus2'
  'francecentral'
  'germanywestcentral'
  'italynorth'
  'japaneast'
  'koreacentral'
  'northcentralus'
  'northeurope'
  'norwayeast'
  'southafricanorth'
  'southcentralus'
  'southeastasia'
  'southindia'
  'spaincentral'
  'swedencentral'
  'uaenorth'
  'uksouth'
  'ukwest'
  'westcentralus'
  'westeurope'
  'westus'
  'westus2'
  'westus3'
])
@metadata({ azd: { type: 'location' } })
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

@description('Durable task hub name (TASKHUB_NAME): an app setting of that name, which host.json\'s hubName (%TASKHUB_NAME%) resolves; the scheduler\'s task hub takes it too. Azure Storage\'s rules: 3–45 letters and digits, starting with a letter.')
@minLength(3)
@maxLength(45)
param taskHubName string = 'cosmosfeed'

@description('Provision the containers containers.json marks devHostOnly (the dev host\'s durable task hub) too: only for a dev host run against the deployed account (docs/deploy.md).')
param cosmosDevHostContainers bool = false

// ---- scale (Flex Consumption: functionAppConfig.scaleAndConcurrency) --------------------------------------
@description('Memory of each instance (MB).')
@allowed([512, 2048, 4096])
param instanceMemoryMB int = 2048

@description('Most instances the app scales out to.')
@minValue(1)
@maxValue(1000)
param maximumInstanceCount int = 100

@description('Always-ready instances, comma-separated group=count pairs (ALWAYS_READY), e.g. "http=1,durable=1" or "function:reactToResources=1". Empty: none (the app scales from zero).')
param alwaysReady string = ''

// ---- private networking ---------------------------------------------------------------------------------
@description('Private networking: a virtual network the app is integrated into, private endpoints and DNS zones for Cosmos DB, the storage services and the Durable Task Scheduler, and no public network access to them.')
param vnetEnabled bool = false

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
@description('SUMMARY_POLL_DELAY_MS (ms): the summaries trigger\'s wait after an empty read (how late a summary may be).')
param summaryPollDelayMs int = 5000
@description('SUMMARY_RECOUNT_WINDOW_MS (ms): the summaries trigger handles at most one page per lease in this time unless it was full (how late a summary may be while changes keep coming).')
param summaryRecountWindowMs int = 10000
@description('SUMMARY_MAX_ITEMS_PER_INVOCATION (items): most changes one summaries trigger invocation receives.')
param summaryMaxItemsPerInvocation int = 1000
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
// Regions of the Durable Task Scheduler (the Durable Functions quickstart template's list), among those above.
var schedulerRegions = ['australiaeast', 'centralus', 'eastasia', 'eastus2', 'northcentralus', 'northeurope', 'southeastasia', 'swedencentral', 'uksouth', 'westus2']
var useScheduler = durableStorageProvider == 'DurableTaskScheduler'
// Refused before anything is created: the resource group's location is this value, evaluated first.
var checkedLocation = useScheduler && !contains(schedulerRegions, location)
  ? fail('The Durable Task Scheduler is not offered in ${location}: choose one of ${join(schedulerRegions, ', ')}, or DURABLE_STORAGE_PROVIDER=AzureStorage')
  : location
// The Azure CLI's well-known client ID: `az account get-access-token --resource <audience>` gets tokens as it.
var azureCliClientId = '04b07795-8ddb-461a-bbee-02f9e1bf7b46'
// A comma-separated azd variable as a list: items trimmed, empty ones dropped.
func csv(text string) string[] => filter(map(split(text, ','), item => trim(item)), item => !empty(item))
// ALWAYS_READY as Flex Consumption's scale groups: each item `group=count`; anything else is refused by name.
var alwaysReadyGroups = toObject(
  csv(alwaysReady),
  pair => length(split(pair, '=')) == 2 ? trim(split(pair, '=')[0]) : fail('ALWAYS_READY: \'${pair}\' is not group=count (e.g. http=1)'),
  pair => int(trim(split(pair, '=')[1]))
)
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = { 'azd-env-name': environmentName }

resource rg 'Microsoft.Resources/resourceGroups@2025-04-01' = {
  name: 'rg-${environmentName}'
  location: checkedLocation
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
  params: {
    name: 'st${resourceToken}'
    location: location
    tags: tags
    deploymentContainerName: 'app-package-${resourceToken}'
    privateNetwork: vnetEnabled
    workspaceId: monitoring.outputs.workspaceId
  }
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
    devHostContainers: cosmosDevHostContainers
    privateNetwork: vnetEnabled
    workspaceId: monitoring.outputs.workspaceId
  }
}

module scheduler 'modules/durable-task-scheduler.bicep' = if (useScheduler) {
  name: 'scheduler'
  scope: rg
  params: {
    name: 'dts-${resourceToken}'
    location: location
    tags: tags
    taskHubName: taskHubName
    privateNetwork: vnetEnabled
  }
}

module network 'modules/network.bicep' = if (vnetEnabled) {
  name: 'network'
  scope: rg
  params: { name: 'vnet-${resourceToken}', location: location, tags: tags }
}

// The private endpoints: Cosmos DB, each storage service the host uses, the scheduler when chosen.
var storageServices = ['blob', 'queue', 'table']

module cosmosEndpoint 'modules/private-endpoint.bicep' = if (vnetEnabled) {
  name: 'endpoint-cosmos'
  scope: rg
  params: {
    location: location
    tags: tags
    vnetId: network.?outputs.id ?? ''
    subnetId: network.?outputs.endpointSubnetId ?? ''
    target: {
      name: 'pe-cosmos-${resourceToken}'
      targetId: cosmos.outputs.id
      groupId: 'Sql'
      dnsZone: 'privatelink.documents.azure.com'
    }
  }
}

module storageEndpoints 'modules/private-endpoint.bicep' = [
  for service in storageServices: if (vnetEnabled) {
    name: 'endpoint-${service}'
    scope: rg
    params: {
      location: location
      tags: tags
      vnetId: network.?outputs.id ?? ''
      subnetId: network.?outputs.endpointSubnetId ?? ''
      target: {
        name: 'pe-${service}-${resourceToken}'
        targetId: storage.outputs.id
        groupId: service
        dnsZone: 'privatelink.${service}.${environment().suffixes.storage}'
      }
    }
  }
]

module schedulerEndpoint 'modules/private-endpoint.bicep' = if (vnetEnabled && useScheduler) {
  name: 'endpoint-scheduler'
  scope: rg
  params: {
    location: location
    tags: tags
    vnetId: network.?outputs.id ?? ''
    subnetId: network.?outputs.endpointSubnetId ?? ''
    target: {
      name: 'pe-scheduler-${resourceToken}'
      targetId: scheduler.?outputs.id ?? ''
      groupId: 'scheduler'
      dnsZone: 'privatelink.durabletask.io'
    }
  }
}

module api 'modules/functionapp.bicep' = {
  name: 'api'
  scope: rg
  params: {
    name: 'func-${resourceToken}'
    planName: 'plan-${resourceToken}'
    location: location
    tags: tags
    azdServiceName: 'api'
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
      SUMMARY_POLL_DELAY_MS: string(summaryPollDelayMs)
      SUMMARY_RECOUNT_WINDOW_MS: string(summaryRecountWindowMs)
      SUMMARY_MAX_ITEMS_PER_INVOCATION: string(summaryMaxItemsPerInvocation)
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
    durableTaskScheduler: useScheduler
    // The scheduler module exists only with that provider; without it, no endpoint (and no scheduler settings).
    durableTaskSchedulerEndpoint: scheduler.?outputs.endpoint ?? ''
    taskHubName: taskHubName
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    alwaysReady: alwaysReadyGroups
    subnetId: network.?outputs.appSubnetId ?? ''
    workspaceId: monitoring.outputs.workspaceId
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
    taskHubName: scheduler.?outputs.taskHubName ?? taskHubName
    dashboardPrincipalId: principalId
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
// The app setting of functionapp.bicep, which the app addresses (with either provider), and the scheduler's hub.
output TASKHUB_NAME string = taskHubName
output VNET_ENABLED bool = vnetEnabled
