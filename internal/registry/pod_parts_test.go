package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func burstablePod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}
		p.Spec.InitContainers = []corev1.Container{
			{Name: "init", Image: "busybox"},
			{Name: "sidecar", Image: "busybox", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}},
		}
	})
	defaultPod(p)
	for _, m := range mutate {
		m(p)
	}
	return p
}

// partUpdate runs a subresource's strategy as the API server does and
// returns the stored object and the validation errors.
func partUpdate(t *testing.T, sub string, obj, old *corev1.Pod) (*corev1.Pod, string) {
	t.Helper()
	r := mustLookup(t, newTestRegistry(t), "", "pods")
	s, ok := r.PartStrategy(sub)
	if !ok {
		t.Fatalf("pods/%s is not a part", sub)
	}
	ctx := context.Background()
	s.PrepareForStatusUpdate(ctx, obj, old)
	if agg := s.ValidateStatusUpdate(ctx, obj, old).ToAggregate(); agg != nil {
		return obj, agg.Error()
	}
	return obj, ""
}

func TestPodResizeStrategy(t *testing.T) {
	cpu := func(c *corev1.Container, req, lim string) {
		c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse(req)
		if lim != "" {
			c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse(lim)
		}
	}
	cases := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   string // "" for valid
		check  func(t *testing.T, p *corev1.Pod)
	}{
		{name: "cpu up", mutate: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "150m", "300m") }, check: func(t *testing.T, p *corev1.Pod) {
			if p.Spec.Containers[0].Resources.Requests.Cpu().String() != "150m" || p.Generation != 2 {
				t.Errorf("cpu %v generation %d", p.Spec.Containers[0].Resources.Requests.Cpu(), p.Generation)
			}
		}},
		{name: "sidecar", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers[1].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("20m")
		}},
		{name: "image and labels dropped", mutate: func(p *corev1.Pod) {
			cpu(&p.Spec.Containers[0], "150m", "")
			p.Spec.Containers[0].Image = "other"
			p.Labels = map[string]string{"x": "y"}
			p.Status.Phase = corev1.PodFailed
		}, check: func(t *testing.T, p *corev1.Pod) {
			if p.Spec.Containers[0].Image != "nginx:1.27" || p.Labels["x"] != "" || p.Status.Phase != "" {
				t.Errorf("kept what resize may not change: image %q labels %v phase %q", p.Spec.Containers[0].Image, p.Labels, p.Status.Phase)
			}
		}},
		{name: "memory up", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
		}},
		// Burstable to Guaranteed (once no init container lacks limits).
		{name: "qos", old: func(p *corev1.Pod) { p.Spec.InitContainers = nil },
			mutate: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "200m", "") }, want: "Pod QOS Class may not change as a result of resizing"},
		// A removed request would come back from its limit (defaulting),
		// so remove a limit.
		{name: "remove limit", mutate: func(p *corev1.Pod) { delete(p.Spec.Containers[0].Resources.Limits, corev1.ResourceMemory) },
			want: "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
		{name: "remove request", old: func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = nil },
			mutate: func(p *corev1.Pod) { delete(p.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory) },
			want:   "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"},
		{name: "other resource", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}, want: "only cpu and memory resources are mutable"},
		{name: "plain init container", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
		}, want: "resources for non-sidecar init containers are immutable"},
		{name: "rename", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "renamed" },
			want: "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"},
		{name: "add", mutate: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "b"})
		},
			want: "spec.containers: Forbidden: containers may not be added or removed on resize"},
		{name: "static pod", old: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} },
			mutate: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "150m", "") }, want: "static pods cannot be resized"},
		{name: "pod-level resources", old: func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		}, mutate: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "150m", "") }, want: "pods with pod-level resources cannot be resized"},
		{name: "windows", old: func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} },
			mutate: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "150m", "") }, want: "windows pods cannot be resized"},
		{name: "node without resize", old: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, mutate: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "150m", "") }, want: "Pod running on node without support for resize"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := burstablePod(func(p *corev1.Pod) { p.Generation = 1 })
			if tc.old != nil {
				tc.old(old)
			}
			obj := old.DeepCopy()
			tc.mutate(obj)
			got, errs := partUpdate(t, "resize", obj, old)
			if tc.want == "" {
				if errs != "" {
					t.Fatalf("unexpected errors: %s", errs)
				}
			} else if !strings.Contains(errs, tc.want) {
				t.Fatalf("errors %q, want %q", errs, tc.want)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestPodEphemeralContainersStrategy(t *testing.T) {
	dbg := func(name string) corev1.EphemeralContainer {
		return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}}
	}
	cases := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   string
	}{
		{name: "add", mutate: func(p *corev1.Pod) { p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, dbg("d2")) }},
		{name: "reorder", mutate: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{dbg("d2"), p.Spec.EphemeralContainers[0]}
		}},
		{name: "remove", mutate: func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil }, want: `existing ephemeral containers "d1" may not be removed`},
		{name: "change", mutate: func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "alpine" }, want: `existing ephemeral containers "d1" may not be changed`},
		{name: "probe", mutate: func(p *corev1.Pod) {
			c := dbg("d2")
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, c)
		}, want: "spec.ephemeralContainers[1].readinessProbe: Forbidden: cannot be set for an Ephemeral Container"},
		{name: "resources", mutate: func(p *corev1.Pod) {
			c := dbg("d2")
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, c)
		}, want: "spec.ephemeralContainers[1].resources: Forbidden"},
		{name: "duplicate of an ephemeral", mutate: func(p *corev1.Pod) { p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, dbg("d1")) },
			want: `spec.ephemeralContainers[1].name: Duplicate value: "d1"`},
		{name: "no image", mutate: func(p *corev1.Pod) {
			c := dbg("d2")
			c.Image = ""
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, c)
		}, want: "spec.ephemeralContainers[1].image: Required value"},
		{name: "static pod", old: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} },
			mutate: func(p *corev1.Pod) { p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, dbg("d2")) },
			want:   "static pods do not support ephemeral containers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := burstablePod(func(p *corev1.Pod) {
				p.Generation = 3
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{dbg("d1")}
			})
			if tc.old != nil {
				tc.old(old)
			}
			obj := old.DeepCopy()
			tc.mutate(obj)
			got, errs := partUpdate(t, "ephemeralcontainers", obj, old)
			if tc.want == "" {
				if errs != "" {
					t.Fatalf("unexpected errors: %s", errs)
				}
				if got.Generation != 4 {
					t.Errorf("generation %d, want 4", got.Generation)
				}
				return
			}
			if !strings.Contains(errs, tc.want) {
				t.Fatalf("errors %q, want %q", errs, tc.want)
			}
		})
	}
}

// The parts run once per kubectl debug or resize request, not per list
// or watch event; the benchmark states their cost next to the others.
func BenchmarkPodResizeStrategy(b *testing.B) {
	reg, _ := NewWithOptions(Options{})
	r, _ := reg.LookupResource(v1(coreGroup), "pods")
	s, _ := r.PartStrategy("resize")
	old := burstablePod()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		obj := old.DeepCopy()
		obj.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("150m")
		s.PrepareForStatusUpdate(ctx, obj, old)
		if errs := s.ValidateStatusUpdate(ctx, obj, old); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
