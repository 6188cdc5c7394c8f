package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func (dc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ds, err := dc.dsLister.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		dc.exp.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || selector.Empty() {
		return nil // an invalid or select-all selector: nothing safe to do
	}
	nodes, err := dc.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	// By name, so rolling updates walk the nodes in a stable order.
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	all, err := podcontrol.PodsForOwner(dc.podInf, ns, ds.UID)
	if err != nil {
		return err
	}
	// Terminating pods stay in: a node whose daemon pod is still
	// terminating gets its replacement only once it is gone (host ports
	// and the like), as upstream.
	pods, err := podcontrol.Claim(ctx, podcontrol.NewRefManager(ds, controllerKind, selector,
		dc.Client.AppsV1().DaemonSets(ns).Get, dc.Client.CoreV1().Pods(ns).Patch), all)
	if err != nil {
		return err
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byNode[targetNode(p)] = append(byNode[targetNode(p)], p)
	}
	hash := templateHash(ds)
	template := newPodTemplate(ds, hash)

	var manageErr error
	if dc.exp.Satisfied(key) && ds.DeletionTimestamp == nil {
		manageErr = dc.manage(ctx, ds, key, template, nodes, byNode, hash)
	}
	if err := dc.updateStatus(ctx, ds, template, nodes, byNode, hash); err != nil {
		return errors.Join(manageErr, err)
	}
	return manageErr
}

// manage creates missing daemon pods, deletes surplus and misplaced ones,
// and advances a rolling update.
func (dc *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, key string, template *corev1.PodTemplateSpec,
	nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string) error {
	var create []string
	var del []*corev1.Pod
	seen := map[string]bool{}
	for _, node := range nodes {
		seen[node.Name] = true
		run, keep := shouldRun(template, node)
		pods := byNode[node.Name]
		switch {
		case run && len(pods) == 0:
			create = append(create, node.Name)
		case keep:
			var live []*corev1.Pod
			for _, p := range alive(pods) {
				if p.Status.Phase == corev1.PodFailed {
					del = append(del, p) // replaced on a later sync
					continue
				}
				live = append(live, p)
			}
			if len(live) > 1 {
				del = append(del, dc.duplicates(ds, live, hash)...)
			}
		default:
			del = append(del, alive(pods)...)
		}
	}
	for node, pods := range byNode {
		if !seen[node] {
			del = append(del, alive(pods)...) // node gone, or pod never pinned
		}
	}
	if len(create) == 0 && len(del) == 0 {
		if surge := maxSurge(ds, nodes, template); surge > 0 {
			create = dc.surgeNodes(ds, nodes, byNode, hash, template, surge)
		} else {
			del = dc.rollingUpdateVictims(ds, nodes, byNode, hash)
		}
	}
	create = create[:min(len(create), burstReplicas)]
	del = del[:min(len(del), burstReplicas)]

	delKeys := make([]string, len(del))
	for i, p := range del {
		delKeys[i], _ = reconcile.Key(p)
	}
	dc.exp.Expect(key, len(create), delKeys)
	ref := podcontrol.ControllerRef(ds, controllerKind)
	var next sync.Mutex
	i := 0
	ok, createErr := podcontrol.SlowStartBatch(len(create), podcontrol.SlowStartInitialBatch, func() error {
		next.Lock()
		node := create[i]
		i++
		next.Unlock()
		pod := podcontrol.PodFromTemplate(template, ds, ref)
		pinToNode(&pod.Spec, node)
		_, err := podcontrol.CreatePod(ctx, dc.Client, dc.recorder, ds, pod)
		if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return err
	})
	for range len(create) - ok {
		dc.exp.CreationObserved(key)
	}
	return errors.Join(createErr, podcontrol.DeletePods(ctx, dc.Client, dc.recorder, ds, del, dc.exp, key))
}

// rollingUpdateVictims picks old pods to delete, at most maxUnavailable
// minus what is already unavailable.
func (dc *Controller) rollingUpdateVictims(ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string) []*corev1.Pod {
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return nil
	}
	desired := 0
	unavailable := 0
	var old []*corev1.Pod
	now := dc.Clock.Now()
	template := newPodTemplate(ds, hash)
	for _, node := range nodes {
		if run, _ := shouldRun(template, node); !run {
			continue
		}
		desired++
		pods := alive(byNode[node.Name])
		if len(pods) == 0 {
			unavailable++
			continue
		}
		p := pods[0]
		if !podcontrol.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) {
			unavailable++
		}
		if p.Labels[RevisionHashLabel] != hash {
			old = append(old, p)
		}
	}
	maxUnavailable := intstr.FromInt32(1)
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable = *ru.MaxUnavailable
	}
	budget, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, desired, true)
	if err != nil {
		budget = 1
	}
	budget = max(budget, 1) - unavailable
	// Unavailable old pods first: replacing them costs no availability.
	sort.SliceStable(old, func(i, j int) bool {
		return !podcontrol.IsPodAvailable(old[i], ds.Spec.MinReadySeconds, now) && podcontrol.IsPodAvailable(old[j], ds.Spec.MinReadySeconds, now)
	})
	var out []*corev1.Pod
	for _, p := range old {
		if !podcontrol.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) {
			out = append(out, p)
			continue
		}
		if budget <= 0 {
			break
		}
		out = append(out, p)
		budget--
	}
	return out
}

func (dc *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, template *corev1.PodTemplateSpec,
	nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string) error {
	var st appsv1.DaemonSetStatus
	now := dc.Clock.Now()
	for _, node := range nodes {
		run, _ := shouldRun(template, node)
		pods := alive(byNode[node.Name])
		if run {
			st.DesiredNumberScheduled++
		}
		if len(pods) == 0 {
			continue
		}
		if !run {
			st.NumberMisscheduled++
			continue
		}
		st.CurrentNumberScheduled++
		p := pods[0]
		if podcontrol.IsPodReady(p) {
			st.NumberReady++
			if podcontrol.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
		if p.Labels[RevisionHashLabel] == hash {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = max(st.DesiredNumberScheduled-st.NumberAvailable, 0)
	st.ObservedGeneration = ds.Generation
	st.CollisionCount = ds.Status.CollisionCount
	st.Conditions = ds.Status.Conditions
	if statusEqual(ds.Status, st) {
		return nil
	}
	cp := ds.DeepCopy()
	cp.Status = st
	if _, err := dc.Client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return nil
}

func statusEqual(a, b appsv1.DaemonSetStatus) bool {
	return a.DesiredNumberScheduled == b.DesiredNumberScheduled && a.CurrentNumberScheduled == b.CurrentNumberScheduled &&
		a.NumberMisscheduled == b.NumberMisscheduled && a.NumberReady == b.NumberReady && a.NumberAvailable == b.NumberAvailable &&
		a.NumberUnavailable == b.NumberUnavailable && a.UpdatedNumberScheduled == b.UpdatedNumberScheduled &&
		a.ObservedGeneration == b.ObservedGeneration
}

// alive drops pods being deleted.
func alive(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}
