package resourcequota

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// store is Quotas over a map, with the store's compare-and-swap: a
// status written from a stale resourceVersion is a conflict.
type store struct {
	mu      sync.Mutex
	quotas  map[string]*corev1.ResourceQuota // by namespace/name
	rev     int64
	reads   atomic.Int64
	writes  atomic.Int64
	latency time.Duration // of each write, so that requests pile up
}

func newStore(qs ...*corev1.ResourceQuota) *store {
	s := &store{quotas: map[string]*corev1.ResourceQuota{}}
	for _, q := range qs {
		s.rev++
		q = q.DeepCopy()
		q.ResourceVersion = strconv.FormatInt(s.rev, 10)
		s.quotas[q.Namespace+"/"+q.Name] = q
	}
	return s
}

func (s *store) list(ns string) []*corev1.ResourceQuota {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*corev1.ResourceQuota
	for _, q := range s.quotas {
		if q.Namespace == ns {
			out = append(out, q.DeepCopy())
		}
	}
	return out
}

func (s *store) Cached(_ context.Context, ns string) ([]*corev1.ResourceQuota, error) {
	return s.list(ns), nil
}

func (s *store) Current(_ context.Context, ns string) ([]*corev1.ResourceQuota, error) {
	s.reads.Add(1)
	return s.list(ns), nil
}

func (s *store) UpdateStatus(_ context.Context, q *corev1.ResourceQuota) error {
	time.Sleep(s.latency)
	s.mu.Lock()
	defer s.mu.Unlock()
	key := q.Namespace + "/" + q.Name
	cur, ok := s.quotas[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "resourcequotas"}, q.Name)
	}
	if cur.ResourceVersion != q.ResourceVersion {
		return apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, q.Name, fmt.Errorf("the object has been modified"))
	}
	s.writes.Add(1)
	s.rev++
	next := cur.DeepCopy()
	next.Status = *q.Status.DeepCopy()
	next.ResourceVersion = strconv.FormatInt(s.rev, 10)
	s.quotas[key] = next
	return nil
}

func (s *store) used(ns, name string) corev1.ResourceList {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quotas[ns+"/"+name].Status.Used
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// rq is a counted quota: hard, and used as the controller wrote it.
func rq(name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func cpuPod(name, cpu string) *corev1.Pod {
	c := corev1.Container{Name: "app"}
	if cpu != "" {
		c.Resources.Requests = rl("cpu", cpu)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func service(name string, typ corev1.ServiceType, rv string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv},
		Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Port: 80}}}}
}

var (
	podsGVR     = corev1.SchemeGroupVersion.WithResource("pods")
	servicesGVR = corev1.SchemeGroupVersion.WithResource("services")
)

func attrs(op admission.Operation, gvr schema.GroupVersionResource, obj, old runtime.Object) *admission.Attributes {
	m, _ := obj.(metav1.Object)
	name := ""
	if m != nil {
		name = m.GetName()
	}
	return &admission.Attributes{Operation: op, Resource: gvr, Namespace: "ns", Name: name, Object: obj, OldObject: old}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		quotas   []*corev1.ResourceQuota
		a        *admission.Attributes
		wantErr  string            // 403 with this message; "" admits
		wantUsed map[string]string // quota name → PrettyPrint of used after
	}{
		{name: "no quota", a: attrs(admission.Create, podsGVR, cpuPod("p", ""), nil)},
		{name: "within quota: charged",
			quotas:   []*corev1.ResourceQuota{rq("q", rl("pods", "2", "requests.cpu", "1"), rl("pods", "1", "requests.cpu", "100m"))},
			a:        attrs(admission.Create, podsGVR, cpuPod("p", "200m"), nil),
			wantUsed: map[string]string{"q": "pods=2,requests.cpu=300m"}},
		{name: "exceeded",
			quotas:  []*corev1.ResourceQuota{rq("q", rl("pods", "2", "requests.cpu", "1"), rl("pods", "2", "requests.cpu", "100m"))},
			a:       attrs(admission.Create, podsGVR, cpuPod("p3", "200m"), nil),
			wantErr: `pods "p3" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`},
		{name: "exceeded on two resources",
			quotas:  []*corev1.ResourceQuota{rq("q", rl("pods", "1", "requests.cpu", "1"), rl("pods", "1", "requests.cpu", "900m"))},
			a:       attrs(admission.Create, podsGVR, cpuPod("p", "200m"), nil),
			wantErr: `exceeded quota: q, requested: pods=1,requests.cpu=200m, used: pods=1,requests.cpu=900m, limited: pods=1,requests.cpu=1`},
		{name: "must specify",
			quotas:  []*corev1.ResourceQuota{rq("q", rl("pods", "2", "requests.cpu", "1"), rl("pods", "0", "requests.cpu", "0"))},
			a:       attrs(admission.Create, podsGVR, cpuPod("p", ""), nil),
			wantErr: `pods "p" is forbidden: failed quota: q: must specify requests.cpu for: app`},
		{name: "status not counted yet",
			quotas:  []*corev1.ResourceQuota{rq("q", rl("pods", "2"), nil)},
			a:       attrs(admission.Create, podsGVR, cpuPod("p", ""), nil),
			wantErr: `status unknown for quota: q, resources: pods`},
		{name: "every matching quota is charged, others not",
			quotas: []*corev1.ResourceQuota{rq("a", rl("pods", "5"), rl("pods", "1")), rq("b", rl("count/pods", "5"), rl("count/pods", "2")),
				rq("c", rl("secrets", "5"), rl("secrets", "0"))},
			a:        attrs(admission.Create, podsGVR, cpuPod("p", ""), nil),
			wantUsed: map[string]string{"a": "pods=2", "b": "count/pods=3", "c": "secrets=0"}},
		{name: "one exceeded quota refuses the request",
			quotas:   []*corev1.ResourceQuota{rq("a", rl("pods", "5"), rl("pods", "1")), rq("b", rl("count/pods", "2"), rl("count/pods", "2"))},
			a:        attrs(admission.Create, podsGVR, cpuPod("p", ""), nil),
			wantErr:  "exceeded quota: b",
			wantUsed: map[string]string{"a": "pods=1", "b": "count/pods=2"}},
		{name: "scoped out: not charged",
			quotas: []*corev1.ResourceQuota{func() *corev1.ResourceQuota {
				q := rq("be", rl("pods", "1"), rl("pods", "1"))
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
				return q
			}()},
			a:        attrs(admission.Create, podsGVR, cpuPod("p", "100m"), nil),
			wantUsed: map[string]string{"be": "pods=1"}},
		{name: "dry run: checked, not charged",
			quotas: []*corev1.ResourceQuota{rq("q", rl("pods", "2"), rl("pods", "1"))},
			a: func() *admission.Attributes {
				a := attrs(admission.Create, podsGVR, cpuPod("p", ""), nil)
				a.DryRun = true
				return a
			}(),
			wantUsed: map[string]string{"q": "pods=1"}},
		{name: "pod update: not charged",
			quotas:   []*corev1.ResourceQuota{rq("q", rl("pods", "1"), rl("pods", "1"))},
			a:        attrs(admission.Update, podsGVR, cpuPod("p", ""), cpuPod("p", "")),
			wantUsed: map[string]string{"q": "pods=1"}},
		{name: "service update to NodePort: charged the node ports",
			quotas: []*corev1.ResourceQuota{rq("q", rl("services", "2", "services.nodeports", "1"), rl("services", "1", "services.nodeports", "0"))},
			a: attrs(admission.Update, servicesGVR, service("s", corev1.ServiceTypeNodePort, "5"),
				service("s", corev1.ServiceTypeClusterIP, "5")),
			wantUsed: map[string]string{"q": "services=1,services.nodeports=1"}},
		{name: "service update past node ports",
			quotas: []*corev1.ResourceQuota{rq("q", rl("services.nodeports", "0"), rl("services.nodeports", "0"))},
			a: attrs(admission.Update, servicesGVR, service("s", corev1.ServiceTypeNodePort, "5"),
				service("s", corev1.ServiceTypeClusterIP, "5")),
			wantErr: `services "s" is forbidden: exceeded quota: q, requested: services.nodeports=1, used: services.nodeports=0, limited: services.nodeports=0`},
		{name: "count of any resource",
			quotas: []*corev1.ResourceQuota{rq("q", rl("count/widgets.example.com", "1"), rl("count/widgets.example.com", "1"))},
			a: attrs(admission.Create, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
				&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}, nil),
			wantErr: `widgets.example.com "w" is forbidden: exceeded quota: q, requested: count/widgets.example.com=1`},
		{name: "events are never charged",
			quotas: []*corev1.ResourceQuota{rq("q", rl("count/events", "0"), rl("count/events", "0"))},
			a:      attrs(admission.Create, corev1.SchemeGroupVersion.WithResource("events"), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(tc.quotas...)
			p := New(s, clocktesting.NewFakeClock(time.Now()))
			err := p.Validate(context.Background(), tc.a)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want 403 containing %q", err, tc.wantErr)
			}
			for name, want := range tc.wantUsed {
				if got := prettyUsed(s.used("ns", name)); got != want {
					t.Errorf("quota %s used = %s, want %s", name, got, want)
				}
			}
		})
	}
}

func prettyUsed(l corev1.ResourceList) string {
	parts := []string{}
	for _, k := range []string{"count/pods", "pods", "requests.cpu", "secrets", "services", "services.nodeports"} {
		if v, ok := l[corev1.ResourceName(k)]; ok {
			parts = append(parts, k+"="+v.String())
		}
	}
	return strings.Join(parts, ",")
}

// TestNoQuotaNoStore: a namespace without quotas, or whose quotas do not
// track the object, never reaches the store.
func TestNoQuotaNoStore(t *testing.T) {
	s := newStore(rq("q", rl("secrets", "1"), rl("secrets", "0")))
	p := New(s, clocktesting.NewFakeClock(time.Now()))
	for _, a := range []*admission.Attributes{
		attrs(admission.Create, podsGVR, cpuPod("p", ""), nil),
		{Operation: admission.Create, Resource: podsGVR, Namespace: "other", Object: cpuPod("p", "")},
	} {
		if err := p.Validate(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.reads.Load(); n != 0 {
		t.Fatalf("%d store reads, want 0", n)
	}
}

// TestConcurrentCreates: creates racing for a quota are admitted exactly
// up to it, within one API server (batched) and across two (each with its
// own plugin, contending through compare-and-swap on the same store).
func TestConcurrentCreates(t *testing.T) {
	for _, tc := range []struct {
		name           string
		hard, creators int
		servers        int
		latency        time.Duration
	}{
		{"two creates, quota of one", 1, 2, 1, 0},
		{"two creates on two servers, quota of one", 1, 2, 2, time.Millisecond},
		{"fifty creates, quota of ten", 10, 50, 1, time.Millisecond},
		{"fifty creates on three servers, quota of ten", 10, 50, 3, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(rq("q", rl("pods", strconv.Itoa(tc.hard)), rl("pods", "0")))
			s.latency = tc.latency
			plugins := make([]*Plugin, tc.servers)
			for i := range plugins {
				plugins[i] = New(s, clocktesting.NewFakeClock(time.Now()))
			}
			var admitted, refused atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range tc.creators {
				wg.Go(func() {
					<-start
					err := plugins[i%tc.servers].Validate(context.Background(), attrs(admission.Create, podsGVR, cpuPod(fmt.Sprintf("p%d", i), ""), nil))
					switch {
					case err == nil:
						admitted.Add(1)
					case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: q"):
						refused.Add(1)
					default:
						t.Errorf("create %d: %v", i, err)
					}
				})
			}
			close(start)
			wg.Wait()
			if got := admitted.Load(); got != int64(tc.hard) {
				t.Errorf("admitted %d, refused %d; want %d admitted", got, refused.Load(), tc.hard)
			}
			used := s.used("ns", "q")[corev1.ResourcePods]
			if used.Value() != int64(tc.hard) {
				t.Errorf("used pods = %s, want %d", used.String(), tc.hard)
			}
			t.Logf("%d quota writes for %d admissions", s.writes.Load(), admitted.Load())
		})
	}
}

// TestFinishRefunds: a charged write that is not stored gives its charge
// back; a stored one keeps it; a dry run was never charged.
func TestFinishRefunds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		written bool
		dryRun  bool
		want    string
	}{
		{"stored: kept", true, false, "pods=2,requests.cpu=300m"},
		{"not stored: refunded", false, false, "pods=1,requests.cpu=100m"},
		{"dry run", false, true, "pods=1,requests.cpu=100m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(rq("q", rl("pods", "2", "requests.cpu", "1"), rl("pods", "1", "requests.cpu", "100m")))
			p := New(s, clocktesting.NewFakeClock(time.Now()))
			ctx := context.Background()
			a := attrs(admission.Create, podsGVR, cpuPod("p", "200m"), nil)
			a.DryRun = tc.dryRun
			finish, err := p.Allocate(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Validate(ctx, a); err != nil {
				t.Fatal(err)
			}
			finish(tc.written)
			if got := prettyUsed(s.used("ns", "q")); got != tc.want {
				t.Errorf("used = %s, want %s", got, tc.want)
			}
			if n := len(p.mu.charges); n != 0 {
				t.Errorf("%d charges kept after Finish", n)
			}
		})
	}
}
