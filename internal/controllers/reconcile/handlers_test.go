package reconcile

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestAddIndexersTwice: the second controller manager run on the same
// shared informer adds its indexes again without the conflict client-go
// reports, and the index keeps working.
func TestAddIndexersTwice(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
	byNode := cache.Indexers{"node": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}
	for run := range 2 {
		if err := AddIndexers(inf, byNode); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	if err := inf.AddIndexers(byNode); err == nil {
		t.Fatal("client-go accepted a second indexer of the same name: AddIndexers is not needed")
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	if err := inf.GetIndexer().Add(p); err != nil {
		t.Fatal(err)
	}
	if got, err := inf.GetIndexer().ByIndex("node", "n1"); err != nil || len(got) != 1 {
		t.Fatalf("ByIndex = %v, %v", got, err)
	}
}
