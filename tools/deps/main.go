package main
import (
 _ "k8s.io/api/core/v1"
 _ "k8s.io/apimachinery/pkg/runtime"
 _ "k8s.io/client-go/kubernetes"
 _ "github.com/cockroachdb/pebble/v2"
 _ "sigs.k8s.io/structured-merge-diff/v6/typed"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "go.etcd.io/etcd/server/v3/embed"
 _ "go.etcd.io/etcd/client/v3"
 _ "github.com/google/btree"
 _ "k8s.io/kube-openapi/pkg/builder"
 _ "gopkg.in/evanphx/json-patch.v4"
 _ "k8s.io/kube-openapi/pkg/common"
)
func main(){}
