package apiserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/admission/limitranger"
	"github.com/myriad-k8s/myriad/internal/admission/resourcequota"
)

// TestQuotaAdmissionConcurrent: pods created at once through the API
// against a quota are admitted exactly up to it, and status.used says so:
// two racing for a quota of one, twenty for a quota of five.
func TestQuotaAdmissionConcurrent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, tc := range []struct{ hard, creators int }{{1, 2}, {5, 20}} {
		t.Run(fmt.Sprintf("%d creates, quota of %d", tc.creators, tc.hard), func(t *testing.T) {
			ns := fmt.Sprintf("q%d", tc.hard)
			e.createNamespace(ns)
			quotas := e.cs.CoreV1().ResourceQuotas(ns)
			hard := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(tc.hard), resource.DecimalSI)}
			q, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
				Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// What the controller writes first.
			q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
			if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The plugin sees quotas through the watch cache: wait for it.
			waitFor(t, 10*time.Second, "quota in cache", func() bool {
				qs, err := quotaStore{e.api.handlers[resourceQuotasGVR]}.Cached(ctx, ns)
				return err == nil && len(qs) == 1 && qs[0].Status.Used != nil
			})
			exceeded := fmt.Sprintf("exceeded quota: q, requested: pods=1, used: pods=%d, limited: pods=%d", tc.hard, tc.hard)
			var admitted atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range tc.creators {
				wg.Go(func() {
					<-start
					_, err := e.cs.CoreV1().Pods(ns).Create(ctx, testPod(fmt.Sprintf("p%d", i), ""), metav1.CreateOptions{})
					switch {
					case err == nil:
						admitted.Add(1)
					case apierrors.IsForbidden(err) && strings.Contains(err.Error(), exceeded):
					default:
						t.Errorf("create p%d: %v", i, err)
					}
				})
			}
			close(start)
			wg.Wait()
			if n := admitted.Load(); n != int64(tc.hard) {
				t.Fatalf("admitted %d pods, want %d", n, tc.hard)
			}
			got, err := quotas.Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if used := got.Status.Used[corev1.ResourcePods]; used.Value() != int64(tc.hard) {
				t.Fatalf("used pods = %s, want %d", used.String(), tc.hard)
			}
		})
	}
}

// BenchmarkQuotaPluginsNoQuota is what ResourceQuota and LimitRanger cost
// a pod create in a namespace with neither, their lookups answered by
// the server's real watch caches (30,000 pods of the density benchmark
// pay this each).
func BenchmarkQuotaPluginsNoQuota(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	// Other namespaces hold both, so the lookups are not of empty caches.
	for i := range 50 {
		ns := fmt.Sprintf("ns-%d", i)
		e.createNamespace(ns)
		if _, err := e.cs.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5")}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.cs.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "l"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	lrs := e.api.handlers[limitRangesGVR]
	lr := limitranger.New(func(ctx context.Context, ns string) ([]*corev1.LimitRange, error) {
		return cachedList[*corev1.LimitRange](ctx, lrs, ns)
	})
	rq := resourcequota.New(quotaStore{e.api.handlers[resourceQuotasGVR]}, e.api.clock)
	chain, err := admission.NewChain(lr, rq)
	if err != nil {
		b.Fatal(err)
	}
	pod := testPod("p", "")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
			Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: "default", Name: "p", Object: pod}
		if err := chain.Admit(ctx, a); err != nil {
			b.Fatal(err)
		}
		finish, err := chain.Allocate(ctx, a)
		if err != nil {
			b.Fatal(err)
		}
		if err := chain.Validate(ctx, a); err != nil {
			b.Fatal(err)
		}
		finish(true)
	}
}

// TestQuotaRefundOnFailedCreate: creating a pod that exists is refused
// after quota admission charged it; the charge is given back.
func TestQuotaRefundOnFailedCreate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	quotas := e.cs.CoreV1().ResourceQuotas("default")
	q, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "quota in cache", func() bool {
		qs, err := quotaStore{e.api.handlers[resourceQuotasGVR]}.Cached(ctx, "default")
		return err == nil && len(qs) == 1 && qs[0].Status.Used != nil
	})
	for i, want := range []func(error) bool{func(err error) bool { return err == nil }, apierrors.IsAlreadyExists, apierrors.IsAlreadyExists} {
		if _, err := e.cs.CoreV1().Pods("default").Create(ctx, testPod("p", ""), metav1.CreateOptions{}); !want(err) {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	got, err := quotas.Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[corev1.ResourcePods]; used.Value() != 1 {
		t.Fatalf("used pods = %s after one pod and two failed creates, want 1", used.String())
	}
}

// BenchmarkPodCreateWithQuota is BenchmarkPodCreate (32 concurrent
// creators) in a namespace whose quota tracks pods and cpu: what charging
// costs, and (quota-writes/op) how many quota status writes the
// namespace's batches make per create.
func BenchmarkPodCreateWithQuota(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	quotas := e.proto.CoreV1().ResourceQuotas("default")
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1000000"), corev1.ResourceRequestsCPU: resource.MustParse("1000000")}
	q, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0"), corev1.ResourceRequestsCPU: resource.MustParse("0")}}
	if q, err = quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, 10*time.Second, "quota in cache", func() bool {
		qs, err := quotaStore{e.api.handlers[resourceQuotasGVR]}.Cached(ctx, "default")
		return err == nil && len(qs) == 1 && qs[0].Status.Used != nil
	})
	w, err := quotas.Watch(ctx, metav1.ListOptions{ResourceVersion: q.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	pods := e.proto.CoreV1().Pods("default")
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := benchPod(next.Add(1))
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
			if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	final, err := quotas.Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	writes := 0
	for ev := range w.ResultChan() {
		writes++
		if ev.Object.(metav1.Object).GetResourceVersion() == final.ResourceVersion {
			break
		}
	}
	w.Stop()
	if used := final.Status.Used[corev1.ResourcePods]; used.Value() != next.Load() {
		b.Fatalf("used pods = %s after %d creates", used.String(), next.Load())
	}
	b.ReportMetric(float64(writes)/float64(next.Load()), "quota-writes/op")
}
