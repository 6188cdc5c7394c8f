package apiserver

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/storage/etcd"
	"github.com/myriad-k8s/myriad/internal/storage/etcd/etcdtest"
)

// TestServersOverEtcd: two servers over one etcd, each with its own
// client and metrics registry shared with its store (as controlplane
// wires them). Events are written with an etcd lease (the store expires
// them; no expiry loop), and history is compacted by the coordinated
// loop while both servers run.
func TestServersOverEtcd(t *testing.T) {
	cluster := etcdtest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stores []*etcd.Store
	var clients []kubernetes.Interface
	for range 2 {
		reg := prometheus.NewRegistry()
		st, err := etcd.New(ctx, etcd.Config{Endpoints: cluster.Endpoints(), Metrics: reg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		stores = append(stores, st)
		api, err := New(Config{Store: st, StoreRecordsMetrics: true, Metrics: reg, Logger: quietLogger(), CompactionInterval: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := api.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(api.Stop)
		waitFor(t, 30*time.Second, "caches ready", api.Ready)
		if !api.eventsExpireInStore() {
			t.Fatal("the etcd store does not expire events itself")
		}
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		clients = append(clients, kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, QPS: -1}))
	}
	if _, err := clients[0].CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, Reason: "R", Message: "m"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := cluster.Client(t).Get(ctx, "/registry/core/events/default/e")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("event key in etcd: %v, %v", resp, err)
	}
	if resp.Kvs[0].Lease == 0 {
		t.Fatal("the event was written without a lease")
	}
	// The other server reads it (its cache is fed by its own watch).
	if _, err := clients[1].CoreV1().Events("default").Get(ctx, "e", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "a compaction", func() bool {
		rev, err := stores[1].CompactedRevision(ctx)
		return err == nil && rev > 0
	})
}
