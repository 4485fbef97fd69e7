// Private networking (main.bicep's vnetEnabled): one virtual network with a subnet the Flex Consumption app is
// integrated into (delegated to Microsoft.App/environments, as Flex Consumption requires) and one for the private
// endpoints of Cosmos DB, the storage services and the Durable Task Scheduler (private-endpoint.bicep).
import { resourceTags } from '../types.bicep'

param name string
param location string
param tags resourceTags

var appSubnetName = 'app'
var endpointSubnetName = 'private-endpoints'

resource vnet 'Microsoft.Network/virtualNetworks@2026-03-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    addressSpace: { addressPrefixes: ['10.0.0.0/16'] }
    subnets: [
      {
        name: appSubnetName
        properties: {
          addressPrefix: '10.0.1.0/24'
          delegations: [{ name: 'flex-consumption', properties: { serviceName: 'Microsoft.App/environments' } }]
        }
      }
      {
        name: endpointSubnetName
        properties: {
          addressPrefix: '10.0.2.0/24'
          privateEndpointNetworkPolicies: 'Disabled'
        }
      }
    ]
  }
}

resource appSubnet 'Microsoft.Network/virtualNetworks/subnets@2026-03-01' existing = {
  parent: vnet
  name: appSubnetName
}

resource endpointSubnet 'Microsoft.Network/virtualNetworks/subnets@2026-03-01' existing = {
  parent: vnet
  name: endpointSubnetName
}

output id string = vnet.id
output appSubnetId string = appSubnet.id
output endpointSubnetId string = endpointSubnet.id
