package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz/node"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/pki"
	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// cluster is a real Server over a real store behind TLS, client-certificate
// and token authentication, and the authorizer chain
// system:masters → Node (RBAC is another package's; nothing else allows).
type cluster struct {
	t     *testing.T
	creds *pki.Credentials
	store storage.Store

	api    *apiserver.Server
	authz  *node.Authorizer
	srv    *httptest.Server
	cancel context.CancelFunc
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newCluster(t *testing.T) *cluster {
	t.Helper()
	dir := t.TempDir()
	st, err := embedded.Open(context.Background(), embedded.Options{Dir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	creds, err := pki.EnsureCredentials(dir, pki.Options{BindAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, creds: creds, store: st}
	c.start()
	return c
}

// start starts a Server, the Node authorizer and the HTTP server; it does
// not wait for readiness.
func (c *cluster) start() {
	t := c.t
	t.Helper()
	api, err := apiserver.New(apiserver.Config{Store: c.store, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	na, err := node.New(api, node.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := api.Start(ctx); err != nil {
		t.Fatal(err)
	}
	na.Start(ctx)
	auth := authn.Union(authn.BearerToken(authn.NewAdminToken(c.creds.Token)), authn.NewClientCertAuthenticator(c.creds.CAPool()))
	h := filters.Chain(api,
		filters.WithRequestInfo,
		authn.WithAuthentication(auth, authn.Config{Logger: quiet()}),
		authz.WithAuthorization(authz.Union(authz.PrivilegedGroups(request.GroupMasters), na), quiet()),
	)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = c.creds.TLSConfig()
	srv.StartTLS()
	c.api, c.authz, c.srv, c.cancel = api, na, srv, cancel
	t.Cleanup(c.stop)
}

func (c *cluster) stop() {
	if c.srv == nil {
		return
	}
	c.srv.Close()
	c.authz.Stop()
	c.api.Stop()
	c.cancel()
	c.srv = nil
}

func (c *cluster) waitReady() {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !c.api.Ready() {
		if time.Now().After(deadline) {
			c.t.Fatal("server not ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *cluster) restConfig() *rest.Config {
	return &rest.Config{Host: c.srv.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{CAData: c.creds.CAPEM}}
}

func (c *cluster) admin() kubernetes.Interface {
	cfg := c.restConfig()
	cfg.BearerToken = c.creds.Token
	return kubernetes.NewForConfigOrDie(cfg)
}

// nodeClient is a kubelet's client: a certificate for system:node:name in
// system:nodes, issued by the cluster CA.
func (c *cluster) nodeClient(name string) kubernetes.Interface {
	certPEM, keyPEM, err := c.creds.IssueClientCertificate("system:node:"+name, []string{node.NodesGroup}, time.Hour)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := c.restConfig()
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return kubernetes.NewForConfigOrDie(cfg)
}

func testPod(ns, name, nodeName, secret string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
		},
	}
}

func mustCreate[T any](t *testing.T, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) {
	t.Helper()
	if _, err := create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wantForbidden(err error, contains string) error {
	if !apierrors.IsForbidden(err) {
		return fmt.Errorf("got %v, want 403", err)
	}
	if !strings.Contains(err.Error(), contains) {
		return fmt.Errorf("403 %q does not say %q", err.Error(), contains)
	}
	return nil
}

func TestNodeAuthorizerOverHTTP(t *testing.T) {
	c := newCluster(t)
	c.waitReady()
	ctx := context.Background()
	admin := c.admin()
	mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	for _, s := range []string{"sa", "sb"} {
		mustCreate(t, admin.CoreV1().Secrets("ns").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s}})
	}
	mustCreate(t, admin.CoreV1().Pods("ns").Create, testPod("ns", "pa", "a", "sa"))
	mustCreate(t, admin.CoreV1().Pods("ns").Create, testPod("ns", "pb", "b", "sb"))
	a, b := c.nodeClient("a"), c.nodeClient("b")

	eventually(t, "node a reads its pod's secret", func() error {
		_, err := a.CoreV1().Secrets("ns").Get(ctx, "sa", metav1.GetOptions{})
		return err
	})
	if _, err := b.CoreV1().Secrets("ns").Get(ctx, "sb", metav1.GetOptions{}); err != nil {
		t.Fatalf("node b reading its secret: %v", err)
	}
	_, err := a.CoreV1().Secrets("ns").Get(ctx, "sb", metav1.GetOptions{})
	if err := wantForbidden(err, `secrets "sb" is forbidden: User "system:node:a" cannot get resource "secrets" in API group "" in the namespace "ns": no relationship found between node 'a' and this object`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CoreV1().Secrets("ns").List(ctx, metav1.ListOptions{}); apierrors.IsForbidden(err) == false {
		t.Fatalf("node a listing secrets: %v, want 403", err)
	}
	// Own pods by field selector, not all pods.
	if _, err := a.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=a"}); err != nil {
		t.Fatalf("listing own pods: %v", err)
	}
	if _, err := a.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=b"}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing b's pods: %v, want 403", err)
	}
	// Its own Node and Lease (authorized: the handler answers 404), not b's.
	if _, err := a.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("own node get: %v, want 404", err)
	}
	if _, err := a.CoreV1().Nodes().Get(ctx, "b", metav1.GetOptions{}); wantForbidden(err, "node 'a' cannot read 'b', only its own Node object") != nil {
		t.Fatalf("b's node get: %v", err)
	}
	if _, err := a.CoordinationV1().Leases("kube-node-lease").Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("own lease get: %v, want 404", err)
	}
	if _, err := a.CoordinationV1().Leases("kube-node-lease").Get(ctx, "b", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("b's lease get: %v, want 403", err)
	}
	// A deployment list is RBAC's to allow, and there is no RBAC here.
	if _, err := a.AppsV1().Deployments("ns").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("deployments: %v, want 403", err)
	}

	// NodeRestriction narrows what the authorizer allows every node.
	for _, n := range []string{"a", "b"} {
		mustCreate(t, admin.CoreV1().Nodes().Create, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	if _, err := a.CoreV1().Nodes().Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/x":"y","node.kubernetes.io/pool":"p"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling itself: %v", err)
	}
	_, err = a.CoreV1().Nodes().Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"gold"}}}`), metav1.PatchOptions{})
	if err := wantForbidden(err, `nodes "a" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool`); err != nil {
		t.Fatal(err)
	}
	_, err = a.CoreV1().Nodes().Patch(ctx, "b", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if err := wantForbidden(err, `node "a" is not allowed to modify node "b"`); err != nil {
		t.Fatal(err)
	}
	status := []byte(`{"status":{"message":"hello"}}`)
	if _, err := a.CoreV1().Pods("ns").Patch(ctx, "pa", types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("own pod status: %v", err)
	}
	_, err = a.CoreV1().Pods("ns").Patch(ctx, "pb", types.MergePatchType, status, metav1.PatchOptions{}, "status")
	if err := wantForbidden(err, `node "a" can only update pod status for pods with spec.nodeName set to itself`); err != nil {
		t.Fatal(err)
	}
	err = a.PolicyV1().Evictions("ns").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "pb", Namespace: "ns"}})
	if err := wantForbidden(err, `node a can only evict pods with spec.nodeName set to itself`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-node-lease"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err = a.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
	if err := wantForbidden(err, "can only access node lease with the same name as the requesting node"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("own lease: %v", err)
	}

	// The pod goes: so does the access.
	if err := admin.CoreV1().Pods("ns").Delete(ctx, "pa", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node a loses its deleted pod's secret", func() error {
		_, err := a.CoreV1().Secrets("ns").Get(ctx, "sa", metav1.GetOptions{})
		return wantForbidden(err, "no relationship found")
	})
}

// TestNoNodeDeniedAcrossRestart stops the server over a store with many
// pods and starts a new one on it, kubelets asking for their secrets the
// whole time: none is ever refused (before the graph is built they are
// asked to retry), and once /readyz says ready every one is answered at
// the first try.
func TestNoNodeDeniedAcrossRestart(t *testing.T) {
	const nodes, podsPerNode = 50, 40
	if testing.Short() {
		t.Skip("creates 2,000 pods")
	}
	c := newCluster(t)
	c.waitReady()
	ctx := context.Background()
	admin := c.admin()
	mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	var wg sync.WaitGroup
	errs := make(chan error, nodes)
	// Each pod has a secret of its own.
	for n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range podsPerNode {
				name := fmt.Sprintf("n%d-p%d", n, i)
				if _, err := admin.CoreV1().Secrets("ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				if _, err := admin.CoreV1().Pods("ns").Create(ctx, testPod("ns", name, fmt.Sprintf("n%d", n), name), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eventually(t, "graph holds every pod", func() error {
		if got := c.authz.Graph().Stats().Vertices[0]; got != nodes*podsPerNode {
			return fmt.Errorf("%d pods in the graph", got)
		}
		return nil
	})

	c.stop()
	c.start()

	// Kubelets ask through raw HTTP so every answer is seen, retries
	// included: 403 must never come; 429 (graph or caches not ready)
	// may come only before ready.
	type answer struct {
		code       int
		afterReady bool
	}
	answers := make(chan answer, 1<<16)
	readyAt := make(chan struct{})
	stopAsking := make(chan struct{})
	var askers sync.WaitGroup
	for n := range nodes {
		askers.Add(1)
		go func() {
			defer askers.Done()
			hc, err := rest.HTTPClientFor(c.nodeConfig(n))
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; ; i = (i + 1) % podsPerNode {
				select {
				case <-stopAsking:
					return
				default:
				}
				ready := isClosed(readyAt)
				resp, err := hc.Get(fmt.Sprintf("%s/api/v1/namespaces/ns/secrets/n%d-p%d", c.srv.URL, n, i))
				if err != nil {
					continue // the listener may not be up yet
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				answers <- answer{resp.StatusCode, ready}
				if resp.StatusCode == 429 {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	c.waitReady()
	close(readyAt)
	time.Sleep(500 * time.Millisecond)
	close(stopAsking)
	askers.Wait()
	close(answers)
	counts := map[string]int{}
	for a := range answers {
		switch {
		case a.code == 200:
			counts["200"]++
		case a.code == 429 && !a.afterReady:
			counts["429 before ready"]++
		default:
			t.Errorf("kubelet got %d (after ready: %v)", a.code, a.afterReady)
		}
	}
	t.Logf("answers across the restart: %v", counts)
	if counts["200"] == 0 {
		t.Fatal("no kubelet request was answered")
	}
}

func (c *cluster) nodeConfig(n int) *rest.Config {
	certPEM, keyPEM, err := c.creds.IssueClientCertificate(fmt.Sprintf("system:node:n%d", n), []string{node.NodesGroup}, time.Hour)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := c.restConfig()
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
