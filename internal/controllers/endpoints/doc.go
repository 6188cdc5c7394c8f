// Package endpoints is the legacy Endpoints controller: for every Service
// with a selector it keeps the core/v1 Endpoints of the same name, with
// ready pods in addresses and unready ones in notReadyAddresses, grouped
// by resolved ports, capped at 1000 addresses with the over-capacity
// annotation as upstream does. Clients still reading Endpoints (older
// proxies, tools) keep working; EndpointSlices are the scalable API.
package endpoints
