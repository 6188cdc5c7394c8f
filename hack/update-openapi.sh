#!/usr/bin/env bash
# Regenerates internal/openapi/zz_generated.openapi.go with upstream's
# openapi-gen, at the k8s.io/kube-openapi version pinned in go.mod, over the
# k8s.io/api and apimachinery packages Myriad serves. Run from anywhere in the
# repository; `go generate ./internal/openapi` calls this script.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

KO_VERSION="$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"
BIN_DIR="$(mktemp -d)"
trap 'rm -rf "${BIN_DIR}"' EXIT

# go install pkg@version builds with kube-openapi's own go.mod, so the tool's
# dependencies (gengo, x/tools) never enter Myriad's go.mod.
GOBIN="${BIN_DIR}" GOFLAGS= go install "k8s.io/kube-openapi/cmd/openapi-gen@${KO_VERSION}"

# The input packages are resolved through this module (go list from ROOT), so
# their versions are the ones in go.mod, read from the module cache.
PACKAGES=(
  k8s.io/api/core/v1
  k8s.io/api/admissionregistration/v1
  k8s.io/api/apps/v1
  k8s.io/api/authentication/v1
  k8s.io/api/authorization/v1
  k8s.io/api/autoscaling/v1
  k8s.io/api/autoscaling/v2
  k8s.io/api/batch/v1
  k8s.io/api/certificates/v1
  k8s.io/api/coordination/v1
  k8s.io/api/discovery/v1
  k8s.io/api/events/v1
  k8s.io/api/flowcontrol/v1
  k8s.io/api/networking/v1
  k8s.io/api/node/v1
  k8s.io/api/policy/v1
  k8s.io/api/rbac/v1
  k8s.io/api/scheduling/v1
  k8s.io/api/scheduling/v1alpha3
  k8s.io/api/storage/v1
  k8s.io/apimachinery/pkg/apis/meta/v1
  k8s.io/apimachinery/pkg/runtime
  k8s.io/apimachinery/pkg/util/intstr
  k8s.io/apimachinery/pkg/api/resource
  k8s.io/apimachinery/pkg/version
)

# Upstream types carry known API-rule violations (list types without
# +listType, and so on); they are upstream's to fix, so the report is
# written to a scratch file, which also keeps openapi-gen from failing on them.
"${BIN_DIR}/openapi-gen" \
  --go-header-file "${ROOT}/hack/boilerplate.go.txt" \
  --output-dir "${ROOT}/internal/openapi" \
  --output-pkg "github.com/myriad-k8s/myriad/internal/openapi" \
  --output-file zz_generated.openapi.go \
  --report-filename "${BIN_DIR}/violations.report" \
  "${PACKAGES[@]}"

gofmt -l -w "${ROOT}/internal/openapi/zz_generated.openapi.go" >/dev/null
echo "wrote internal/openapi/zz_generated.openapi.go"
