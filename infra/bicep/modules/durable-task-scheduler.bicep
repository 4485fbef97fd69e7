// The Durable Task Scheduler and its task hub, when chosen as Durable's storage provider. The task hub takes the
// name the app addresses (host.json's hubName is %TASKHUB_NAME%, an app setting of the same value: functionapp.bicep).
// With privateNetwork it takes no traffic from the internet (its private endpoint is main.bicep's); otherwise any
// address may reach it, and every call still needs an identity with a role on the task hub (rbac.bicep).
import { resourceTags } from '../types.bicep'

param name string
param location string
param tags resourceTags
param taskHubName string
param privateNetwork bool

resource scheduler 'Microsoft.DurableTask/schedulers@2026-02-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    ipAllowlist: privateNetwork ? [] : ['0.0.0.0/0']
    publicNetworkAccess: privateNetwork ? 'Disabled' : 'Enabled'
    sku: { name: 'Consumption' }
  }
}

resource taskHub 'Microsoft.DurableTask/schedulers/taskHubs@2026-02-01' = {
  parent: scheduler
  name: taskHubName
}

output id string = scheduler.id
output name string = scheduler.name
output endpoint string = scheduler.properties.endpoint
output taskHubName string = taskHub.name
