package pvbinder

import (
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// FindBestMatch is upstream's findBestMatchForClaim: volumes are grouped
// by their set of access modes, the groups holding every mode the claim
// asks for are tried from the fewest modes up, and the first group with a
// match gives it (component-helpers' FindMatchingVolume: a volume
// pre-bound to the claim, else the smallest Available one that fits).
// With delay (WaitForFirstConsumer) only a pre-bound volume matches.
func FindBestMatch(pvc *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delay bool) (*corev1.PersistentVolume, error) {
	groups := map[string][]*corev1.PersistentVolume{}
	var keys []string
	for _, pv := range volumes {
		if !volumehelpers.CheckAccessModes(pvc, pv) {
			continue
		}
		k := modesKey(pv.Spec.AccessModes)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], pv)
	}
	// Fewest modes first; equal counts in a fixed order.
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	for _, k := range keys {
		pv, err := volumehelpers.FindMatchingVolume(pvc, groups[k], nil, nil, delay, true)
		if err != nil || pv != nil {
			return pv, err
		}
	}
	return nil, nil
}

// modesKey is a set of access modes as one letter per mode, in a fixed
// order, so its length is the number of modes.
func modesKey(modes []corev1.PersistentVolumeAccessMode) string {
	var k []byte
	for i, m := range []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod} {
		if slices.Contains(modes, m) {
			k = append(k, byte('a'+i))
		}
	}
	return string(k)
}

// CheckVolumeSatisfiesClaim is upstream's checkVolumeSatisfyClaim, for a
// claim that names its volume.
func CheckVolumeSatisfiesClaim(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) error {
	if pv.DeletionTimestamp != nil {
		return errors.New("the volume is marked for deletion " + `"` + pv.Name + `"`)
	}
	requested := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	if capacity.Value() < requested.Value() {
		return errors.New("requested PV is too small")
	}
	if volumehelpers.GetPersistentVolumeClass(pv) != volumehelpers.GetPersistentVolumeClaimClass(pvc) {
		return errors.New("storageClassName does not match")
	}
	if volumehelpers.CheckVolumeModeMismatches(&pvc.Spec, &pv.Spec) {
		return errors.New("incompatible volumeMode")
	}
	if !volumehelpers.CheckAccessModes(pvc, pv) {
		return errors.New("incompatible accessMode")
	}
	pvcVAC, pvVAC := pvc.Spec.VolumeAttributesClassName, pv.Spec.VolumeAttributesClassName
	if pvcVAC != nil && *pvcVAC != "" && (pvVAC == nil || *pvVAC != *pvcVAC) {
		return errors.New("volumeAttributesClassName does not match")
	}
	return nil
}
