package controlplane

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// BenchmarkLoopback is the per-request cost of an in-process component's
// call through each loopback transport: the whole chain (authentication,
// flow control, audit, admission) and the store, client-go's encoding and
// decoding (protobuf, as the controllers and the scheduler speak), and
// the transport. B/op and allocs count the server's side too: one process.
//
//	go test ./internal/controlplane -run '^$' -bench Loopback -benchtime 2000x
func BenchmarkLoopback(b *testing.B) {
	for _, transport := range []string{LoopbackTLS, LoopbackMemory} {
		b.Run(transport, func(b *testing.B) {
			rc, stop := startWithComponent(b, transport, pki.Identity{User: "bench", Groups: []string{"system:masters"}})
			defer stop()
			rc = rest.CopyConfig(rc)
			rc.ContentType = runtime.ContentTypeProtobuf
			rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			ns := "default"
			if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "bench"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			b.Run("GetPod", func(b *testing.B) {
				b.ReportAllocs()
				defer benchutil.ReportCPU(b)()
				for b.Loop() {
					if _, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("CreateConfigMap", func(b *testing.B) {
				b.ReportAllocs()
				defer benchutil.ReportCPU(b)()
				i := 0
				for b.Loop() {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", i)}, Data: map[string]string{"k": "v"}}
					if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			// One update and the watch event it causes: minus
			// UpdateConfigMap, the cost of delivering one event.
			cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			update := func(i int) {
				cm.Data = map[string]string{"i": fmt.Sprint(i)}
				if cm, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("UpdateConfigMap", func(b *testing.B) {
				b.ReportAllocs()
				defer benchutil.ReportCPU(b)()
				i := 0
				for b.Loop() {
					update(i)
					i++
				}
			})
			// One update and its event on each of watchers watches: minus
			// UpdateConfigMap and divided by watchers, the cost of
			// delivering one watch event.
			const watchers = 10
			b.Run(fmt.Sprintf("UpdateConfigMapWith%dWatchers", watchers), func(b *testing.B) {
				var ws []watch.Interface
				for range watchers {
					w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=watched", ResourceVersion: cm.ResourceVersion})
					if err != nil {
						b.Fatal(err)
					}
					defer w.Stop()
					ws = append(ws, w)
				}
				b.ReportAllocs()
				defer benchutil.ReportCPU(b)()
				i := 0
				for b.Loop() {
					update(i)
					i++
					for _, w := range ws {
						select {
						case ev := <-w.ResultChan():
							if ev.Type != watch.Modified {
								b.Fatalf("event %s %v", ev.Type, ev.Object)
							}
						case <-time.After(10 * time.Second):
							b.Fatal("no event")
						}
					}
				}
			})
		})
	}
}
