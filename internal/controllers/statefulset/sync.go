package statefulset

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
)

// Labels on a set's pods, as upstream.
const (
	PodNameLabel      = appsv1.StatefulSetPodNameLabel
	PodIndexLabel     = appsv1.PodIndexLabel
	RevisionHashLabel = appsv1.ControllerRevisionHashLabelKey
)

func (sc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	set, err := sc.setLister.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		return nil
	}
	all, err := podcontrol.PodsForOwner(sc.podInf, ns, set.UID)
	if err != nil {
		return err
	}
	pods, err := podcontrol.Claim(ctx, podcontrol.NewRefManager(set, controllerKind, selector,
		sc.Client.AppsV1().StatefulSets(ns).Get, sc.Client.CoreV1().Pods(ns).Patch), all)
	if err != nil {
		return err
	}
	updateRevision := revisionName(set)
	currentRevision := set.Status.CurrentRevision
	if currentRevision == "" {
		currentRevision = updateRevision
	}
	var manageErr error
	if set.DeletionTimestamp == nil {
		manageErr = sc.manage(ctx, set, pods, updateRevision)
	}
	if err := sc.updateStatus(ctx, set, pods, currentRevision, updateRevision); err != nil {
		return err
	}
	if manageErr == nil && set.Spec.MinReadySeconds > 0 {
		// Availability changes with time alone.
		sc.Queue.AddAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second)
	}
	return manageErr
}

func revisionName(set *appsv1.StatefulSet) string {
	return set.Name + "-" + podcontrol.ComputeHash(&set.Spec.Template, set.Status.CollisionCount)
}

func ordinalStart(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// ordinal parses "<set>-<n>"; -1 when pod is not one of set's identities.
func ordinal(set *appsv1.StatefulSet, pod *corev1.Pod) int {
	rest, ok := strings.CutPrefix(pod.Name, set.Name+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return -1
	}
	return n
}

func healthy(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podcontrol.IsPodReady(p)
}

// manage takes at most one ordered step (OrderedReady) or every step
// (Parallel) toward the desired pods, then one rolling-update step.
func (sc *Controller) manage(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, updateRevision string) error {
	start := ordinalStart(set)
	end := start + int(ptr.Deref(set.Spec.Replicas, 1))
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	byOrd := map[int]*corev1.Pod{}
	var condemned []*corev1.Pod
	for _, p := range pods {
		o := ordinal(set, p)
		if o >= start && o < end && byOrd[o] == nil {
			byOrd[o] = p
		} else {
			condemned = append(condemned, p)
		}
	}

	for o := start; o < end; o++ {
		p := byOrd[o]
		switch {
		case p == nil:
			if err := sc.createPod(ctx, set, o, updateRevision); err != nil {
				return err
			}
			if ordered {
				return nil
			}
		case p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp == nil:
			if err := sc.deletePod(ctx, set, p); err != nil {
				return err
			}
			if ordered {
				return nil
			}
		case ordered && !healthy(p):
			return nil // wait for it before touching the next ordinal
		}
	}

	// Surplus pods, highest ordinal first.
	sort.Slice(condemned, func(i, j int) bool { return ordinal(set, condemned[i]) > ordinal(set, condemned[j]) })
	for i, p := range condemned {
		if p.DeletionTimestamp != nil {
			if ordered {
				return nil
			}
			continue
		}
		if ordered {
			// Only the first condemned pod may be unhealthy.
			for _, q := range condemned[i+1:] {
				if !healthy(q) {
					return nil
				}
			}
		}
		if err := sc.deletePod(ctx, set, p); err != nil {
			return err
		}
		if ordered {
			return nil
		}
	}

	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return nil
	}
	partition := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = int(*ru.Partition)
	}
	for o := end - 1; o >= start+partition; o-- {
		p := byOrd[o]
		if p == nil {
			return nil
		}
		if p.Labels[RevisionHashLabel] != updateRevision && p.DeletionTimestamp == nil {
			return sc.deletePod(ctx, set, p)
		}
		if !healthy(p) {
			return nil
		}
	}
	return nil
}

func (sc *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, o int, revision string) error {
	name := fmt.Sprintf("%s-%d", set.Name, o)
	if err := sc.ensureClaims(ctx, set, o); err != nil {
		return err
	}
	pod := podcontrol.PodFromTemplate(&set.Spec.Template, set, podcontrol.ControllerRef(set, controllerKind))
	pod.Name, pod.GenerateName = name, ""
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[PodNameLabel] = name
	pod.Labels[PodIndexLabel] = strconv.Itoa(o)
	pod.Labels[RevisionHashLabel] = revision
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	for _, t := range set.Spec.VolumeClaimTemplates {
		vol := corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(set, t.Name, o)},
		}}
		replaced := false
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == t.Name {
				pod.Spec.Volumes[i], replaced = vol, true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		}
	}
	_, err := podcontrol.CreatePod(ctx, sc.Client, sc.recorder, set, pod)
	if apierrors.IsAlreadyExists(err) {
		return nil // the cache will show it
	}
	return err
}

func (sc *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod) error {
	err := podcontrol.DeletePod(ctx, sc.Client, sc.recorder, set, p.Namespace, p.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func claimName(set *appsv1.StatefulSet, template string, o int) string {
	return fmt.Sprintf("%s-%s-%d", template, set.Name, o)
}

// ensureClaims creates the PVCs of ordinal o that do not exist yet.
func (sc *Controller) ensureClaims(ctx context.Context, set *appsv1.StatefulSet, o int) error {
	for _, t := range set.Spec.VolumeClaimTemplates {
		name := claimName(set, t.Name, o)
		if _, err := sc.pvcs.PersistentVolumeClaims(set.Namespace).Get(name); err == nil {
			continue
		}
		lbls := map[string]string{}
		for k, v := range t.Labels {
			lbls[k] = v
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				lbls[k] = v
			}
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: lbls, Annotations: t.Annotations},
			Spec:       *t.Spec.DeepCopy(),
		}
		_, err := sc.Client.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			sc.recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s-%d in StatefulSet %s failed error: %v", name, set.Name, o, set.Name, err)
			return fmt.Errorf("creating claim %s/%s: %w", set.Namespace, name, err)
		}
		if err == nil {
			sc.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Claim %s Pod %s-%d in StatefulSet %s success", name, set.Name, o, set.Name)
		}
	}
	return nil
}

func (sc *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, currentRevision, updateRevision string) error {
	st := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CollisionCount:     set.Status.CollisionCount,
		Conditions:         set.Status.Conditions,
		CurrentRevision:    currentRevision,
		UpdateRevision:     updateRevision,
	}
	now := sc.Clock.Now()
	for _, p := range pods {
		if ordinal(set, p) < 0 {
			continue
		}
		st.Replicas++
		if healthy(p) {
			st.ReadyReplicas++
			if podcontrol.IsPodAvailable(p, set.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		switch p.Labels[RevisionHashLabel] {
		case updateRevision:
			st.UpdatedReplicas++
			if currentRevision == updateRevision {
				st.CurrentReplicas++
			}
		case currentRevision:
			st.CurrentReplicas++
		}
	}
	// The update is complete: the update revision becomes current.
	if st.UpdatedReplicas == ptr.Deref(set.Spec.Replicas, 1) && st.Replicas == st.UpdatedReplicas {
		st.CurrentRevision = updateRevision
		st.CurrentReplicas = st.UpdatedReplicas
	}
	if statusEqual(set.Status, st) {
		return nil
	}
	cp := set.DeepCopy()
	cp.Status = st
	if _, err := sc.Client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	return nil
}

func statusEqual(a, b appsv1.StatefulSetStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.Replicas == b.Replicas && a.ReadyReplicas == b.ReadyReplicas &&
		a.AvailableReplicas == b.AvailableReplicas && a.CurrentReplicas == b.CurrentReplicas && a.UpdatedReplicas == b.UpdatedReplicas &&
		a.CurrentRevision == b.CurrentRevision && a.UpdateRevision == b.UpdateRevision
}
