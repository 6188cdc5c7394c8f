package apiserver

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// TestBookmarkWatchersBeforeShutdown: a client-go watch of a quiet
// selector receives, over HTTP, a bookmark at the revision the server
// reached when BookmarkWatchers runs, although nothing it watches changed.
func TestBookmarkWatchersBeforeShutdown(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pods, err := e.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
		ResourceVersion: pods.ResourceVersion, AllowWatchBookmarks: true,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "quiet-node").String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last string
	for i := range 5 {
		cm, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, testConfigMap("cm-"+string(rune('a'+i)), nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last = cm.ResourceVersion
	}
	// A consistent read brings the pods cache to the store's revision.
	if _, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
	defer bcancel()
	e.api.BookmarkWatchers(bctx)
	select {
	case ev := <-w.ResultChan():
		m, err := meta.Accessor(ev.Object)
		if ev.Type != watch.Bookmark || err != nil || m.GetResourceVersion() < last || len(m.GetResourceVersion()) < len(last) {
			t.Fatalf("got %s %v, want a bookmark at %s or later", ev.Type, ev.Object, last)
		}
	case <-ctx.Done():
		t.Fatal("no bookmark")
	}
}
