// Package kubeletclient is how the API server reaches a node's kubelet:
// which of the Node's addresses it dials (upstream's
// --kubelet-preferred-address-types), on which port (the Node's
// status.daemonEndpoints.kubeletEndpoint.port), and the HTTPS transports it
// dials with — the kubelet's serving certificate verified against
// --kubelet-certificate-authority, the API server's own client certificate
// presented — with --kubelet-timeout bounding the dial and the TLS
// handshake of every connection, and the wait for the kubelet's answer
// where one comes at once (an exec, attach or port-forward upgrade; a log
// that is not followed). A followed log, a nodes/proxy request and every
// stream once begun are not time-limited.
//
// It knows nothing of pods or of the API: package apiserver/kubeletproxy
// builds the kubelet URLs and proxies the streams.
package kubeletclient
