package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/myriad-k8s/myriad/internal/storage/etcd/etcdtest"
)

// startEtcdAPIServers starts n `myriad apiserver --storage=etcd` over
// cluster at once, so their bootstraps (namespaces, RBAC, priority
// classes, the kubernetes Service) race on one empty etcd as they do
// when a cluster's servers start together. They share one set of
// credentials (CA, service-account key, front-proxy CA, admin token,
// serving certificate), made by a first server started and stopped on
// a prefix of its own and copied to each, as docs/etcd.md says to copy
// them between machines.
func startEtcdAPIServers(t *testing.T, cluster *etcdtest.Cluster, n int, extra ...string) []*server {
	t.Helper()
	args := append([]string{"--disable-admission-plugins=ServiceAccount", "--storage=etcd",
		"--etcd-servers=" + strings.Join(cluster.Endpoints(), ",")}, extra...)
	root := t.TempDir()
	pkiDir := filepath.Join(root, "pki")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	first, err := startCommand("apiserver", pkiDir, port, append(args, "--etcd-prefix=/pki-maker")...)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.stop(); err != nil {
		t.Fatalf("stopping the credentials maker: %v", err)
	}
	out := make([]*server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("apiserver-%d", i))
		copyPKI(t, pkiDir, dir)
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = startCommand("apiserver", dir, port, args...)
		}()
	}
	wg.Wait()
	for i, s := range out {
		if s == nil {
			continue
		}
		t.Cleanup(func() {
			if s.cmd.ProcessState == nil { // not killed by the test
				_ = s.stop()
			}
			if t.Failed() {
				t.Logf("apiserver %d log:\n%s", i, tail(s.log.String(), 4000))
			}
		})
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("apiserver %d: %v", i, err)
		}
	}
	return out
}

// copyPKI copies the credential files (not the kubeconfig) of one data
// dir into another.
func copyPKI(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "kubeconfig" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEtcdSeveralAPIServers: three API servers over one three-member
// etcd. A write through one is seen by a watch on another; a consistent
// LIST on each sees every acknowledged write; a client with every
// endpoint carries on through a SIGKILL of one server and loses nothing
// acknowledged; the controller manager, behind a TCP load balancer,
// fails over to another server when its own is killed.
func TestEtcdSeveralAPIServers(t *testing.T) {
	cluster := etcdtest.Start(t, 3)
	servers := startEtcdAPIServers(t, cluster, 3, "--goaway-chance=0.02")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clients := make([]kubernetes.Interface, len(servers))
	for i, s := range servers {
		clients[i] = s.client(t)
	}
	ns := "multi"
	if _, err := clients[0].CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("a write through one is seen by a watch on another", func(t *testing.T) {
		w, err := clients[1].CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := clients[0].CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seen"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case ev := <-w.ResultChan():
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added && cm.Name == "seen" {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the watch on server 1 did not see the create on server 0")
			}
		}
	})

	t.Run("a consistent list on each server sees every acknowledged write", func(t *testing.T) {
		for i := range 30 {
			name := fmt.Sprintf("c-%d", i)
			if _, err := clients[i%3].CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// At once, on the next server: a consistent list must see it.
			list, err := clients[(i+1)%3].CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !hasConfigMap(list.Items, name) {
				t.Fatalf("server %d's consistent list misses %s, acknowledged by server %d", (i+1)%3, name, i%3)
			}
		}
	})

	// The remedy for a server that restarts and gets no load: its peers
	// send GOAWAY to a share of requests (--goaway-chance), and clients
	// reconnect through the balancer, some to it.
	t.Run("GOAWAY moves a client to a server that joined the balancer", func(t *testing.T) {
		lb := startTCPBalancer(t, servers[1].port)
		lb.mu.Lock()
		lb.mu.roundRobin = true
		lb.mu.Unlock()
		cfg, err := clientcmd.BuildConfigFromFlags("", writeKubeconfigFor(t, servers[1], lb.addr()))
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS = -1
		c := kubernetes.NewForConfigOrDie(cfg)
		get := func() {
			if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		get()
		lb.add(servers[2].port)
		// 2% of 1,000: about 20 reconnects, every other one to server 2.
		for range 1000 {
			get()
		}
		if lb.connections(servers[2].port) == 0 {
			t.Fatalf("no connection moved to the joined server (%d to the first)", lb.connections(servers[1].port))
		}
		t.Logf("connections: %d to the first server, %d to the one that joined", lb.connections(servers[1].port), lb.connections(servers[2].port))
	})

	t.Run("clients carry on through a SIGKILLed API server; nothing acknowledged is lost", func(t *testing.T) {
		var acked sync.Map
		var n atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					name := fmt.Sprintf("load-%d-%d", w, i)
					// A client with every endpoint: try each in turn.
					for try := range 6 {
						c := clients[(w+i+try)%3]
						_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
						if err == nil || apierrors.IsAlreadyExists(err) {
							// AlreadyExists: an earlier try was applied
							// although its answer was lost.
							acked.Store(name, true)
							n.Add(1)
							break
						}
					}
				}
			}()
		}
		time.Sleep(time.Second)
		servers[0].kill()
		killedAt := n.Load()
		time.Sleep(2 * time.Second)
		close(stop)
		wg.Wait()
		if n.Load() <= killedAt {
			t.Fatalf("no write acknowledged after the kill (%d before)", killedAt)
		}
		for _, i := range []int{1, 2} {
			list, err := clients[i].CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			missing := 0
			acked.Range(func(k, _ any) bool {
				if !hasConfigMap(list.Items, k.(string)) {
					missing++
				}
				return true
			})
			if missing > 0 {
				t.Fatalf("server %d lists %d configmaps; %d acknowledged ones are missing", i, len(list.Items), missing)
			}
		}
		t.Logf("%d writes acknowledged, %d of them after the kill", n.Load(), n.Load()-killedAt)
	})

	t.Run("the scheduler and the controller manager fail over between servers behind a load balancer", func(t *testing.T) {
		lb := startTCPBalancer(t, servers[1].port, servers[2].port)
		kc := writeKubeconfigFor(t, servers[1], lb.addr())
		startControllerManager(t, &server{kubeconfig: kc}, "--controllers=replicaset", "--leader-elect", "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms")
		createNode(t, clients[2], schedNode("n", "4", nil))
		sched := exec.Command(binary, "scheduler", "--kubeconfig", kc, "--leader-elect-retry-period", "200ms")
		schedLog := &safeBuffer{}
		sched.Stdout, sched.Stderr = schedLog, schedLog
		if err := sched.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = sched.Process.Kill()
			_ = sched.Wait()
			if t.Failed() {
				t.Logf("scheduler log:\n%s", tail(schedLog.String(), 3000))
			}
		}()
		// Ready: the ReplicaSet controller made both pods and the
		// scheduler bound them.
		rsReady := func(name string) bool {
			pods, err := clients[2].CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil || len(pods.Items) != 2 {
				return false
			}
			for _, p := range pods.Items {
				if p.Spec.NodeName == "" {
					return false
				}
			}
			return true
		}
		createRS(t, ctx, clients[2], ns, "before")
		waitUntil(t, 30*time.Second, "the replicaset controller and the scheduler to make and bind pods", func() bool { return rsReady("before") })
		// Kill the server the controller manager is connected to: every
		// connection the balancer holds goes to it (the balancer sends
		// new connections to the first live backend).
		servers[1].kill()
		lb.drop(servers[1].port)
		createRS(t, ctx, clients[2], ns, "after")
		waitUntil(t, 45*time.Second, "the controller manager and the scheduler to carry on through the other server", func() bool { return rsReady("after") })
	})
}

func hasConfigMap(items []corev1.ConfigMap, name string) bool {
	for _, cm := range items {
		if cm.Name == name {
			return true
		}
	}
	return false
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func createRS(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, name string) {
	t.Helper()
	two := int32(2)
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.ReplicaSetSpec{
		Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}}},
	}}
	if _, err := c.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// writeKubeconfigFor writes a copy of s's kubeconfig pointing at addr.
func writeKubeconfigFor(t *testing.T, s *server, addr string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + addr
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// tcpBalancer is the test's load balancer: it forwards each connection to
// the first backend that accepts it, as a TCP load balancer with health
// checks does once a backend is gone.
type tcpBalancer struct {
	ln net.Listener
	mu struct {
		sync.Mutex
		backends []int
		conns    map[int][]net.Conn
		// roundRobin sends each new connection to the next backend
		// instead of the first live one; accepted counts them.
		roundRobin bool
		next       int
		accepted   map[int]int
	}
	wg sync.WaitGroup
}

func startTCPBalancer(t *testing.T, ports ...int) *tcpBalancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &tcpBalancer{ln: ln}
	b.mu.backends = ports
	b.mu.conns = map[int][]net.Conn{}
	b.mu.accepted = map[int]int{}
	b.wg.Add(1)
	go b.serve()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, cs := range b.mu.conns {
			for _, c := range cs {
				c.Close()
			}
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *tcpBalancer) addr() string { return b.ln.Addr().String() }

// add puts a backend behind the balancer, as when a server (re)joins.
func (b *tcpBalancer) add(port int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.backends = append(b.mu.backends, port)
}

// connections is how many connections went to the backend.
func (b *tcpBalancer) connections(port int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.accepted[port]
}

// drop removes a backend and closes the connections to it, as a balancer
// does when its health check fails.
func (b *tcpBalancer) drop(port int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keep []int
	for _, p := range b.mu.backends {
		if p != port {
			keep = append(keep, p)
		}
	}
	b.mu.backends = keep
	for _, c := range b.mu.conns[port] {
		c.Close()
	}
	delete(b.mu.conns, port)
}

func (b *tcpBalancer) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.forward(c)
		}()
	}
}

func (b *tcpBalancer) forward(c net.Conn) {
	defer c.Close()
	b.mu.Lock()
	backends := append([]int(nil), b.mu.backends...)
	if b.mu.roundRobin && len(backends) > 0 {
		k := b.mu.next % len(backends)
		b.mu.next++
		backends = append(backends[k:], backends[:k]...)
	}
	b.mu.Unlock()
	for _, port := range backends {
		up, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			continue
		}
		b.mu.Lock()
		b.mu.conns[port] = append(b.mu.conns[port], c, up)
		b.mu.accepted[port]++
		b.mu.Unlock()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done
		up.Close()
		c.Close()
		<-done
		return
	}
}

// TestEtcdServersOverrides: events and leases in an etcd of their own
// (--etcd-servers-overrides). Their keys land there, in upstream's
// layout, events with a lease so etcd expires them; componentstatuses
// lists both etcds; when the events etcd stops, /readyz fails at once
// naming it while the rest of the API serves on.
func TestEtcdServersOverrides(t *testing.T) {
	main, side := etcdtest.Start(t, 1), etcdtest.Start(t, 1)
	s := startEtcdAPIServers(t, main, 1, "--etcd-servers-overrides=/events#"+side.Endpoint(0)+",coordination.k8s.io/leases#"+side.Endpoint(0))[0]
	c := s.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, Reason: "Test", Message: "m", Type: "Normal"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder := "me"
	if _, err := c.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		cluster *etcdtest.Cluster
		where   string
		key     string
		want    bool
	}{
		{side, "side", "/registry/events/default/ev", true},
		{main, "main", "/registry/events/default/ev", false},
		{side, "side", "/registry/leases/default/l", true},
		{main, "main", "/registry/leases/default/l", false},
		{main, "main", "/registry/configmaps/default/cm", true},
		{side, "side", "/registry/configmaps/default/cm", false},
	} {
		resp, err := k.cluster.Client(t).Get(ctx, k.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(resp.Kvs) == 1; got != k.want {
			t.Fatalf("%s in the %s etcd: %v, want %v", k.key, k.where, got, k.want)
		}
		if k.want && strings.Contains(k.key, "/events/") && resp.Kvs[0].Lease == 0 {
			t.Fatalf("%s has no lease: events would never expire", k.key)
		}
	}
	out := s.mustKubectl(t, "", "get", "componentstatuses")
	for _, want := range []string{"etcd-0", "etcd-1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("componentstatuses lacks %s:\n%s", want, out)
		}
	}

	metrics := s.mustKubectl(t, "", "get", "--raw", "/metrics")
	for _, want := range []string{"etcd_db_total_size_in_bytes{", `apiserver_storage_objects{resource="events"} 1`,
		`apiserver_storage_objects{resource="leases.coordination.k8s.io"} 1`, "myriad_watch_cache_lag_revisions{", `etcd_request_duration_seconds_count{operation="create",type="events"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	side.Stop(0)
	start := time.Now()
	body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err == nil {
		t.Fatalf("/readyz passed with the events etcd stopped: %s", body)
	}
	if !strings.Contains(string(body), "etcd-1 (") || !strings.Contains(string(body), "events") {
		t.Fatalf("/readyz does not name the events etcd: %s (%v)", body, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("/readyz took %s", d)
	}
	if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, "cm", metav1.GetOptions{}); err != nil {
		t.Fatalf("configmaps, in the main etcd, fail with the events etcd stopped: %v", err)
	}
}

// TestEtcdFaultsThroughAPIServers: etcd faults as clients of two API
// servers see them. Killing the etcd leader under a write load loses no
// acknowledged write and the load carries on; with a majority of members
// stopped, a write fails with an error within the store's request
// timeout instead of hanging, /readyz names the store, and once quorum
// returns writes succeed again with nothing acknowledged lost.
func TestEtcdFaultsThroughAPIServers(t *testing.T) {
	cluster := etcdtest.Start(t, 3)
	servers := startEtcdAPIServers(t, cluster, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clients := []kubernetes.Interface{servers[0].client(t), servers[1].client(t)}
	const ns = "faults"
	if _, err := clients[0].CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var acked sync.Map
	create := func(c kubernetes.Interface, name string) error {
		_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err == nil {
			acked.Store(name, true)
		}
		return err
	}

	// The leader dies under load.
	var afterKill atomic.Int64
	var killed atomic.Bool
	var killedAt time.Time
	firstAfter := make(chan time.Time, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if create(clients[(w+i)%2], fmt.Sprintf("lk-%d-%d", w, i)) == nil && killed.Load() {
					if afterKill.Add(1) == 1 {
						firstAfter <- time.Now()
					}
				}
			}
		}()
	}
	time.Sleep(time.Second)
	leader := cluster.Leader()
	cluster.Kill(leader)
	killedAt = time.Now()
	killed.Store(true)
	select {
	case at := <-firstAfter:
		t.Logf("first write acknowledged %s after the etcd leader was killed", at.Sub(killedAt).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Error("no write succeeded within 20 s of the etcd leader's death")
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	cluster.Restart(leader)

	// A majority stops: writes fail, bounded; readiness says why.
	var stopped []int
	for i := range cluster.Size() {
		if len(stopped) < 2 && i != cluster.Leader() {
			stopped = append(stopped, i)
		}
	}
	for _, i := range stopped {
		cluster.Stop(i)
	}
	start := time.Now()
	err := create(clients[0], "no-quorum")
	if err == nil {
		t.Fatal("a write succeeded without quorum")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the write without quorum took %s to fail", d)
	}
	t.Logf("write without quorum: %v (after %s)", err, time.Since(start).Round(time.Millisecond))
	body, rerr := clients[1].Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if rerr == nil || !strings.Contains(string(body), "etcd-0") {
		t.Fatalf("/readyz without quorum: %v %s", rerr, body)
	}
	for _, i := range stopped {
		cluster.Restart(i)
	}
	waitUntil(t, 30*time.Second, "writes to succeed once quorum returns", func() bool { return create(clients[1], fmt.Sprintf("back-%d", time.Now().UnixNano())) == nil })

	for i, c := range clients {
		list, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		missing := 0
		acked.Range(func(k, _ any) bool {
			if !hasConfigMap(list.Items, k.(string)) {
				missing++
			}
			return true
		})
		if missing > 0 {
			t.Fatalf("server %d: %d acknowledged writes missing", i, missing)
		}
	}
}
