// One private endpoint of main.bicep's private networking: the endpoint in the endpoints subnet, the private DNS
// zone the target's name resolves in (linked to the virtual network, so that the app's ordinary endpoint URLs reach
// the private address) and the zone group that keeps the zone's record up to date.
import { privateLinkTarget, resourceTags } from '../types.bicep'

param location string
param tags resourceTags
param vnetId string
param subnetId string
param target privateLinkTarget

resource zone 'Microsoft.Network/privateDnsZones@2024-06-01' = {
  name: target.dnsZone
  location: 'global'
  tags: tags
}

resource link 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2024-06-01' = {
  parent: zone
  name: 'vnet'
  location: 'global'
  tags: tags
  properties: {
    registrationEnabled: false
    virtualNetwork: { id: vnetId }
  }
}

resource endpoint 'Microsoft.Network/privateEndpoints@2026-03-01' = {
  name: target.name
  location: location
  tags: tags
  properties: {
    subnet: { id: subnetId }
    privateLinkServiceConnections: [
      {
        name: target.name
        properties: { privateLinkServiceId: target.targetId, groupIds: [target.groupId] }
      }
    ]
  }
}

resource records 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2026-03-01' = {
  parent: endpoint
  name: 'default'
  properties: {
    privateDnsZoneConfigs: [{ name: replace(target.dnsZone, '.', '-'), properties: { privateDnsZoneId: zone.id } }]
  }
}
