package apiserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestServiceAllocationAcrossServers: two API servers over one store
// create NodePort Services at the same time from small ranges. Every
// Service gets its own ClusterIP and node port, and a Service deleted
// through one server frees its address for the other.
func TestServiceAllocationAcrossServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := openTestStore(t)
	var clients []kubernetes.Interface
	for range 2 {
		api, err := New(Config{Store: st, Logger: quietLogger(), ServiceClusterIPRange: "10.0.0.0/26", ServiceNodePortRange: "30000-30069"})
		if err != nil {
			t.Fatal(err)
		}
		if err := api.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(api.Stop)
		waitFor(t, 30*time.Second, "caches ready", api.Ready)
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		clients = append(clients, kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, QPS: -1}))
	}
	const perServer = 30 // 60 of 62 addresses, 60 of 70 ports
	var wg sync.WaitGroup
	errs := make(chan error, 2*perServer)
	for i, cs := range clients {
		for j := range perServer {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d-%d", i, j)},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	list, err := clients[1].CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ips, ports := map[string]string{}, map[int32]string{}
	for _, svc := range list.Items {
		if prev, dup := ips[svc.Spec.ClusterIP]; dup {
			t.Errorf("ClusterIP %s given to both %s and %s", svc.Spec.ClusterIP, prev, svc.Name)
		}
		ips[svc.Spec.ClusterIP] = svc.Name
		for _, p := range svc.Spec.Ports {
			if prev, dup := ports[p.NodePort]; dup {
				t.Errorf("node port %d given to both %s and %s", p.NodePort, prev, svc.Name)
			}
			ports[p.NodePort] = svc.Name
		}
	}
	if len(list.Items) < 2*perServer {
		t.Fatalf("%d services, want at least %d", len(list.Items), 2*perServer)
	}

	// Free one address through server 0; server 1 hands it out again
	// (its in-memory view learns of the release from the claims).
	freed, err := clients[0].CoreV1().Services("default").Get(ctx, "s0-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := clients[0].CoreV1().Services("default").Delete(ctx, "s0-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := clients[1].CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "again"},
		Spec: corev1.ServiceSpec{ClusterIP: freed.Spec.ClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err == nil && again.Spec.ClusterIP != freed.Spec.ClusterIP {
		t.Fatalf("got %s, asked for %s", again.Spec.ClusterIP, freed.Spec.ClusterIP)
	}
	if err != nil {
		t.Fatalf("asking server 1 for the address server 0 freed: %v", err)
	}
}

// TestServiceClaimsBackfilled: Services stored without claims (a store
// from before claims, or a server that died between write and claim) are
// claimed when a server starts, so another server cannot hand out their
// addresses; a claim no Service holds is removed once past its grace.
func TestServiceClaimsBackfilled(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	svc, err := e.cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims := func() map[string]string {
		kvs, _, err := e.store.List(ctx, serviceClaimsPrefix)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, kv := range kvs {
			out[kv.Key[len(serviceClaimsPrefix):]], _ = parseClaim(kv.Value)
		}
		return out
	}
	ipItem, portItem := "ip/"+svc.Spec.ClusterIP, fmt.Sprintf("nodeport/%d", svc.Spec.Ports[0].NodePort)
	if c := claims(); c[ipItem] != "default/old" || c[portItem] != "default/old" {
		t.Fatalf("claims after create: %v", c)
	}
	e.stopServer()
	// Lose the Service's claims; leave an orphan from long ago.
	for _, item := range []string{ipItem, portItem} {
		if _, _, err := e.store.Delete(ctx, serviceClaimsPrefix+item, 0); err != nil {
			t.Fatal(err)
		}
	}
	stale := []byte(fmt.Sprintf("default/gone %d", time.Now().Add(-time.Hour).UnixNano()))
	if _, err := e.store.Create(ctx, serviceClaimsPrefix+"ip/10.96.0.99", stale); err != nil {
		t.Fatal(err)
	}
	e.startServer()
	c := claims()
	if c[ipItem] != "default/old" || c[portItem] != "default/old" {
		t.Fatalf("claims after restart: %v, want the Service's back", c)
	}
	if _, ok := c["ip/10.96.0.99"]; ok {
		t.Fatalf("the orphan claim survived the restart: %v", c)
	}
}
