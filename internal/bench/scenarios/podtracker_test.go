package scenarios

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes/fake"
)

// noWatchList makes informers list then watch: the fake clientset does not
// stream a watch-list's initial events, which the real server does.
func noWatchList(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
}

// TestPodTracker follows a pod from creation to Running and deletion; the
// package's goleak check then proves close stopped the informer.
func TestPodTracker(t *testing.T) {
	noWatchList(t)
	c := fake.NewClientset()
	tr := newPodTracker(c, "ns", "app=x", time.Now())
	if err := tr.run(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	pods := c.CoreV1().Pods("ns")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"}}}
	if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Spec.NodeName, p.Status.Phase = "n", corev1.PodRunning
	if _, err := pods.Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(t.Context(), "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delete event", func() bool { _, _, _, deleted := tr.counts(); return deleted == 1 })
	if seen, scheduled, running, _ := tr.counts(); seen != 1 || scheduled != 1 || running != 1 {
		t.Errorf("seen %d, scheduled %d, running %d; want 1 each", seen, scheduled, running)
	}
	tr.close()
	tr.close() // a second close does nothing
}

// TestPodTrackerNotSynced: run on an ended context fails and leaves
// nothing running.
func TestPodTrackerNotSynced(t *testing.T) {
	noWatchList(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tr := newPodTracker(fake.NewClientset(), "ns", "", time.Now())
	if err := tr.run(ctx); err == nil {
		t.Fatal("run on an ended context succeeded")
	}
}
