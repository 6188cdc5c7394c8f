package apiserver

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestKubernetesEndpointsAcrossServers: the kubernetes Service points at
// every running API server (upstream's lease reconciler), not at the last
// one started; a server that stops leaves at once, one that died (its
// lease expired) at the next renewal of another.
func TestKubernetesEndpointsAcrossServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := openTestStore(t)
	start := func(addr string) *Server {
		api, err := New(Config{Store: st, Logger: quietLogger(), PublicAddress: netip.MustParseAddr(addr), PublicPort: 6443})
		if err != nil {
			t.Fatal(err)
		}
		if err := api.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(api.Stop)
		waitFor(t, 30*time.Second, "caches ready", api.Ready)
		return api
	}
	a := start("192.0.2.1")
	b := start("192.0.2.2")
	// ips are the Endpoints' addresses, read consistently from the
	// store through server a.
	ips := func() []string {
		t.Helper()
		obj, err := a.GetObject(ctx, schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, "default", "kubernetes", "")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ss := range obj.(*corev1.Endpoints).Subsets {
			for _, ad := range ss.Addresses {
				out = append(out, ad.IP)
			}
		}
		slices.Sort(out)
		return out
	}
	want := func(what string, expected ...string) {
		t.Helper()
		var got []string
		waitFor(t, 10*time.Second, what, func() bool { got = ips(); return slices.Equal(got, expected) })
	}
	want("both servers", "192.0.2.1", "192.0.2.2")

	// A server that died: its lease is there, expired.
	past := strconv.FormatInt(time.Now().Add(-time.Second).UnixNano(), 10)
	if _, err := st.Create(ctx, endpointLeasePrefix+"192.0.2.3", []byte(past)); err != nil {
		t.Fatal(err)
	}
	if err := a.endpointLease.renew(ctx); err != nil {
		t.Fatal(err)
	}
	want("the dead server left out", "192.0.2.1", "192.0.2.2")

	b.Stop()
	want("the stopped server gone", "192.0.2.1")
}
