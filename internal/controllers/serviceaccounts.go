package controllers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/controllers/bootstrapsigner"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/approver"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/cleaner"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/servingapprover"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/signer"
	"github.com/myriad-k8s/myriad/internal/controllers/clusterroleaggregation"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/cronjob"
	"github.com/myriad-k8s/myriad/internal/controllers/daemonset"
	"github.com/myriad-k8s/myriad/internal/controllers/deployment"
	"github.com/myriad-k8s/myriad/internal/controllers/endpoints"
	"github.com/myriad-k8s/myriad/internal/controllers/endpointslice"
	"github.com/myriad-k8s/myriad/internal/controllers/garbagecollector"
	"github.com/myriad-k8s/myriad/internal/controllers/job"
	"github.com/myriad-k8s/myriad/internal/controllers/namespace"
	"github.com/myriad-k8s/myriad/internal/controllers/nodelifecycle"
	"github.com/myriad-k8s/myriad/internal/controllers/podautoscaler"
	"github.com/myriad-k8s/myriad/internal/controllers/podgc"
	"github.com/myriad-k8s/myriad/internal/controllers/pvbinder"
	"github.com/myriad-k8s/myriad/internal/controllers/replicaset"
	"github.com/myriad-k8s/myriad/internal/controllers/resourcequota"
	"github.com/myriad-k8s/myriad/internal/controllers/rootcacert"
	"github.com/myriad-k8s/myriad/internal/controllers/saclient"
	"github.com/myriad-k8s/myriad/internal/controllers/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/controllers/statefulset"
	"github.com/myriad-k8s/myriad/internal/controllers/tokencleaner"
	"github.com/myriad-k8s/myriad/internal/controllers/vapstatus"
	"github.com/myriad-k8s/myriad/internal/controllers/volumeprotection"
)

// serviceAccountNames maps a controller to the kube-system ServiceAccount
// it acts as with service account credentials: upstream's names, which
// the default RBAC policy binds to system:controller:<name>.
func serviceAccountNames() map[string]string {
	return map[string]string{
		serviceaccount.Name:         "service-account-controller",
		rootcacert.Name:             "root-ca-cert-publisher",
		namespace.Name:              "namespace-controller",
		garbagecollector.Name:       "generic-garbage-collector",
		nodelifecycle.Name:          "node-controller",
		podgc.Name:                  "pod-garbage-collector",
		endpointslice.Name:          "endpointslice-controller",
		endpoints.Name:              "endpoint-controller",
		replicaset.Name:             "replicaset-controller",
		replicaset.RCName:           "replication-controller",
		deployment.Name:             "deployment-controller",
		daemonset.Name:              "daemon-set-controller",
		job.Name:                    "job-controller",
		cronjob.Name:                "cronjob-controller",
		statefulset.Name:            "statefulset-controller",
		pvbinder.Name:               "persistent-volume-binder",
		volumeprotection.PVCName:    "pvc-protection-controller",
		volumeprotection.PVName:     "pv-protection-controller",
		resourcequota.Name:          "resourcequota-controller",
		approver.Name:               "certificate-controller",
		signer.Name:                 "certificate-controller",
		cleaner.Name:                "certificate-controller",
		servingapprover.Name:        servingapprover.ServiceAccount,
		tokencleaner.Name:           "token-cleaner",
		bootstrapsigner.Name:        "bootstrap-signer",
		podautoscaler.Name:          "horizontal-pod-autoscaler",
		clusterroleaggregation.Name: "clusterrole-aggregation-controller",
		vapstatus.Name:              "validatingadmissionpolicy-status-controller",
	}
}

// serviceAccountContexts gives each controller a copy of cc whose clients
// act as the controller's ServiceAccount, sharing cc's informers and event
// broadcaster (reads and events stay on the manager's identity, as
// upstream).
type serviceAccountContexts struct {
	cc      *controllerctx.Context
	builder *saclient.Builder
}

func newServiceAccountContexts(cc *controllerctx.Context, base *rest.Config) (*serviceAccountContexts, error) {
	b, err := saclient.NewBuilder(cc.Client, base, cc.Clock)
	if err != nil {
		return nil, err
	}
	return &serviceAccountContexts{cc: cc, builder: b}, nil
}

// forController returns the context controller name runs with. A
// controller without a ServiceAccount here runs as the manager: the
// legacy token controller, as upstream's, since it makes the tokens
// accounts use.
func (s *serviceAccountContexts) forController(name string) (*controllerctx.Context, error) {
	sa, ok := serviceAccountNames()[name]
	if !ok {
		return s.cc, nil
	}
	c := *s.cc
	c.InformerClient = s.cc.Client
	var err error
	if c.Client, c.Metadata, c.RESTConfig, err = s.clients(sa); err != nil {
		return nil, fmt.Errorf("controllers: %s: %w", name, err)
	}
	c.AccountClient = func(sa string) (kubernetes.Interface, error) {
		client, _, _, err := s.clients(sa)
		return client, err
	}
	return &c, nil
}

// clients builds the clients of kube-system's ServiceAccount sa.
func (s *serviceAccountContexts) clients(sa string) (kubernetes.Interface, metadata.Interface, *rest.Config, error) {
	rc := s.builder.Config(sa)
	proto := rest.CopyConfig(rc)
	proto.ContentType = runtime.ContentTypeProtobuf
	proto.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(proto)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("client: %w", err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("metadata client: %w", err)
	}
	return client, md, rc, nil
}
