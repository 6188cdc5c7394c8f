package aggregator_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/aggregator"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// startInProcess runs an API server (no HTTP) and an aggregator over it.
// The store lives in dir; stop ends both and closes it.
func startInProcess(t *testing.T, dir string, local []schema.GroupVersion) (api *apiserver.Server, agg *aggregator.Aggregator, stop func()) {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := embedded.Open(ctx, embedded.Options{Dir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	api, err = apiserver.New(apiserver.Config{Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	agg, err = aggregator.New(aggregator.Config{ListerWatcher: api.ListerWatcher, Objects: api.Objects(), LocalGroupVersions: local,
		Logger: log, CheckInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := agg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			agg.Stop()
			api.Stop()
			_ = st.Close()
		})
	}
	t.Cleanup(stop)
	return api, agg, stop
}

func getAPIService(api *apiserver.Server, name string) (*apiregistrationv1.APIService, error) {
	obj, err := api.Objects().Get(context.Background(), apiregistrationv1.SchemeGroupVersion.WithResource("apiservices"), "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*apiregistrationv1.APIService), nil
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10 s", what)
}

// The built-in registration at start deletes the "onstart" APIServices
// of group versions no longer served, and RegisterLocal/RemoveLocal are
// what the CRD side calls for custom resource group versions.
func TestLocalRegistration(t *testing.T) {
	ctx := context.Background()
	apps := schema.GroupVersion{Group: "apps", Version: "v1"}
	dir := t.TempDir()
	batch := schema.GroupVersion{Group: "batch", Version: "v1"}
	api, agg, stop := startInProcess(t, dir, []schema.GroupVersion{{Version: "v1"}, apps, batch})
	s, err := getAPIService(api, "v1.apps")
	if err != nil {
		t.Fatal(err)
	}
	if s.Labels[aggregator.AutoManagedLabel] != "onstart" || s.Spec.GroupPriorityMinimum != 17800 || s.Spec.VersionPriority != 15 {
		t.Errorf("v1.apps: %+v", s)
	}

	crd := schema.GroupVersion{Group: "stable.example.com", Version: "v1"}
	if err := agg.RegisterLocal(ctx, crd, aggregator.CRDPriority); err != nil {
		t.Fatal(err)
	}
	s, err = getAPIService(api, "v1.stable.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Service != nil || s.Spec.GroupPriorityMinimum != 1000 || s.Spec.VersionPriority != 100 || s.Labels[aggregator.AutoManagedLabel] != "true" ||
		len(s.Status.Conditions) != 1 || s.Status.Conditions[0].Reason != "Local" {
		t.Errorf("registered CRD group version: %+v", s)
	}
	// Deleted by someone, it comes back.
	if err := api.Objects().Delete(ctx, apiregistrationv1.SchemeGroupVersion.WithResource("apiservices"), "", s.Name, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted CRD APIService restored", func() bool { _, err := getAPIService(api, s.Name); return err == nil })
	if err := agg.RemoveLocal(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if _, err := getAPIService(api, s.Name); !apierrors.IsNotFound(err) {
		t.Errorf("after RemoveLocal: %v", err)
	}

	// Restarted serving batch/v1 no more, its APIService goes.
	stop()
	api, _, _ = startInProcess(t, dir, []schema.GroupVersion{{Version: "v1"}, apps})
	if _, err := getAPIService(api, "v1.batch"); !apierrors.IsNotFound(err) {
		t.Errorf("v1.batch after a restart without batch/v1: %v", err)
	}
	if _, err := getAPIService(api, "v1.apps"); err != nil {
		t.Errorf("v1.apps after the restart: %v", err)
	}
}
