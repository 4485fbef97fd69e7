// Types of what main.bicep hands its modules. The compiler checks every value against them — src/shared/containers.json
// included, which main.bicep loads with loadJsonContent: a container without a name or partition key, a TTL that is
// not a number, a property the service does not know, is a build error here, not a failed deployment.

@export()
@description('Resource tags: names to strings.')
type resourceTags = { *: string }

@export()
@description('App settings: names to strings.')
type settingsMap = { *: string }

@export()
@description('A path of an indexing policy.')
type indexedPath = { path: string }

@export()
@description('A container\'s indexing policy, as containers.json writes it (the service\'s shape).')
type indexingPolicy = {
  indexingMode: 'consistent' | 'none'
  automatic: bool
  includedPaths: indexedPath[]
  excludedPaths: indexedPath[]
}

@export()
@description('One container of containers.json. defaultTtl: absent = TTL off, -1 = on without a default, n = seconds; throughput: manual RU/s; devHostOnly: used by the dev host alone, not provisioned in Azure.')
type containerDefinition = {
  role: string
  @minLength(1)
  name: string
  @minLength(2)
  partitionKey: string
  defaultTtl: int?
  @minValue(400)
  throughput: int?
  devHostOnly: bool?
  indexingPolicy: indexingPolicy?
}

@export()
@description('src/shared/containers.json: the app\'s database and every container it uses.')
type appDefinition = {
  '$comment': string?
  database: { name: string }
  @minLength(1)
  containers: containerDefinition[]
}

@export()
@description('A private endpoint\'s target: the resource, its Private Link sub-resource and the private DNS zone its name resolves in.')
type privateLinkTarget = {
  @minLength(1)
  name: string
  targetId: string
  groupId: 'Sql' | 'blob' | 'queue' | 'table' | 'scheduler'
  @minLength(1)
  dnsZone: string
}
