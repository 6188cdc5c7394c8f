package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
)

// WaitServed blocks until the API serves resource in groupVersion, polling
// discovery every interval, and reports whether it does (false only when
// ctx ended first). Controllers for groups an API server may not serve
// (batch/v1 on an older Myriad) start their informers only after this, so
// a missing group costs one discovery call per interval instead of a
// reflector failing to list forever.
func WaitServed(ctx context.Context, d discovery.DiscoveryInterface, groupVersion, resource string, interval time.Duration) bool {
	err := wait.PollUntilContextCancel(ctx, interval, true, func(context.Context) (bool, error) {
		ok, err := Served(d, groupVersion, resource)
		return ok && err == nil, nil
	})
	return err == nil
}

// Served reports whether the API serves resource in groupVersion.
func Served(d discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}

// Deferred starts a controller's watches only once the API serves its
// resource: Warm waits for it in the background (polling discovery every
// 30 s), then calls Register once and starts the informer factory for the
// life of its ctx. Controllers for groups an API server may not serve
// (batch/v1 on an older Myriad) warm this way, as a standby warms the rest.
type Deferred struct {
	// Discovery, GroupVersion and Resource name what must be served.
	Discovery              discovery.DiscoveryInterface
	GroupVersion, Resource string
	// Register adds the controller's handlers (called once, see
	// RegisterOnce); Start starts the informers they asked for.
	Register func() error
	Start    func(stop <-chan struct{})
	Logger   *slog.Logger

	once  sync.Once
	ready chan struct{} // closed once registered and started

	registerOnce sync.Once
	registerErr  error
}

// RegisterOnce calls Register the first time and returns its error every
// time: Warm uses it, and so can tests that drive a controller without
// discovery.
func (d *Deferred) RegisterOnce() error {
	d.registerOnce.Do(func() { d.registerErr = d.Register() })
	return d.registerErr
}

// Warm starts the background wait, once; later calls do nothing. It does
// not block.
func (d *Deferred) Warm(ctx context.Context) {
	d.once.Do(func() {
		d.ready = make(chan struct{})
		go func() {
			if !WaitServed(ctx, d.Discovery, d.GroupVersion, d.Resource, 30*time.Second) {
				return
			}
			if err := d.RegisterOnce(); err != nil {
				d.Logger.Error("registering handlers", "resource", d.Resource, "err", err)
				return
			}
			d.Start(ctx.Done())
			close(d.ready)
		}()
	})
}

// Wait warms with ctx if nobody did and reports whether the watches are
// registered and started; false once ctx is done first.
func (d *Deferred) Wait(ctx context.Context) bool {
	d.Warm(ctx)
	select {
	case <-d.ready:
		return true
	case <-ctx.Done():
		return false
	}
}
