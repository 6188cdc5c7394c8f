// Package reconcile is the one runtime every controller runs on: a
// rate-limited work queue built from the controller context (its clock and
// its metrics registry), the workers that drain it into a Sync function
// with one retry policy, the informer handlers that fill it, and the
// warm-up helpers for resources an API server may not serve yet.
//
// A controller is then its Sync and its watches:
//
//	c.queue = reconcile.NewLoop(cc, Name, c.sync, reconcile.Options[string]{})
//	err := reconcile.Watch(inf, reconcile.All, reconcile.EnqueueKey(c.queue))
//	...
//	func (c *Controller) Run(ctx context.Context, workers int) { c.queue.Run(ctx, workers, c.synced...) }
//
// Every Loop exports upstream's workqueue_* metrics under its name and
// myriad_controller_syncs_total / myriad_controller_sync_duration_seconds
// under label controller=<name>, on the context's registry.
package reconcile
