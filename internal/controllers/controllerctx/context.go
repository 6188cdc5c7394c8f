package controllerctx

import (
	"context"

	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Context is shared by all controllers of one process.
//
// The convention every controller package follows: New(*Context) registers
// its informer event handlers (and nothing else that needs the API); the
// manager then starts the factories, and only once it holds the leader
// Lease calls the controller's Run(ctx, workers), which waits for its
// caches and works until ctx is done. Handlers registered by a standby
// fill its work queues, which the workers drain the moment it leads.
type Context struct {
	Client   kubernetes.Interface
	Metadata metadata.Interface
	// RESTConfig is what Client and Metadata were built from, for a
	// controller that needs clients of its own (the HPA's scale and
	// metrics clients): the same identity.
	RESTConfig *rest.Config
	// AccountClient, when set, returns a client acting as the named
	// kube-system ServiceAccount (the manager runs controllers under their
	// own accounts). Use ClientForAccount.
	AccountClient func(serviceAccount string) (kubernetes.Interface, error)
	// InformerClient lists and watches for informers a controller builds
	// beside the shared factories (the root CA publisher's filtered
	// ConfigMap informer): the manager's identity, as the shared
	// informers', since a controller's own role need not allow reads.
	// Nil: Client.
	InformerClient kubernetes.Interface

	Informers         informers.SharedInformerFactory
	MetadataInformers metadatainformer.SharedInformerFactory

	// Events makes per-controller recorders:
	// Events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "replicaset-controller"}).
	Events record.EventBroadcaster

	// Clock is real in production and fake in tests that control time.
	Clock clock.WithTicker

	Logger  *slog.Logger
	Metrics prometheus.Registerer
}

// Controller is what the manager runs once it leads: Run waits for its
// informers' caches, starts workers goroutines and returns when ctx is done.
type Controller interface {
	Run(ctx context.Context, workers int)
}

// Descriptor names a controller and how to build it.
type Descriptor struct {
	// Name is the kube-controller-manager name where one exists
	// ("replicaset", "deployment", "nodelifecycle", ...), used by
	// --controllers and in logs.
	Name string
	// Workers is the default number of worker goroutines.
	Workers int
	// New registers event handlers on the shared informers and returns
	// the controller; it must not call the API.
	New func(c *Context) (Controller, error)
}

// Describe is the Descriptor of the controller name, with workers default
// workers, built by build.
func Describe[C Controller](name string, workers int, build func(c *Context) (C, error)) Descriptor {
	return Descriptor{Name: name, Workers: workers, New: func(c *Context) (Controller, error) {
		ctrl, err := build(c)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return ctrl, nil
	}}
}

// ClientForAccount is a client acting as kube-system's serviceAccount when
// the manager runs controllers under their own accounts, else Client: for
// a controller doing the work of two upstream controllers under both
// identities (the Job controller deletes finished Jobs as upstream's
// ttl-after-finished controller).
func (c *Context) ClientForAccount(serviceAccount string) (kubernetes.Interface, error) {
	if c.AccountClient == nil {
		return c.Client, nil
	}
	return c.AccountClient(serviceAccount)
}

// ReadClient is InformerClient, or Client when it is unset.
func (c *Context) ReadClient() kubernetes.Interface {
	if c.InformerClient == nil {
		return c.Client
	}
	return c.InformerClient
}
