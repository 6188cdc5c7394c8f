package deployment

import (
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Annotations and labels upstream uses; kubectl reads them.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	// PodTemplateHashLabel is appsv1.DefaultDeploymentUniqueLabelKey.
	PodTemplateHashLabel = appsv1.DefaultDeploymentUniqueLabelKey

	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	rollbackToAnnotation  = "deprecated.deployment.rollback.to"
)

// Progressing / Available condition reasons, as upstream's deploymentutil.
const (
	ReasonNewRSCreated       = "NewReplicaSetCreated"
	ReasonFoundNewRS         = "FoundNewReplicaSet"
	ReasonRSUpdated          = "ReplicaSetUpdated"
	ReasonNewRSAvailable     = "NewReplicaSetAvailable"
	ReasonTimedOut           = "ProgressDeadlineExceeded"
	ReasonPaused             = "DeploymentPaused"
	ReasonResumed            = "DeploymentResumed"
	ReasonFailedRSCreate     = "ReplicaSetCreateError"
	ReasonMinimumAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumUnavailable = "MinimumReplicasUnavailable"
)

func desired(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

func isRolling(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType
}

// fenceposts returns maxSurge (rounded up) and maxUnavailable (rounded
// down) for d, never both zero, as upstream's ResolveFenceposts.
func fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	def := intstr.FromString("25%")
	ms, mu := &def, &def
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			ms = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			mu = ru.MaxUnavailable
		}
	}
	n := int(desired(d))
	s, err := intstr.GetScaledValueFromIntOrPercent(ms, n, true)
	if err != nil {
		s = 0
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(mu, n, false)
	if err != nil {
		u = 0
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u)
}

func maxSurge(d *appsv1.Deployment) int32 {
	if !isRolling(d) {
		return 0
	}
	s, _ := fenceposts(d)
	return s
}

func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRolling(d) || desired(d) == 0 {
		return 0
	}
	_, u := fenceposts(d)
	return min(u, desired(d))
}

// equalIgnoreHash compares templates without the pod-template-hash label.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, PodTemplateHashLabel)
	delete(b.Labels, PodTemplateHashLabel)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

func revision(obj metav1.Object) int64 {
	v, err := strconv.ParseInt(obj.GetAnnotations()[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, revision(rs))
	}
	return m
}

func byCreation(rss []*appsv1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool {
		a, b := rss[i], rss[j]
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

// findNewRS returns the oldest ReplicaSet whose template is d's.
func findNewRS(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := append([]*appsv1.ReplicaSet(nil), rss...)
	byCreation(sorted)
	for _, rs := range sorted {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// oldRSs returns every ReplicaSet but newRS.
func oldRSs(rss []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			out = append(out, rs)
		}
	}
	return out
}

func activeRSs(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && rsReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func nonNil(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil {
			out = append(out, rs)
		}
	}
	return out
}

func sumSpec(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += rsReplicas(rs)
	}
	return n
}

func sumStatus(rss []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(&rs.Status)
		}
	}
	return n
}

func statusReplicas(s *appsv1.ReplicaSetStatus) int32  { return s.Replicas }
func statusReady(s *appsv1.ReplicaSetStatus) int32     { return s.ReadyReplicas }
func statusAvailable(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas }

func skipCopyAnnotation(k string) bool {
	switch k {
	case lastAppliedAnnotation, RevisionAnnotation, RevisionHistoryAnnotation,
		DesiredReplicasAnnotation, MaxReplicasAnnotation, rollbackToAnnotation:
		return true
	}
	return false
}

// setNewRSAnnotations copies d's annotations onto rs, raises its revision
// to newRevision (recording the old one in revision-history on a
// rollback) and, for an RS about to be created, sets the replica
// annotations. It reports whether anything changed.
func setNewRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if skipCopyAnnotation(k) || rs.Annotations[k] == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldInt, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldInt = 0
	}
	newInt, _ := strconv.ParseInt(newRevision, 10, 64)
	if oldInt < newInt {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			if h := rs.Annotations[RevisionHistoryAnnotation]; h == "" {
				rs.Annotations[RevisionHistoryAnnotation] = oldRevision
			} else {
				rs.Annotations[RevisionHistoryAnnotation] = strings.Join([]string{h, oldRevision}, ",")
			}
		}
	}
	if !exists && setReplicasAnnotations(rs, desired(d), desired(d)+maxSurge(d)) {
		changed = true
	}
	return changed
}

func setReplicasAnnotations(rs *appsv1.ReplicaSet, want, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{DesiredReplicasAnnotation: strconv.Itoa(int(want)), MaxReplicasAnnotation: strconv.Itoa(int(maxReplicas))} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, want, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(want)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

func intAnnotation(rs *appsv1.ReplicaSet, k string) (int32, bool) {
	v, ok := rs.Annotations[k]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// deploymentComplete: every desired replica is updated and available and
// nothing old is left.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := desired(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != (1<<31-1)
}

func isNotFoundOrConflict(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}
