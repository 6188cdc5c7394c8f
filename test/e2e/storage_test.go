package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// staticYAML is a hostPath volume of class manual and a claim for it.
const staticYAML = `apiVersion: v1
kind: PersistentVolume
metadata: {name: NAME-pv}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  hostPath: {path: /data/NAME}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: NAME, namespace: storage-e2e}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  resources: {requests: {storage: 1Gi}}
`

// localYAML is a WaitForFirstConsumer class, a local volume on one node
// (NODE) and a claim of that class.
const localYAML = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-wffc}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-pv}
spec:
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local-wffc
  local: {path: /mnt/disk}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [NODE]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: local-claim, namespace: storage-e2e}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-wffc
  resources: {requests: {storage: 1Gi}}
`

// defaultClassYAML is a default class, a volume of it, and a claim that
// names no class.
const defaultClassYAML = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: standard-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  hostPath: {path: /data/standard}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: plain, namespace: storage-e2e}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`

// TestPersistentVolumes runs volume semantics through a real `myriad up`
// (the StorageObjectInUseProtection admission plugin, the
// persistentvolume-binder, pvc-protection and pv-protection controllers,
// the scheduler's VolumeBinding) with hollow nodes running the pods.
func TestPersistentVolumes(t *testing.T) {
	srv, _ := startWithHollowNodes(t, "storage", 3, nil)

	c := srv.client(t)
	ctx := context.Background()
	const ns = "storage-e2e"
	srv.mustKubectl(t, "", "create", "namespace", ns)

	t.Run("a claim binds to a matching volume", func(t *testing.T) {
		srv.mustKubectl(t, strings.ReplaceAll(staticYAML, "NAME", "data"), "apply", "-f", "-")
		waitFor(t, 30*time.Second, func() bool {
			return claimPhase(t, c, ns, "data") == corev1.ClaimBound && volumePhase(t, c, "data-pv") == corev1.VolumeBound
		})
		out := srv.mustKubectl(t, "", "-n", ns, "get", "pv,pvc")
		for _, want := range []string{"persistentvolume/data-pv", "persistentvolumeclaim/data"} {
			line := lineWith(out, want)
			if !strings.Contains(line, "Bound") || !strings.Contains(line, "5Gi") || !strings.Contains(line, "RWO") || !strings.Contains(line, "manual") {
				t.Errorf("kubectl get pv,pvc: %q line %q\n%s", want, line, out)
			}
		}
		if line := lineWith(out, "persistentvolume/data-pv"); !strings.Contains(line, ns+"/data") || !strings.Contains(line, "Retain") {
			t.Errorf("pv line %q lacks its claim or reclaim policy", line)
		}
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, "data-pv", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Spec.VolumeName != "data-pv" || pvc.Annotations["pv.kubernetes.io/bind-completed"] != "yes" || pvc.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
			t.Errorf("claim spec %+v annotations %v", pvc.Spec, pvc.Annotations)
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID || pv.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
			t.Errorf("volume claimRef %+v annotations %v", pv.Spec.ClaimRef, pv.Annotations)
		}
		if !slices.Contains(pvc.Finalizers, "kubernetes.io/pvc-protection") || !slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") {
			t.Errorf("finalizers: claim %v volume %v", pvc.Finalizers, pv.Finalizers)
		}
	})

	t.Run("a claim in use stays until its pod is gone, then its volume is Released", func(t *testing.T) {
		pod := storagePod("user", "data")
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, func() bool {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "user", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning
		})
		srv.mustKubectl(t, "", "-n", ns, "delete", "pvc", "data", "--wait=false")
		time.Sleep(2 * time.Second) // the controllers have had their chance
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claim in use was deleted: %v", err)
		}
		if pvc.DeletionTimestamp == nil || !slices.Contains(pvc.Finalizers, "kubernetes.io/pvc-protection") {
			t.Fatalf("claim in use: deletionTimestamp %v finalizers %v", pvc.DeletionTimestamp, pvc.Finalizers)
		}
		if line := lineWith(srv.mustKubectl(t, "", "-n", ns, "get", "pvc", "data"), "data"); !strings.Contains(line, "Terminating") {
			t.Errorf("kubectl get pvc: %q, want Terminating", line)
		}
		if err := c.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, func() bool {
			_, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		waitFor(t, 30*time.Second, func() bool { return volumePhase(t, c, "data-pv") == corev1.VolumeReleased })
		if line := lineWith(srv.mustKubectl(t, "", "get", "pv", "data-pv"), "data-pv"); !strings.Contains(line, "Released") {
			t.Errorf("kubectl get pv: %q, want Released", line)
		}
	})

	t.Run("a bound volume stays until its claim is gone", func(t *testing.T) {
		srv.mustKubectl(t, strings.ReplaceAll(staticYAML, "NAME", "logs"), "apply", "-f", "-")
		waitFor(t, 30*time.Second, func() bool { return volumePhase(t, c, "logs-pv") == corev1.VolumeBound })
		srv.mustKubectl(t, "", "delete", "pv", "logs-pv", "--wait=false")
		time.Sleep(2 * time.Second)
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, "logs-pv", metav1.GetOptions{})
		if err != nil || pv.DeletionTimestamp == nil || pv.Status.Phase != corev1.VolumeBound {
			t.Fatalf("bound volume being deleted: %v %+v", err, pv)
		}
		srv.mustKubectl(t, "", "-n", ns, "delete", "pvc", "logs")
		waitFor(t, 30*time.Second, func() bool {
			_, err := c.CoreV1().PersistentVolumes().Get(ctx, "logs-pv", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("WaitForFirstConsumer binds where the pod is scheduled", func(t *testing.T) {
		const node = "hollow-node-1"
		srv.mustKubectl(t, strings.ReplaceAll(localYAML, "NODE", node), "apply", "-f", "-")
		waitFor(t, 30*time.Second, func() bool {
			return hasEventFor(t, c, ns, "local-claim", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
		})
		time.Sleep(time.Second)
		if p := claimPhase(t, c, ns, "local-claim"); p != corev1.ClaimPending {
			t.Fatalf("claim %s before a consumer, want Pending", p)
		}
		if p := volumePhase(t, c, "local-pv"); p != corev1.VolumeAvailable {
			t.Fatalf("volume %s before a consumer, want Available", p)
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, storagePod("consumer", "local-claim"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, func() bool {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "consumer", metav1.GetOptions{})
			return err == nil && p.Spec.NodeName != ""
		})
		p, err := c.CoreV1().Pods(ns).Get(ctx, "consumer", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != node {
			t.Errorf("pod scheduled onto %s, want %s (the volume's node)", p.Spec.NodeName, node)
		}
		// The scheduler binds the pod only once the claim is bound.
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "local-claim", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Spec.VolumeName != "local-pv" || pvc.Status.Phase != corev1.ClaimBound {
			t.Errorf("claim after scheduling: volume %q phase %s", pvc.Spec.VolumeName, pvc.Status.Phase)
		}
		waitFor(t, 30*time.Second, func() bool { return volumePhase(t, c, "local-pv") == corev1.VolumeBound })
	})

	t.Run("a claim naming no class gets the default class and binds in it", func(t *testing.T) {
		srv.mustKubectl(t, defaultClassYAML, "apply", "-f", "-")
		waitFor(t, 30*time.Second, func() bool { return claimPhase(t, c, ns, "plain") == corev1.ClaimBound })
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "standard" || pvc.Spec.VolumeName != "standard-pv" {
			t.Errorf("claim class %v volume %q, want standard and standard-pv", pvc.Spec.StorageClassName, pvc.Spec.VolumeName)
		}
	})

	t.Run("a pod whose claim does not exist is unschedulable", func(t *testing.T) {
		if _, err := c.CoreV1().Pods(ns).Create(ctx, storagePod("orphan", "nope"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := `0/3 nodes are available: persistentvolumeclaim "nope" not found.`
		waitFor(t, 30*time.Second, func() bool {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable && strings.HasPrefix(cond.Message, want) {
					return true
				}
			}
			return false
		})
	})
}

func storagePod(name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

func claimPhase(t *testing.T, c kubernetes.Interface, ns, name string) corev1.PersistentVolumeClaimPhase {
	t.Helper()
	pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return pvc.Status.Phase
}

func volumePhase(t *testing.T, c kubernetes.Interface, name string) corev1.PersistentVolumePhase {
	t.Helper()
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return pv.Status.Phase
}

func hasEventFor(t *testing.T, c kubernetes.Interface, ns, name, reason, message string) bool {
	t.Helper()
	evs, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return false
	}
	for _, e := range evs.Items {
		if e.Reason == reason && e.Message == message {
			return true
		}
	}
	return false
}

// lineWith is the first line of out containing s.
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
