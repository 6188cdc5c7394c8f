package controllerctx

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
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
