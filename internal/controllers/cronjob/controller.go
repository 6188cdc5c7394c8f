package cronjob

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "cronjob"

var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller is the CronJob controller.
type Controller struct {
	reconcile.Base
	factory  informers.SharedInformerFactory
	cjLister batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	recorder record.EventRecorder

	// served registers the handlers and starts the informers once the
	// API serves batch/v1 cronjobs.
	served reconcile.Deferred
}

// Descriptor is the cronjob entry of the manager's list (5 workers, as
// upstream's --concurrent-cron-job-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}

// New builds the controller; handlers are registered by Warm.
func New(c *controllerctx.Context) (*Controller, error) {
	cc := &Controller{
		factory:  c.Informers,
		recorder: podcontrol.Recorder(c, "cronjob-controller"),
	}
	cc.Base = reconcile.NewBase(c, Name, cc.sync, reconcile.Options[string]{})
	cc.served = reconcile.Deferred{Discovery: c.Client.Discovery(), GroupVersion: "batch/v1", Resource: "cronjobs",
		Register: cc.register, Start: c.Informers.Start, Logger: c.Logger}
	return cc, nil
}

func (cc *Controller) register() error {
	cjInf := cc.factory.Batch().V1().CronJobs()
	jobInf := cc.factory.Batch().V1().Jobs()
	cc.cjLister, cc.jobs = cjInf.Lister(), jobInf.Lister()
	cc.Synced = []cache.InformerSynced{cjInf.Informer().HasSynced, jobInf.Informer().HasSynced}
	if err := reconcile.Watch(cjInf.Informer(), reconcile.Adds|reconcile.Updates, cc.Enqueue); err != nil {
		return err
	}
	return reconcile.Watch(jobInf.Informer(), reconcile.All, func(obj any) {
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return
		}
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.Kind == controllerKind.Kind {
			cc.Queue.Add(j.Namespace + "/" + ref.Name)
		}
	})
}

// Warm (the manager's Warmer) waits in the background for batch/v1
// cronjobs to be served, then registers handlers and starts the informers
// for the life of ctx.
func (cc *Controller) Warm(ctx context.Context) { cc.served.Warm(ctx) }

// Run waits for Warm (warming with ctx itself when nobody did) and works
// until ctx is done.
func (cc *Controller) Run(ctx context.Context, workers int) {
	if !cc.served.Wait(ctx) {
		return
	}
	cc.Queue.Run(ctx, workers, cc.Synced...)
}
