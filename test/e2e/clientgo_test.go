package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func mkNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// runSuffix is a short random suffix for names a test creates on the shared
// server, so that it can run again there (go test -count=2).
func runSuffix() string {
	return strconv.FormatUint(rand.Uint64()%(36*36*36*36*36), 36)
}

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "e2e"}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}},
		},
	}
}

func TestTypedClientSemantics(t *testing.T) {
	ctx := context.Background()
	c := shared.protoClient(t)
	ns := "typed-" + runSuffix()
	mkNamespace(t, c, ns)
	pods := c.CoreV1().Pods(ns)

	// `myriad up` runs a scheduler; p1 names one that does not exist so
	// that nothing but this test writes it.
	p1 := testPod("p1", "")
	p1.Spec.SchedulerName = "e2e-nobody"
	created, err := pods.Create(ctx, p1, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("server did not fill metadata: %+v", created.ObjectMeta)
	}
	if created.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Fatalf("defaults not applied: restartPolicy=%q dnsPolicy=%q", created.Spec.RestartPolicy, created.Spec.DNSPolicy)
	}
	if _, err := pods.Create(ctx, testPod("p1", ""), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}

	// A stale update gets 409 with upstream's message.
	stale := created.DeepCopy()
	created.Labels["v"] = "1"
	updated, err := pods.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	stale.Labels["v"] = "2"
	if _, err := pods.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: want Conflict, got %v", err)
	}

	// A read with no resourceVersion sees the latest write.
	got, err := pods.Get(ctx, "p1", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != updated.ResourceVersion {
		t.Fatalf("get after update: rv %v vs %v, err %v", got.ResourceVersion, updated.ResourceVersion, err)
	}

	// Validation errors are 422 with field paths.
	bad := testPod("Bad_Name", "")
	_, err = pods.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("invalid name: want Invalid, got %v", err)
	}
	noImage := testPod("noimage", "")
	noImage.Spec.Containers[0].Image = ""
	_, err = pods.Create(ctx, noImage, metav1.CreateOptions{})
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Details == nil || len(st.Status().Details.Causes) == 0 || st.Status().Details.Causes[0].Field != "spec.containers[0].image" {
		t.Fatalf("missing image: want a cause on spec.containers[0].image, got %v", err)
	}

	// Field selectors: pods on a node.
	for i := 0; i < 3; i++ {
		if _, err := pods.Create(ctx, testPod(fmt.Sprintf("on-a-%d", i), "node-a"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("list by node: %d items, err %v", len(list.Items), err)
	}
	if _, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unknown field selector: want BadRequest, got %v", err)
	}

	// Pagination walks everything exactly once.
	seen := map[string]bool{}
	opts := metav1.ListOptions{Limit: 2}
	for {
		page, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatalf("page: %v", err)
		}
		for _, p := range page.Items {
			if seen[p.Name] {
				t.Fatalf("%s seen twice", p.Name)
			}
			seen[p.Name] = true
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if len(seen) != 4 {
		t.Fatalf("paginated list saw %d pods, want 4", len(seen))
	}

	// Graceful deletion of a pod bound to a node marks it; grace 0 removes it.
	if err := pods.Delete(ctx, "on-a-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	marked, err := pods.Get(ctx, "on-a-0", metav1.GetOptions{})
	if err != nil || marked.DeletionTimestamp == nil || marked.DeletionGracePeriodSeconds == nil || *marked.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("graceful delete: %+v err %v", marked.ObjectMeta, err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "on-a-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "on-a-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after force delete: want NotFound, got %v", err)
	}

	// Binding assigns a node once.
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-c"}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("second bind: want Conflict, got %v", err)
	}
}

func TestWatchSemantics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := shared.protoClient(t)
	ns := "watching-" + runSuffix()
	mkNamespace(t, c, ns)
	cms := c.CoreV1().ConfigMaps(ns)
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := 0; i < 5; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	last := int64(0)
	for i := 0; i < 5; i++ {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Fatalf("event %d: %s", i, ev.Type)
			}
			rv, _ := strconv.ParseInt(ev.Object.(*corev1.ConfigMap).ResourceVersion, 10, 64)
			if rv <= last {
				t.Fatalf("resourceVersions not increasing: %d after %d", rv, last)
			}
			last = rv
		case <-ctx.Done():
			t.Fatal("timed out waiting for events")
		}
	}

	// A watch from a compacted or unknown-old revision gets 410 Gone (as
	// an error event or as the response, as upstream).
	w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err == nil {
		select {
		case ev := <-w2.ResultChan():
			st, ok := ev.Object.(*metav1.Status)
			if ev.Type != watch.Error || !ok || st.Code != 410 {
				// Revision 1 may still be in the window on a fresh store; that is fine too.
				if ev.Type == watch.Error {
					t.Fatalf("watch from rv 1: unexpected error event %+v", ev.Object)
				}
			}
		case <-time.After(2 * time.Second):
		}
		w2.Stop()
	} else if !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from rv 1: %v", err)
	}

	// Field-selected watch on one name (kubectl get x -w).
	w3, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "a").String(), ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Stop()
	if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b0"}, Data: map[string]string{"x": "y"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	first.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w3.ResultChan():
		if ev.Type != watch.Modified || ev.Object.(*corev1.ConfigMap).Name != "a" {
			t.Fatalf("selected watch got %s %s", ev.Type, ev.Object.(*corev1.ConfigMap).Name)
		}
	case <-ctx.Done():
		t.Fatal("timed out")
	}
}

func TestInformersAndWatchList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := shared.protoClient(t)
	ns := "informers-" + runSuffix()
	mkNamespace(t, c, ns)
	for i := 0; i < 20; i++ {
		if _, err := c.CoreV1().Pods(ns).Create(ctx, testPod(fmt.Sprintf("p%d", i), "node-i"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The WatchList feature (sendInitialEvents + the initial-events-end
	// bookmark) is what client-go uses when it is enabled; t.Setenv turns it on.
	t.Setenv("KUBE_FEATURE_WatchListClient", "true")
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	var mu sync.Mutex
	adds := map[string]bool{}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		mu.Lock()
		adds[obj.(*corev1.Pod).Name] = true
		mu.Unlock()
	}})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, testPod("late", "node-i"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(adds) == 21
	})
	cancel()
	factory.Shutdown()
}

func TestLeaderElection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := shared.client(t)
	mkNamespace(t, c, "election")
	elected := make(chan string, 2)
	run := func(ctx context.Context, id string) {
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: "e2e-leader", Namespace: "election"},
			Client:     c.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		}
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, ReleaseOnCancel: true,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { elected <- id },
				OnStoppedLeading: func() {},
			},
		})
	}
	ctxA, stopA := context.WithCancel(ctx)
	go run(ctxA, "a")
	if got := <-elected; got != "a" {
		t.Fatalf("first leader %q", got)
	}
	go run(ctx, "b")
	start := time.Now()
	stopA() // releases the lease
	select {
	case got := <-elected:
		if got != "b" {
			t.Fatalf("second leader %q", got)
		}
		t.Logf("standby took over %v after release", time.Since(start))
	case <-ctx.Done():
		t.Fatal("standby never led")
	}
	lease, err := c.CoordinationV1().Leases("election").Get(ctx, "e2e-leader", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "b" {
		t.Fatalf("lease holder: %+v err %v", lease, err)
	}
}
