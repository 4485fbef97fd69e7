// The Durable Task Scheduler and its task hub, when chosen as Durable's storage provider.
import { resourceTags } from '../types.bicep'

param name string
param location string
param tags resourceTags
param taskHubName string

resource scheduler 'Microsoft.DurableTask/schedulers@2026-02-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    ipAllowlist: ['0.0.0.0/0']
    sku: { name: 'Consumption' }
  }
}

resource taskHub 'Microsoft.DurableTask/schedulers/taskHubs@2026-02-01' = {
  parent: scheduler
  name: taskHubName
}

output name string = scheduler.name
output endpoint string = scheduler.properties.endpoint
