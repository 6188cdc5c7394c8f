#!/usr/bin/env bash
# Prints the -ldflags that stamp kubemark with the version of
# k8s.io/kubernetes in go.mod, as upstream's build does (hack/lib/version.sh):
# without them the kubelet reports v0.0.0-master in its Node's nodeInfo and
# its User-Agent.
set -euo pipefail
cd "$(dirname "$0")"
v=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
major=${v#v}; major=${major%%.*}
minor=${v#v*.}; minor=${minor%%.*}
p=k8s.io/component-base/version
echo "-X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
