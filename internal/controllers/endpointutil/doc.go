// Package endpointutil holds what the EndpointSlice and Endpoints
// controllers share: which pods back a Service, how a Service port maps to
// a pod's port, a pod's readiness, and the event handlers that turn pod
// changes into Service keys.
package endpointutil
