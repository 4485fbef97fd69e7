// Application Insights (local auth off: the app sends telemetry as its identity) on a Log Analytics workspace that
// accepts no shared key either (features.disableLocalAuth, as the Verified Module's default): queries and ingestion
// need Microsoft Entra ID. The other modules send their diagnostic logs to this workspace.
import { resourceTags } from '../types.bicep'

param name string
param workspaceName string
param location string
param tags resourceTags

resource workspace 'Microsoft.OperationalInsights/workspaces@2026-03-01' = {
  name: workspaceName
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
    features: { disableLocalAuth: true }
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: name
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    DisableLocalAuth: true
  }
}

output name string = appInsights.name
output workspaceId string = workspace.id
// The connection string carries no secret (an instrumentation key is an id); with local auth off, only AAD tokens are accepted.
output connectionString string = appInsights.properties.ConnectionString
