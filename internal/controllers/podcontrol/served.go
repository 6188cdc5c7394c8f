package podcontrol

import (
	"context"
	"fmt"
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
