package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// startWatch starts the node's own pod watch (PodWatchPerNode), replacing
// any previous one.
func (n *node) startWatch(parent context.Context) {
	ctx, cancel := context.WithCancel(n.as(parent))
	n.mu.Lock()
	if n.mu.stopWatch != nil {
		n.mu.stopWatch()
	}
	n.mu.stopWatch = cancel
	n.mu.Unlock()
	n.s.wg.Add(1)
	go func() {
		defer n.s.wg.Done()
		defer cancel()
		n.s.watchPods(ctx, n.name, n)
	}()
}

// relist reconciles one node's pods with a consistent list (PodWatchShared
// after a recovery).
func (n *node) relist(ctx context.Context) {
	for ctx.Err() == nil {
		list, err := n.s.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name})
		if err == nil {
			n.syncList(list.Items, list.ResourceVersion)
			return
		}
		n.s.cfg.Logger.Debug("relisting pods", "node", n.name, "err", err)
		select {
		case <-ctx.Done():
		case <-n.s.cfg.Clock.After(time.Second):
		}
	}
}

// watchPods lists and then watches pods until ctx is done, relisting when
// the watch's resourceVersion is gone. With one node it watches that node's
// pods (fieldSelector=spec.nodeName=<node>, as a kubelet does); with none,
// all bound pods, dispatched to this simulator's nodes by spec.nodeName.
func (s *Sim) watchPods(ctx context.Context, nodeName string, only *node) {
	selector := "spec.nodeName!="
	if only != nil {
		selector = "spec.nodeName=" + nodeName
	}
	pods := s.client.CoreV1().Pods("")
	backoff := time.Second
	sleep := func() {
		select {
		case <-ctx.Done():
		case <-s.cfg.Clock.After(backoff + time.Duration(rand.Int64N(int64(backoff)))):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
	for ctx.Err() == nil {
		// resourceVersion=0: served from the watch cache, as the kubelet's
		// reflector asks for its first list.
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: "0"})
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.Logger.Debug("listing pods", "selector", selector, "err", err)
				sleep()
			}
			continue
		}
		s.syncPods(list.Items, list.ResourceVersion, only)
		rv := list.ResourceVersion
		for ctx.Err() == nil {
			timeout := int64(300 + rand.IntN(300)) // the reflector's 5–10 min
			w, err := pods.Watch(ctx, metav1.ListOptions{
				FieldSelector: selector, ResourceVersion: rv,
				AllowWatchBookmarks: true, TimeoutSeconds: &timeout,
			})
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					break
				}
				if ctx.Err() == nil {
					s.cfg.Logger.Debug("watching pods", "selector", selector, "err", err)
					sleep()
				}
				continue
			}
			newRV, gone := s.consume(ctx, w, only)
			w.Stop()
			if newRV != "" {
				rv = newRV
				backoff = time.Second
			}
			if gone {
				break
			}
		}
	}
}

// consume delivers a watch's events until it ends. It returns the last
// resourceVersion seen and whether the server said that version is gone.
func (s *Sim) consume(ctx context.Context, w watch.Interface, only *node) (rv string, gone bool) {
	for {
		select {
		case <-ctx.Done():
			return rv, false
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, false
			}
			switch ev.Type {
			case watch.Error:
				if st, ok := ev.Object.(*metav1.Status); ok && (st.Code == http.StatusGone || st.Reason == metav1.StatusReasonExpired) {
					return rv, true
				}
				s.cfg.Logger.Debug("pod watch error", "err", apierrors.FromObject(ev.Object))
				return rv, false
			case watch.Bookmark:
				if pod, ok := ev.Object.(*corev1.Pod); ok {
					rv = pod.ResourceVersion
				}
				continue
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				s.cfg.Logger.Debug("unexpected object in pod watch", "type", fmt.Sprintf("%T", ev.Object))
				continue
			}
			rv = pod.ResourceVersion
			n := only
			if n == nil {
				if n = s.byName[pod.Spec.NodeName]; n == nil {
					continue
				}
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				n.onPod(pod)
			case watch.Deleted:
				n.onPodDeleted(pod.UID)
			}
		}
	}
}

// syncPods reconciles a full list with one node, or with every node.
func (s *Sim) syncPods(items []corev1.Pod, rv string, only *node) {
	if only != nil {
		only.syncList(items, rv)
		return
	}
	byNode := map[*node][]corev1.Pod{}
	for _, p := range items {
		if n := s.byName[p.Spec.NodeName]; n != nil {
			byNode[n] = append(byNode[n], p)
		}
	}
	for _, n := range s.nodes {
		n.syncList(byNode[n], rv)
	}
}
