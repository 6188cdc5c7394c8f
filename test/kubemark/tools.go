//go:build tools

// Package kubemark pins k8s.io/kubernetes/cmd/kubemark, upstream's hollow
// node (the real kubelet code over a fake container runtime), so that
// `go mod tidy` records every module that `go build
// k8s.io/kubernetes/cmd/kubemark` needs.
package kubemark

import (
	_ "k8s.io/kubernetes/cmd/kubemark"
)
