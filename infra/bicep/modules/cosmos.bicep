// The Cosmos DB account, database and EVERY container of the app's definition (src/shared/containers.json, passed in
// as `definition`): partition keys, TTLs and indexing as the file says. Local (key) auth is disabled: the app
// connects as its identity, which has data-plane rights only — it cannot create containers, so they are made here.
// A container the file marks devHostOnly (the dev host's durable task hub) is left out unless devHostContainers is
// true: in Azure, Durable keeps its state in its own provider, and the container would hold throughput for nothing.
// With privateNetwork the account takes no traffic from the internet (its private endpoint is main.bicep's).
import { appDefinition, resourceTags } from '../types.bicep'

param name string
param location string
param tags resourceTags
@description('The parsed containers.json (types.bicep says its shape).')
param definition appDefinition
@allowed(['serverless', 'manual', 'autoscale'])
param throughputMode string
param sharedThroughput bool
param autoscaleMaxThroughput int
param continuousBackup bool
@description('Provision the containers the file marks devHostOnly too (for a dev host run against this account).')
param devHostContainers bool
param privateNetwork bool
@description('The Log Analytics workspace the account\'s diagnostic logs go to.')
param workspaceId string

var serverless = throughputMode == 'serverless'
var provisioned = filter(definition.containers, c => devHostContainers || !(c.?devHostOnly ?? false))
var databaseOptions = serverless || !sharedThroughput
  ? {}
  : throughputMode == 'autoscale' ? { autoscaleSettings: { maxThroughput: autoscaleMaxThroughput } } : { throughput: 400 }

resource account 'Microsoft.DocumentDB/databaseAccounts@2026-03-15' = {
  name: name
  location: location
  tags: tags
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    disableLocalAuth: true
    minimalTlsVersion: 'Tls12'
    publicNetworkAccess: privateNetwork ? 'Disabled' : 'Enabled'
    consistencyPolicy: { defaultConsistencyLevel: 'Session' }
    locations: [{ locationName: location, failoverPriority: 0, isZoneRedundant: false }]
    capabilities: serverless ? [{ name: 'EnableServerless' }] : []
    backupPolicy: continuousBackup
      ? { type: 'Continuous', continuousModeProperties: { tier: 'Continuous7Days' } }
      : { type: 'Periodic', periodicModeProperties: { backupIntervalInMinutes: 240, backupRetentionIntervalInHours: 8 } }
  }
}

resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2026-03-15' = {
  parent: account
  name: definition.database.name
  properties: {
    resource: { id: definition.database.name }
    options: databaseOptions
  }
}

// One container per entry of the definition: leases (/id, TTL -1), locks (/id, short TTL), the app's data —
// whatever the file lists for Azure.
resource containers 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2026-03-15' = [
  for c in provisioned: {
    parent: database
    name: c.name
    properties: {
      resource: union(
        {
          id: c.name
          partitionKey: { paths: [c.partitionKey], kind: 'Hash', version: 2 }
        },
        // Absent in the file, absent here: a TTL left out is TTL off, an indexing policy left out the default one.
        c.?defaultTtl == null ? {} : { defaultTtl: c.?defaultTtl },
        c.?indexingPolicy == null ? {} : { indexingPolicy: c.?indexingPolicy }
      )
      options: serverless || sharedThroughput
        ? {}
        : throughputMode == 'autoscale'
            ? { autoscaleSettings: { maxThroughput: autoscaleMaxThroughput } }
            : { throughput: c.?throughput ?? 400 }
    }
  }
]

// Every log category (data-plane requests, queries, partition statistics, control-plane changes) into resource-specific
// tables.
// diagnosticSettings has no GA version after 2016-09-01, a legacy shape (its one name is 'service', metrics go by time
// grain, no category groups) that the linter calls the newest non-preview; 2021-05-01-preview, which the Verified
// Modules use, is the newest usable one.
#disable-next-line use-recent-api-versions
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  scope: account
  name: 'to-log-analytics'
  properties: {
    workspaceId: workspaceId
    logAnalyticsDestinationType: 'Dedicated'
    logs: map(
      ['DataPlaneRequests', 'QueryRuntimeStatistics', 'PartitionKeyStatistics', 'PartitionKeyRUConsumption', 'ControlPlaneRequests'],
      category => { category: category, enabled: true }
    )
    metrics: [{ category: 'Requests', enabled: true }]
  }
}

output id string = account.id
output name string = account.name
output endpoint string = account.properties.documentEndpoint
