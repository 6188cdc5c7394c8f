// Package reconcile is the one runtime every controller runs on: a
// rate-limited work queue built from the controller context (its clock and
// its metrics registry), the workers that drain it into a Sync function
// with one retry policy, the informer handlers that fill it, and the
// warm-up helpers for resources an API server may not serve yet.
//
// A controller is then its Sync and its watches:
//
//	type Controller struct {
//		reconcile.Base // Client, Queue, Synced, Clock, Log; Run, Enqueue
//		lister ...
//	}
//
//	func New(c *controllerctx.Context) (*Controller, error) {
//		ctrl := &Controller{lister: inf.Lister()}
//		ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
//		ctrl.Synced = []cache.InformerSynced{inf.Informer().HasSynced}
//		return ctrl, reconcile.Watch(inf.Informer(), reconcile.All, ctrl.Enqueue)
//	}
//
// Retries: a failing key is retried with the queue's backoff up to
// Options.MaxRetries (15) and then dropped until its next event; a Sync
// that is merely not finished returns ErrRequeue or RequeueAfter, retried
// without a cap or a log line. Keys other than strings (the garbage
// collector's) use NewLoop directly.
//
// Every Loop exports upstream's workqueue_* metrics under its name and
// myriad_controller_syncs_total{controller,result} /
// myriad_controller_sync_duration_seconds{controller} under its name, on
// the context's registry.
package reconcile
