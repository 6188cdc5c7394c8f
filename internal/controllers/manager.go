package controllers

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/myriad-k8s/myriad/internal/controllers/certificates/signer"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/nodelifecycle"
	"github.com/myriad-k8s/myriad/internal/controllers/podautoscaler"
	"github.com/myriad-k8s/myriad/internal/controllers/rootcacert"
	"github.com/myriad-k8s/myriad/internal/controllers/serviceaccounttoken"
	"github.com/myriad-k8s/myriad/internal/leaderelect"
)

// Warmer is implemented by controllers that keep caches outside the shared
// factories (the garbage collector's graph over discovered resources, the
// root CA publisher's filtered ConfigMap informer). The manager calls Warm
// right after starting the factories, before it leads, so a standby's
// caches are as warm as its factories'. Warm starts goroutines that stop
// when ctx is done and must not block.
type Warmer interface {
	Warm(ctx context.Context)
}

type built struct {
	name    string
	workers int
	c       controllerctx.Controller
}

// Run builds the shared context and every enabled controller, starts the
// informers at once (hot standby), and runs the controllers — immediately
// without leader election, else while holding the leader Lease. It returns
// nil when ctx is done (after releasing the Lease), or an error if the
// Lease is lost, so the process restarts clean as kube-controller-manager
// does.
func Run(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	log := cfg.Logger.With("component", "controller-manager")
	cc, err := newContext(cfg)
	if err != nil {
		return err
	}
	ctrls, err := build(cc, cfg)
	if err != nil {
		return err
	}

	// Informers run for the whole life of the process, leader or not.
	infCtx, stopInformers := context.WithCancel(context.Background())
	defer func() {
		stopInformers()
		if cfg.Informers == nil {
			cc.Informers.Shutdown()
		}
		cc.MetadataInformers.Shutdown()
	}()
	cc.Informers.Start(infCtx.Done())
	cc.MetadataInformers.Start(infCtx.Done())
	for _, b := range ctrls {
		if w, ok := b.c.(Warmer); ok {
			w.Warm(infCtx)
		}
	}
	cc.Events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cc.Client.CoreV1().Events("")})
	defer cc.Events.Shutdown()

	names := make([]string, len(ctrls))
	for i, b := range ctrls {
		names[i] = b.name
	}
	log.Info("controllers built, informers started", "controllers", names, "leaderElect", cfg.LeaderElect, "identity", cfg.Identity)

	runAll := func(ctx context.Context) {
		// Informers a controller asked for after the first Start.
		cc.Informers.Start(infCtx.Done())
		cc.MetadataInformers.Start(infCtx.Done())
		var wg sync.WaitGroup
		for _, b := range ctrls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.c.Run(ctx, b.workers)
			}()
		}
		wg.Wait()
	}
	if !cfg.LeaderElect {
		runAll(ctx)
		return nil
	}
	electClient, err := kubernetes.NewForConfig(leaderelect.RESTConfig(cfg.RESTConfig, cfg.RenewDeadline, "myriad-controller-manager/leader-election"))
	if err != nil {
		return fmt.Errorf("controllers: election client: %w", err)
	}
	return leaderelect.Run(ctx, leaderelect.Config{
		Client:        electClient,
		Namespace:     cfg.LeaseNamespace,
		Name:          cfg.LeaseName,
		Identity:      cfg.Identity,
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		Logger:        log,
		Metrics:       cfg.Metrics,
	}, runAll)
}

// ErrLeaseLost is returned by Run when the leader fails to renew its Lease.
var ErrLeaseLost = leaderelect.ErrLeaseLost

// newContext builds the clients and factories every controller shares.
func newContext(cfg Config) (*controllerctx.Context, error) {
	rc := rest.CopyConfig(cfg.RESTConfig)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 500, 1000
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "myriad-controller-manager"
	}
	proto := rest.CopyConfig(rc)
	proto.ContentType = runtime.ContentTypeProtobuf
	proto.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(proto)
	if err != nil {
		return nil, fmt.Errorf("controllers: client: %w", err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("controllers: metadata client: %w", err)
	}
	typed := cfg.Informers
	if typed == nil {
		typed = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trimForCache))
	}
	return &controllerctx.Context{
		Client:            client,
		Metadata:          md,
		RESTConfig:        rc,
		Informers:         typed,
		MetadataInformers: metadatainformer.NewSharedInformerFactoryWithOptions(md, 0, metadatainformer.WithTransform(trimForCache)),
		Events:            record.NewBroadcaster(),
		Clock:             cfg.Clock,
		Logger:            cfg.Logger,
		Metrics:           cfg.Metrics,
	}, nil
}

// build calls New for every enabled controller, in All's order.
func build(cc *controllerctx.Context, cfg Config) ([]built, error) {
	var out []built
	var accounts *serviceAccountContexts
	if cfg.UseServiceAccountCredentials {
		var err error
		if accounts, err = newServiceAccountContexts(cc, cc.RESTConfig); err != nil {
			return nil, err
		}
	}
	for _, d := range descriptors(cfg) {
		if !Enabled(cfg.Controllers, d.Name) {
			continue
		}
		if d.Name == rootcacert.Name && len(cfg.RootCA) == 0 {
			cfg.Logger.Warn("no CA in the client configuration; not publishing kube-root-ca.crt")
			continue
		}
		if d.Name == serviceaccounttoken.Name && cfg.ServiceAccountKeyFile == "" {
			cfg.Logger.Warn("no service account private key configured; not filling service account token secrets")
			continue
		}
		if d.Name == signer.Name && (cfg.ClusterSigning.CertFile == "" || cfg.ClusterSigning.KeyFile == "") {
			cfg.Logger.Warn("no cluster signing CA configured; not signing certificate signing requests")
			continue
		}
		dc := cc
		if accounts != nil {
			var err error
			if dc, err = accounts.forController(d.Name); err != nil {
				return nil, err
			}
		}
		c, err := d.New(dc)
		if err != nil {
			return nil, fmt.Errorf("controllers: building %s: %w", d.Name, err)
		}
		w := d.Workers
		if w < 1 {
			w = 1
		}
		out = append(out, built{name: d.Name, workers: w, c: c})
	}
	return out, nil
}

// descriptors is All with the controllers that take process configuration
// rebuilt from cfg (controllerctx.Context carries no per-controller knobs).
func descriptors(cfg Config) []controllerctx.Descriptor {
	ds := All()
	for i := range ds {
		switch ds[i].Name {
		case nodelifecycle.Name:
			opts := cfg.NodeLifecycle
			ds[i].New = func(c *controllerctx.Context) (controllerctx.Controller, error) { return nodelifecycle.New(c, opts) }
		case rootcacert.Name:
			ca := cfg.RootCA
			ds[i].New = func(c *controllerctx.Context) (controllerctx.Controller, error) { return rootcacert.New(c, ca) }
		case serviceaccounttoken.Name:
			opts := serviceaccounttoken.Options{KeyFile: cfg.ServiceAccountKeyFile, RootCA: cfg.RootCA}
			ds[i].New = func(c *controllerctx.Context) (controllerctx.Controller, error) {
				return serviceaccounttoken.New(c, opts)
			}
		case signer.Name:
			opts := cfg.ClusterSigning
			ds[i].New = func(c *controllerctx.Context) (controllerctx.Controller, error) { return signer.New(c, opts) }
		case podautoscaler.Name:
			// The scale and metrics clients speak JSON to any group; they
			// get their own copy of the controller's REST configuration.
			ds[i].New = func(c *controllerctx.Context) (controllerctx.Controller, error) {
				rc := rest.CopyConfig(c.RESTConfig)
				rc.UserAgent = "myriad-controller-manager/horizontal-pod-autoscaler"
				return podautoscaler.New(c, podautoscaler.Options{RESTConfig: rc})
			}
		}
	}
	return ds
}

// lastApplied is kubectl's copy of the applied manifest, often the largest
// thing in an object's metadata.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// trimForCache drops what no controller reads from the shared caches, as
// kube-controller-manager does: managedFields from every object, and from
// metadata-only objects (used for ownership) kubectl's last-applied
// annotation. With 200,000 pods cached twice (typed and metadata) this is
// a large part of the heap.
func trimForCache(obj any) (any, error) {
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return obj, nil // holds an object already trimmed in the store
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	m.SetManagedFields(nil)
	if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
		delete(p.Annotations, lastApplied)
	}
	return obj, nil
}
