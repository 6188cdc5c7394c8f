// Package kubeletproxy serves the API's connect subresources, the ones
// answered by a kubelet or a pod rather than by the store: pods/log,
// pods/exec, pods/attach, pods/portforward, pods/proxy, services/proxy and
// nodes/proxy. It resolves the kubelet URL as upstream's pod and node
// registries do (LogLocation, streamLocation, PortForwardLocation,
// ResourceLocation) and proxies with upstream's published streaming
// handlers: UpgradeAwareHandler for SPDY upgrades and plain proxying,
// StreamTranslatorHandler for WebSocket (v5.channel.k8s.io) exec and
// attach, TunnelingHandler for WebSocket port-forward, and
// LocationStreamer for logs. Nothing buffers a whole stream.
//
// Authorization happened before a request gets here (the connect verbs
// are get for GET and create for POST, as upstream's RequestInfo names
// them); this package only reads the objects it needs.
package kubeletproxy
