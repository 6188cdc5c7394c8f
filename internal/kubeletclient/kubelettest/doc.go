// Package kubelettest runs a kubelet API server for tests: HTTPS with a
// serving certificate from a given CA, client certificates required and
// verified as a kubelet with x509 authentication does, and upstream's
// paths served by upstream's published streaming server
// (k8s.io/cri-streaming): /containerLogs, /exec, /attach, /portForward,
// plus /healthz. Its "containers" are tiny and deterministic, so tests
// can check what came back: see Server for what each path does.
package kubelettest
