package plugins

import (
	"fmt"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// Upstream's VolumeBinding reasons and messages, verbatim.
const (
	ReasonBindConflict  = "node(s) didn't find available persistent volumes to bind"
	ReasonNodeConflict  = "node(s) had volume node affinity conflict"
	ReasonPVNotExist    = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	msgUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
	noProvisioner       = "kubernetes.io/no-provisioner"
)

// VolumeLister is what VolumeBinding reads: the scheduler's caches of
// claims, volumes and classes. Safe for concurrent use; the objects are
// shared and must not be changed.
type VolumeLister interface {
	// Claim returns the claim, nil when it does not exist.
	Claim(namespace, name string) (*v1.PersistentVolumeClaim, error)
	// Volume returns the volume, nil when it does not exist.
	Volume(name string) (*v1.PersistentVolume, error)
	// Volumes lists the volumes of a class ("" for none).
	Volumes(class string) ([]*v1.PersistentVolume, error)
	// Class returns the class, nil when it does not exist.
	Class(name string) (*storagev1.StorageClass, error)
}

// volumeState is what PreFilterVolumes found for one pod: the volumes of
// its bound claims (whose node affinity must match), and its unbound
// WaitForFirstConsumer claims with the candidate volumes and the class of
// each, to match per node.
type volumeState struct {
	bound   []*v1.PersistentVolume
	pvMiss  bool
	delayed []*v1.PersistentVolumeClaim // smallest request first
	classes map[string]*storagev1.StorageClass
	byClass map[string][]*v1.PersistentVolume
}

// PreFilterVolumes is upstream's VolumeBinding PreFilter: it reads the
// pod's claims and fails the pod when one is missing, being deleted, or
// unbound with immediate binding (the PV controller binds those; the pod
// waits). The search calls it only for pods with claims.
func PreFilterVolumes(st *State, l VolumeLister) *framework.Status {
	pod := st.Pod.Pod
	vs := &volumeState{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var name string
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			name = ephemeral.VolumeClaimName(pod, v)
		default:
			continue
		}
		pvc, err := l.Claim(pod.Namespace, name)
		if err != nil {
			return framework.NewStatus(framework.Error, err.Error())
		}
		if pvc == nil {
			if v.Ephemeral != nil {
				return unresolvable(fmt.Sprintf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name))
			}
			return unresolvable(fmt.Sprintf("persistentvolumeclaim %q not found", name))
		}
		if v.Ephemeral != nil {
			if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
				return unresolvable(err.Error())
			}
		}
		if pvc.DeletionTimestamp != nil {
			return unresolvable(fmt.Sprintf("persistentvolumeclaim %q is being deleted", pvc.Name))
		}
		if bound, err := vs.addClaim(pvc, l); err != nil {
			return framework.NewStatus(framework.Error, err.Error())
		} else if !bound {
			return unresolvable(msgUnboundImmediate)
		}
	}
	// Smallest request first, as upstream, so each claim takes the
	// smallest volume left for it.
	sort.SliceStable(vs.delayed, func(i, j int) bool {
		a := vs.delayed[i].Spec.Resources.Requests[v1.ResourceStorage]
		b := vs.delayed[j].Spec.Resources.Requests[v1.ResourceStorage]
		return a.Cmp(b) < 0
	})
	st.volumes = vs
	return nil
}

// addClaim records one claim; it reports false for an unbound claim of
// immediate binding.
func (vs *volumeState) addClaim(pvc *v1.PersistentVolumeClaim, l VolumeLister) (bool, error) {
	if name := pvc.Spec.VolumeName; name != "" {
		pv, err := l.Volume(name)
		if err != nil {
			return false, err
		}
		if pv == nil {
			vs.pvMiss = true
		} else {
			vs.bound = append(vs.bound, pv)
		}
		return true, nil
	}
	className := volumehelpers.GetPersistentVolumeClaimClass(pvc)
	if className == "" {
		return false, nil
	}
	class, err := l.Class(className)
	if err != nil {
		return false, err
	}
	if class == nil || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return false, nil
	}
	if vs.classes == nil {
		vs.classes = map[string]*storagev1.StorageClass{}
		vs.byClass = map[string][]*v1.PersistentVolume{}
	}
	if _, ok := vs.classes[className]; !ok {
		pvs, err := l.Volumes(className)
		if err != nil {
			return false, err
		}
		vs.classes[className], vs.byClass[className] = class, pvs
	}
	vs.delayed = append(vs.delayed, pvc)
	return true, nil
}

func unresolvable(msg string) *framework.Status {
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, msg)
}

// VolumeBindings are the volume decisions for a pod on one node: volumes
// to pre-bind to claims, and claims to hand to their provisioner with the
// node selected.
type VolumeBindings struct {
	Static    []StaticBinding
	Provision []*v1.PersistentVolumeClaim
}

// StaticBinding pairs a claim with the volume chosen for it.
type StaticBinding struct {
	PV  *v1.PersistentVolume
	PVC *v1.PersistentVolumeClaim
}

// Empty reports whether there is nothing to bind.
func (b *VolumeBindings) Empty() bool { return b == nil || len(b.Static)+len(b.Provision) == 0 }

// filter is upstream's VolumeBinding Filter.
func (vs *volumeState) filter(n *framework.NodeInfo) *framework.Status {
	var reasons []string
	if vs.pvMiss {
		reasons = append(reasons, ReasonPVNotExist)
	}
	for _, pv := range vs.bound {
		if volumehelpers.CheckNodeAffinity(pv, n.Node.Labels) != nil {
			reasons = append(reasons, ReasonNodeConflict)
			break
		}
	}
	if len(vs.delayed) > 0 {
		if _, ok := vs.decide(n.Node); !ok {
			reasons = append(reasons, ReasonBindConflict)
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
}

// decide matches the unbound WaitForFirstConsumer claims on node: each
// takes the smallest fitting Available volume whose node affinity the
// node satisfies (a volume pre-bound to it first), not taken by another
// of the pod's claims; a claim without one needs a class that provisions
// (not kubernetes.io/no-provisioner) and allows the node's topology. A
// claim whose node was already selected fits only that node.
func (vs *volumeState) decide(node *v1.Node) (*VolumeBindings, bool) {
	b := &VolumeBindings{}
	var chosen map[string]*v1.PersistentVolume
	for _, pvc := range vs.delayed {
		if sel, ok := pvc.Annotations[volumehelpers.AnnSelectedNode]; ok {
			if sel != node.Name {
				return nil, false
			}
			// Provisioning already under way for this node.
			continue
		}
		className := volumehelpers.GetPersistentVolumeClaimClass(pvc)
		pv, err := volumehelpers.FindMatchingVolume(pvc, vs.byClass[className], node, chosen, true, true)
		if err != nil {
			return nil, false
		}
		if pv != nil {
			if chosen == nil {
				chosen = map[string]*v1.PersistentVolume{}
			}
			chosen[pv.Name] = pv
			b.Static = append(b.Static, StaticBinding{PV: pv, PVC: pvc})
			continue
		}
		class := vs.classes[className]
		if class.Provisioner == "" || class.Provisioner == noProvisioner || !matchTopology(class.AllowedTopologies, node.Labels) {
			return nil, false
		}
		b.Provision = append(b.Provision, pvc)
	}
	return b, true
}

// matchTopology is upstream's MatchTopologySelectorTerms: no terms match
// every node; otherwise one term must match, each of its expressions
// naming a label the node has with one of the values.
func matchTopology(terms []v1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		ok := true
		for _, e := range t.MatchLabelExpressions {
			v, has := nodeLabels[e.Key]
			if !has || !slices.Contains(e.Values, v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// VolumeBindings returns what binding the pod to node requires of its
// volumes (nil for none): the decisions Filter made for that node,
// remade from the same snapshot.
func (s *State) VolumeBindings(node *v1.Node) *VolumeBindings {
	if s.volumes == nil || len(s.volumes.delayed) == 0 {
		return nil
	}
	b, ok := s.volumes.decide(node)
	if !ok || b.Empty() {
		return nil
	}
	return b
}
