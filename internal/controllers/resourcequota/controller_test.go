package resourcequota

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
	rq "github.com/myriad-k8s/myriad/internal/quota"
)

var t0 = time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func pretty(l corev1.ResourceList) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, string(k)+"="+v.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func newQuota(name string, hard corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}}
}

func pod(name string, requests corev1.ResourceList, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func deployment(name string) *metav1.PartialObjectMetadata {
	return metadataOf("apps/v1", "Deployment", name)
}

// metadataOf is what the metadata client serves of an object in "ns".
func metadataOf(apiVersion, kind, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

// env is a controller over fake clients, its informers synced.
type env struct {
	c      *Controller
	clk    *clocktesting.FakeClock
	client *fake.Clientset
	ctx    context.Context
}

func newEnv(t *testing.T, objs []runtime.Object, meta ...runtime.Object) *env {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true},
			{Name: "secrets", Kind: "Secret", Namespaced: true},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}}},
	}
	scheme := runtime.NewScheme()
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "Secret"},
	} {
		scheme.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
		scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &metav1.PartialObjectMetadataList{})
	}
	md := metadatafake.NewSimpleMetadataClient(scheme, meta...)
	f := informers.NewSharedInformerFactory(client, 0)
	mf := metadatainformer.NewSharedInformerFactory(md, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(&controllerctx.Context{Client: client, Metadata: md, Informers: f, MetadataInformers: mf,
		Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	c.mu.stop = ctx.Done()
	t.Cleanup(func() {
		cancel()
		c.ShutDown()
		f.Shutdown()
		mf.Shutdown()
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return &env{c: c, clk: clk, client: client, ctx: ctx}
}

// syncUntilDone syncs key until it neither fails nor asks for a requeue
// (a metadata informer started on demand must sync first).
func (e *env) syncUntilDone(t *testing.T, key string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := e.c.sync(e.ctx, key)
		if err == nil {
			return
		}
		if !errors.Is(err, reconcile.ErrRequeue) || time.Now().After(deadline) {
			t.Fatalf("sync %s: %v", key, err)
		}
	}
}

func (e *env) status(t *testing.T, name string) corev1.ResourceQuotaStatus {
	t.Helper()
	q, err := e.client.CoreV1().ResourceQuotas("ns").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return q.Status
}

func TestSync(t *testing.T) {
	deadline := int64(30)
	grace := int64(10)
	terminating := func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline }
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	pastGrace := func(p *corev1.Pod) {
		ts := metav1.NewTime(t0.Add(-time.Minute))
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
	}
	otherNS := func(p *corev1.Pod) { p.Namespace = "other" }
	pods := []runtime.Object{
		pod("a", rl("cpu", "100m", "memory", "1Gi")),
		pod("b", rl("cpu", "200m")),
		pod("best", nil),
		pod("t", rl("cpu", "1"), terminating),
		pod("done", rl("cpu", "5"), succeeded),
		pod("gone", rl("cpu", "5"), pastGrace),
		pod("elsewhere", rl("cpu", "5"), otherNS),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 1}, {Port: 2}}}},
	}
	tests := []struct {
		name  string
		quota *corev1.ResourceQuota
		want  string
	}{
		{"compute", newQuota("q", rl("pods", "10", "requests.cpu", "10", "requests.memory", "10Gi", "limits.cpu", "10")),
			"limits.cpu=0,pods=4,requests.cpu=1300m,requests.memory=1Gi"},
		{"Terminating", newQuota("q", rl("pods", "10", "cpu", "10"), corev1.ResourceQuotaScopeTerminating), "cpu=1,pods=1"},
		{"NotTerminating", newQuota("q", rl("pods", "10"), corev1.ResourceQuotaScopeNotTerminating), "pods=3"},
		{"BestEffort", newQuota("q", rl("pods", "10"), corev1.ResourceQuotaScopeBestEffort), "pods=1"},
		{"NotBestEffort", newQuota("q", rl("pods", "10", "count/pods", "10"), corev1.ResourceQuotaScopeNotBestEffort), "count/pods=5,pods=3"},
		{"objects", newQuota("q", rl("secrets", "5", "configmaps", "5", "services", "5", "services.nodeports", "5", "resourcequotas", "2", "persistentvolumeclaims", "1")),
			"configmaps=1,persistentvolumeclaims=0,resourcequotas=1,secrets=1,services.nodeports=2,services=1"},
		{"scoped quota counts no services", newQuota("q", rl("services", "5"), corev1.ResourceQuotaScopeBestEffort), "services=0"},
		{"count of any resource", newQuota("q", rl("count/deployments.apps", "5")), "count/deployments.apps=2"},
		{"unserved resources are left out", newQuota("q", rl("count/widgets.example.com", "5", "pods", "10")), "pods=4"},
		{"unknown names are left out", newQuota("q", rl("foo", "5")), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, append([]runtime.Object{tc.quota}, pods...), deployment("d1"), deployment("d2"),
				metadataOf("v1", "Secret", "s"), metadataOf("v1", "ConfigMap", "cm"))
			e.syncUntilDone(t, "ns/q")
			st := e.status(t, "q")
			if got := pretty(st.Used); got != tc.want {
				t.Errorf("used = %s, want %s", got, tc.want)
			}
			if pretty(st.Hard) != pretty(tc.quota.Spec.Hard) {
				t.Errorf("hard = %s, want spec's %s", pretty(st.Hard), pretty(tc.quota.Spec.Hard))
			}
		})
	}
}

// TestSyncWritesOnlyChanges: a quota whose status is current is not
// written again.
func TestSyncWritesOnlyChanges(t *testing.T) {
	q := newQuota("q", rl("pods", "5"))
	q.Status = corev1.ResourceQuotaStatus{Hard: rl("pods", "5"), Used: rl("pods", "1")}
	e := newEnv(t, []runtime.Object{q, pod("a", nil)})
	e.client.ClearActions()
	e.syncUntilDone(t, "ns/q")
	for _, a := range e.client.Actions() {
		if a.GetVerb() == "update" {
			t.Fatalf("wrote a current quota: %v", a)
		}
	}
}

// TestReplenishment: deletions and drops in usage recount the namespace's
// quotas; creations do not (admission charged them).
func TestReplenishment(t *testing.T) {
	e := newEnv(t, []runtime.Object{newQuota("q", rl("pods", "5")), newQuota("r", rl("services", "5"))})
	pods, services := rq.For(rq.Pods), rq.For(rq.Services)
	running := pod("a", nil)
	finished := pod("a", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	clusterIP := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
	lb := clusterIP.DeepCopy()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	drain := func() int {
		n := e.c.Queue.Len()
		for range n {
			k, _ := e.c.Queue.Get()
			e.c.Queue.Done(k)
		}
		return n
	}
	// The quotas' own adds, delivered asynchronously after the sync.
	for deadline := time.Now().Add(5 * time.Second); e.c.Queue.Len() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	drain()
	for _, tc := range []struct {
		name      string
		event     func()
		recounted bool
	}{
		{"pod relabelled", func() { e.c.updated(pods, running, running.DeepCopy()) }, false},
		{"pod failed", func() { e.c.updated(pods, running, finished) }, true},
		{"pod deleted", func() { e.c.replenish(running) }, true},
		{"pod in a namespace without quotas deleted", func() { e.c.replenish(pod("x", nil, func(p *corev1.Pod) { p.Namespace = "other" })) }, false},
		{"service changed type", func() { e.c.updated(services, clusterIP, lb) }, true},
		{"service unchanged", func() { e.c.updated(services, clusterIP, clusterIP.DeepCopy()) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.event()
			want := map[bool]int{true: 2, false: 0}[tc.recounted]
			// The recount waits replenishDelay on the queue's clock.
			e.clk.Step(2 * replenishDelay)
			for deadline := time.Now().Add(time.Second); e.c.Queue.Len() < want && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if want == 0 {
				time.Sleep(50 * time.Millisecond) // for a wrongly queued key to show
			}
			if got := drain(); got != want {
				t.Errorf("%d quotas queued, want %d", got, want)
			}
		})
	}
}
