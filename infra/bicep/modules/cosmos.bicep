// The Cosmos DB account, database and EVERY container of the app's definition (src/shared/containers.json, passed in
// as `definition`): partition keys, TTLs and indexing as the file says. Local (key) auth is disabled: the app
// connects as its identity, which has data-plane rights only — it cannot create containers, so they are made here.
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

var serverless = throughputMode == 'serverless'
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

// One container per entry of the definition: leases (/id, TTL -1), locks (/id, short TTL), the durable task hub,
// the app's data — whatever the file lists.
resource containers 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2026-03-15' = [
  for c in definition.containers: {
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

output name string = account.name
output endpoint string = account.properties.documentEndpoint
