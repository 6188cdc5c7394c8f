package cronjob

import (
	"context"
	"log/slog"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "cronjob"

var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller is the CronJob controller.
type Controller struct {
	client   kubernetes.Interface
	factory  informers.SharedInformerFactory
	cjLister batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	synced   []cache.InformerSynced
	queue    podcontrol.Queue
	loop     *podcontrol.Loop
	recorder record.EventRecorder
	clock    clock.PassiveClock
	log      *slog.Logger

	registerOnce sync.Once
	registerErr  error
	warmOnce     sync.Once
	ready        chan struct{}
}

// Descriptor is the cronjob entry of the manager's list (5 workers, as
// upstream's --concurrent-cron-job-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Descriptor{Name: Name, Workers: 5, New: New}
}

// New builds the controller; handlers are registered by Warm.
func New(c *controllerctx.Context) (controllerctx.Controller, error) {
	return newController(c), nil
}

func newController(c *controllerctx.Context) *Controller {
	cc := &Controller{
		client:   c.Client,
		factory:  c.Informers,
		queue:    podcontrol.NewQueue(Name),
		recorder: podcontrol.Recorder(c, "cronjob-controller"),
		clock:    c.Clock,
		log:      c.Logger,
		ready:    make(chan struct{}),
	}
	cc.loop = podcontrol.NewLoop(Name, cc.queue, cc.sync, c.Logger, c.Metrics)
	return cc
}

func (cc *Controller) register() error {
	cc.registerOnce.Do(func() {
		cjInf := cc.factory.Batch().V1().CronJobs()
		jobInf := cc.factory.Batch().V1().Jobs()
		cc.cjLister, cc.jobs = cjInf.Lister(), jobInf.Lister()
		cc.synced = []cache.InformerSynced{cjInf.Informer().HasSynced, jobInf.Informer().HasSynced}
		if _, err := cjInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    cc.enqueue,
			UpdateFunc: func(_, cur any) { cc.enqueue(cur) },
		}); err != nil {
			cc.registerErr = err
			return
		}
		jobChanged := func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			j, ok := obj.(*batchv1.Job)
			if !ok {
				return
			}
			if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.Kind == controllerKind.Kind {
				cc.queue.Add(j.Namespace + "/" + ref.Name)
			}
		}
		_, cc.registerErr = jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    jobChanged,
			UpdateFunc: func(_, cur any) { jobChanged(cur) },
			DeleteFunc: jobChanged,
		})
	})
	return cc.registerErr
}

// Warm (the manager's Warmer) waits in the background for batch/v1
// cronjobs to be served, then registers handlers and starts the informers
// for the life of ctx.
func (cc *Controller) Warm(ctx context.Context) {
	cc.warmOnce.Do(func() {
		go func() {
			if !podcontrol.WaitServed(ctx, cc.client.Discovery(), "batch/v1", "cronjobs", 30*time.Second) {
				return
			}
			if err := cc.register(); err != nil {
				cc.log.Error("registering cronjob handlers", "err", err)
				return
			}
			cc.factory.Start(ctx.Done())
			close(cc.ready)
		}()
	})
}

// Run waits for Warm (warming with ctx itself when nobody did) and works
// until ctx is done.
func (cc *Controller) Run(ctx context.Context, workers int) {
	cc.Warm(ctx)
	select {
	case <-cc.ready:
	case <-ctx.Done():
		return
	}
	cc.loop.Run(ctx, workers, cc.synced...)
}

func (cc *Controller) enqueue(obj any) {
	if key, ok := podcontrol.Key(obj); ok {
		cc.queue.Add(key)
	}
}
