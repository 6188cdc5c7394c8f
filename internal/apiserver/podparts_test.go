package apiserver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func debugContainer(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1.36"}, TargetContainerName: "c"}
}

// TestPodEphemeralContainers checks pods/ephemeralcontainers as upstream
// serves it: ephemeral containers may be added (by update or by kubectl
// debug's strategic merge patch), never removed or changed; every other
// change the request carries is dropped; the main resource cannot add
// them.
func TestPodEphemeralContainers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("p", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cur, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gen := cur.Generation
	cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, debugContainer("debugger"))
	cur.Spec.Containers[0].Image = "nginx"         // not this subresource's part: dropped
	cur.Labels = map[string]string{"app": "other"} // metadata is the owner's: dropped
	got, err := pods.UpdateEphemeralContainers(ctx, "p", cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("adding an ephemeral container: %v", err)
	}
	if n := len(got.Spec.EphemeralContainers); n != 1 || got.Spec.EphemeralContainers[0].Name != "debugger" {
		t.Fatalf("ephemeral containers %+v", got.Spec.EphemeralContainers)
	}
	if p := got.Spec.EphemeralContainers[0].TerminationMessagePath; p != corev1.TerminationMessagePathDefault {
		t.Errorf("ephemeral container not defaulted: terminationMessagePath %q", p)
	}
	if img := got.Spec.Containers[0].Image; img != "busybox:1.36" {
		t.Errorf("container image changed through ephemeralcontainers: %q", img)
	}
	if got.Labels["app"] != "test" {
		t.Errorf("labels changed through ephemeralcontainers: %v", got.Labels)
	}
	if got.Generation != gen+1 {
		t.Errorf("generation %d, want %d", got.Generation, gen+1)
	}

	// kubectl debug: a strategic merge patch of the list, keyed by name.
	patch := `{"spec":{"ephemeralContainers":[{"name":"debugger-2","image":"busybox:1.36","targetContainerName":"c","stdin":true,"tty":true}]}}`
	got, err = pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatalf("patching in an ephemeral container: %v", err)
	}
	if n := len(got.Spec.EphemeralContainers); n != 2 {
		t.Fatalf("after the patch: %d ephemeral containers, want 2", n)
	}

	invalid := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   string
	}{
		// A strategic merge patch puts the patch's items first.
		{"remove one", func(p *corev1.Pod) { p.Spec.EphemeralContainers = p.Spec.EphemeralContainers[:1] }, `existing ephemeral containers "debugger" may not be removed`},
		{"change one", func(p *corev1.Pod) { p.Spec.EphemeralContainers[1].Image = "alpine" }, `existing ephemeral containers "debugger" may not be changed`},
		{"ports", func(p *corev1.Pod) {
			c := debugContainer("d3")
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, c)
		}, "spec.ephemeralContainers[2].ports: Forbidden: cannot be set for an Ephemeral Container"},
		{"name of a container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("c"))
		}, `spec.ephemeralContainers[2].name: Duplicate value: "c"`},
		{"unknown target", func(p *corev1.Pod) {
			c := debugContainer("d3")
			c.TargetContainerName = "nope"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, c)
		}, `spec.ephemeralContainers[2].targetContainerName: Not found: "nope"`},
		{"subPath", func(p *corev1.Pod) {
			p.Spec.Volumes = nil
			c := debugContainer("d3")
			c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "x"}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, c)
		}, "spec.ephemeralContainers[2].volumeMounts[0].subPath: Forbidden"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pods.Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(p)
			_, err = pods.UpdateEphemeralContainers(ctx, "p", p, metav1.UpdateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want 422 with %q", err, tc.want)
			}
		})
	}

	t.Run("main resource", func(t *testing.T) {
		p, err := pods.Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("d4"))
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("adding an ephemeral container through the pod: got %v, want 422", err)
		}
	})
	t.Run("create", func(t *testing.T) {
		p := testPod("with-debugger", "")
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d")}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ephemeralContainers: Forbidden: cannot be set on create") {
			t.Fatalf("creating a pod with an ephemeral container: %v, want 422", err)
		}
	})
	t.Run("discovery", func(t *testing.T) {
		list, err := e.cs.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, r := range list.APIResources {
			if r.Name == "pods/ephemeralcontainers" || r.Name == "pods/resize" {
				found[r.Name] = r.Kind == "Pod" && strings.Join(r.Verbs, ",") == "get,patch,update"
			}
		}
		if !found["pods/ephemeralcontainers"] || !found["pods/resize"] {
			t.Fatalf("discovery: %v", found)
		}
	})
}

func resources(req, lim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	if req != "" {
		r.Requests[corev1.ResourceCPU] = resource.MustParse(req)
		r.Requests[corev1.ResourceMemory] = resource.MustParse("64Mi")
	}
	if lim != "" {
		r.Limits[corev1.ResourceCPU] = resource.MustParse(lim)
		r.Limits[corev1.ResourceMemory] = resource.MustParse("64Mi")
	}
	return r
}

// TestPodResize checks pods/resize as upstream serves it: containers' cpu
// and memory change in place (a new generation); anything else in the
// request is dropped or refused with upstream's messages.
func TestPodResize(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pods := e.cs.CoreV1().Pods("default")
	pod := testPod("p", "n1")
	pod.Spec.Containers[0].Resources = resources("100m", "200m")
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	patch := `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}}]}}`
	got, err := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatalf("resizing: %v", err)
	}
	c := got.Spec.Containers[0].Resources
	if c.Requests.Cpu().String() != "150m" || c.Limits.Cpu().String() != "300m" || c.Requests.Memory().String() != "64Mi" {
		t.Errorf("resources after resize: %v", c)
	}
	if got.Generation != created.Generation+1 {
		t.Errorf("generation %d, want %d", got.Generation, created.Generation+1)
	}

	// Through update: a changed image rides along and is dropped.
	cur := got.DeepCopy()
	cur.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("120m")
	cur.Spec.Containers[0].Image = "nginx"
	got, err = pods.UpdateResize(ctx, "p", cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("resize by update: %v", err)
	}
	if got.Spec.Containers[0].Image != "busybox:1.36" || got.Spec.Containers[0].Resources.Requests.Cpu().String() != "120m" {
		t.Errorf("after resize by update: image %q cpu %v", got.Spec.Containers[0].Image, got.Spec.Containers[0].Resources.Requests.Cpu())
	}

	invalid := []struct {
		name, patch, want string
	}{
		{"qos change", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"300m","memory":"64Mi"},"limits":{"cpu":"300m","memory":"64Mi"}}}]}}`,
			"Pod QOS Class may not change as a result of resizing"},
		{"remove limits", `{"spec":{"containers":[{"name":"c","resources":{"limits":null}}]}}`,
			"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
		{"other resource", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`,
			"only cpu and memory resources are mutable"},
		{"add a container", `{"spec":{"containers":[{"name":"d","image":"busybox"}]}}`,
			"spec.containers: Forbidden: containers may not be added or removed on resize"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "resize")
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want 422 with %q", err, tc.want)
			}
		})
	}

	t.Run("running without resources in status", func(t *testing.T) {
		p, err := pods.Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "busybox:1.36", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Pod running on node without support for resize") {
			t.Fatalf("got %v", err)
		}
	})
}
