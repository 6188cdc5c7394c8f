package job

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "job"

// TTLServiceAccount is the account finished Jobs are deleted as, upstream's
// ttl-after-finished controller's.
const TTLServiceAccount = "ttl-after-finished-controller"

// Labels put on a Job's pods, as upstream.
const (
	JobNameLabel             = batchv1.JobNameLabel       // batch.kubernetes.io/job-name
	ControllerUIDLabel       = batchv1.ControllerUidLabel // batch.kubernetes.io/controller-uid
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// Backoff of pod re-creation after failures, as upstream.
const (
	DefaultBackoff = 10 * time.Second
	MaxBackoff     = 6 * time.Minute
)

var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// Controller is the Job controller.
type Controller struct {
	reconcile.Base
	// ttlClient deletes finished Jobs: upstream's ttl-after-finished
	// controller's work, done here under its identity.
	ttlClient kubernetes.Interface
	factory   informers.SharedInformerFactory
	jobLister batchlisters.JobLister
	pods      corelisters.PodLister
	podInf    cache.SharedIndexInformer
	exp       *podcontrol.Expectations
	recorder  record.EventRecorder

	// served registers the handlers and starts the informers once the
	// API serves batch/v1 jobs.
	served reconcile.Deferred
}

// Descriptor is the job entry of the manager's list (5 workers, as
// upstream's --concurrent-job-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}

// New builds the controller. Unlike the apps controllers it registers its
// handlers in Warm, once the API is known to serve batch/v1 jobs.
func New(c *controllerctx.Context) (*Controller, error) {
	ttl, err := c.ClientForAccount(TTLServiceAccount)
	if err != nil {
		return nil, err
	}
	jc := &Controller{
		ttlClient: ttl,
		factory:   c.Informers,
		exp:       podcontrol.NewExpectations(c.Clock),
		recorder:  podcontrol.Recorder(c, "job-controller"),
	}
	jc.Base = reconcile.NewBase(c, Name, jc.sync, reconcile.Options[string]{})
	jc.served = reconcile.Deferred{Discovery: c.Client.Discovery(), GroupVersion: "batch/v1", Resource: "jobs",
		Register: jc.register, Start: c.Informers.Start, Logger: c.Logger}
	return jc, nil
}

// register adds the handlers on the Job and Pod informers (once: see
// reconcile.Deferred.RegisterOnce).
func (jc *Controller) register() error {
	jobInf := jc.factory.Batch().V1().Jobs()
	podInf := jc.factory.Core().V1().Pods()
	jc.jobLister, jc.pods = jobInf.Lister(), podInf.Lister()
	jc.podInf = podInf.Informer()
	if err := podcontrol.AddControllerUIDIndexer(jc.podInf); err != nil {
		return err
	}
	jc.Synced = []cache.InformerSynced{jobInf.Informer().HasSynced, podInf.Informer().HasSynced}
	return reconcile.AddHandlers(
		reconcile.Handler{Informer: jobInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    jc.Enqueue,
			UpdateFunc: func(_, cur any) { jc.Enqueue(cur) },
			DeleteFunc: func(obj any) {
				if key, ok := reconcile.Key(obj); ok {
					jc.exp.Delete(key)
				}
			},
		}},
		reconcile.Handler{Informer: podInf.Informer(), Handler: podcontrol.OwnedEvents[*corev1.Pod]{Resolve: jc.resolveKey, Queue: jc.Queue, Exp: jc.exp}.Handler()})
}

// Warm (the manager's Warmer) waits in the background for batch/v1 jobs
// to be served, then registers the handlers and starts the informers for
// the life of ctx, so a standby's Job cache is warm like the others.
func (jc *Controller) Warm(ctx context.Context) { jc.served.Warm(ctx) }

// Run waits until Warm has started the informers (warming with ctx itself
// when nobody did) and works until ctx is done.
func (jc *Controller) Run(ctx context.Context, workers int) {
	if !jc.served.Wait(ctx) {
		return
	}
	jc.Queue.Run(ctx, workers, jc.Synced...)
}

// resolveKey returns the key of the Job ref names, if it is one we know
// with the same UID.
func (jc *Controller) resolveKey(namespace string, ref *metav1.OwnerReference) string {
	return podcontrol.ResolveKey(ref, controllerKind.Kind, jc.jobLister.Jobs(namespace).Get)
}
