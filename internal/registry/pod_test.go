package registry

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func testPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestPodDefaults(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "pods")
	p := testPod(func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers,
			corev1.Container{Name: "side", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
			corev1.Container{Name: "pinned", Image: "registry:5000/x@sha256:abc"},
			corev1.Container{Name: "latest", Image: "registry:5000/x:latest"})
		p.Status.Phase = corev1.PodRunning // users may not set status
	})
	wantErrs(t, create(r, p))

	s := p.Spec
	if s.RestartPolicy != corev1.RestartPolicyAlways || s.DNSPolicy != corev1.DNSClusterFirst ||
		*s.TerminationGracePeriodSeconds != 30 || s.SchedulerName != "default-scheduler" ||
		s.SecurityContext == nil || !*s.EnableServiceLinks || *s.Priority != 0 || s.ServiceAccountName != "" {
		t.Errorf("pod spec defaults: %+v", s)
	}
	pulls := []corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullAlways}
	for i, c := range s.Containers {
		if c.ImagePullPolicy != pulls[i] || c.TerminationMessagePath != "/dev/termination-log" || c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
			t.Errorf("container %s: pull %s, message %s/%s", c.Name, c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy)
		}
	}
	side := s.Containers[1]
	if side.Ports[0].Protocol != corev1.ProtocolTCP || side.Resources.Requests.Cpu().String() != "1" {
		t.Errorf("side: %+v", side)
	}
	if len(s.Tolerations) != 2 || s.Tolerations[0].Key != corev1.TaintNodeNotReady || *s.Tolerations[1].TolerationSeconds != 300 {
		t.Errorf("tolerations: %+v", s.Tolerations)
	}
	if p.Status.Phase != corev1.PodPending || p.Status.QOSClass != corev1.PodQOSBurstable || p.Generation != 1 {
		t.Errorf("status %+v generation %d", p.Status, p.Generation)
	}

	// A pod tolerating everything gets no extra tolerations.
	all := testPod(func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} })
	wantErrs(t, create(r, all))
	if len(all.Spec.Tolerations) != 1 || all.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("tolerations %+v qos %s", all.Spec.Tolerations, all.Status.QOSClass)
	}
}

func TestPodValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "pods")
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"valid", func(*corev1.Pod) {}, nil},
		{"bad name", func(p *corev1.Pod) { p.Name = "Web_1" }, []string{"Invalid value: metadata.name"}},
		{"no namespace", func(p *corev1.Pod) { p.Namespace = "" }, []string{"Required value: metadata.namespace"}},
		{"bad label", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b c"} }, []string{"Invalid value: metadata.labels"}},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, []string{"Required value: spec.containers"}},
		{"container problems", func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "App"}, {Name: "b", Image: "x"}, {Name: "b", Image: "x"}}
		}, []string{"Invalid value: spec.containers[0].name", "Required value: spec.containers[0].image", "Duplicate value: spec.containers[2].name"}},
		{"ports", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}, {ContainerPort: 80, Protocol: "ICMP"}, {HostPort: -1, ContainerPort: 1}}
		}, []string{"Invalid value: spec.containers[0].ports[0].containerPort", "Unsupported value: spec.containers[0].ports[1].protocol", "Invalid value: spec.containers[0].ports[2].hostPort"}},
		{"requests above limits", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("-1")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}
		}, []string{"Invalid value: spec.containers[0].resources.requests", "Invalid value: spec.containers[0].resources.requests[memory]"}},
		{"restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []string{"Unsupported value: spec.restartPolicy"}},
		{"volume mount of unknown volume", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, []string{"Not found: spec.containers[0].volumeMounts[0].name"}},
		{"toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "x"}}
		}, []string{"Invalid value: spec.tolerations[0].operator"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod(tc.mutate)
			wantErrs(t, create(r, p), tc.want...)
		})
	}
}

func TestPodUpdate(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "pods")
	old := testPod(func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "user", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	})
	wantErrs(t, create(r, old))
	old.Status.Phase = corev1.PodRunning

	cases := []struct {
		name    string
		mutate  func(*corev1.Pod)
		want    []string
		wantGen int64
	}{
		{"labels only", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, nil, 1},
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, nil, 2},
		{"added toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, nil, 2},
		{"removed toleration", func(p *corev1.Pod) { p.Spec.Tolerations = p.Spec.Tolerations[1:] }, []string{"Forbidden: spec.tolerations"}, 2},
		{"other field", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }, []string{"Forbidden: spec"}, 2},
		{"status is ignored", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, nil, 1},
		{"generation is ignored", func(p *corev1.Pod) { p.Generation = 7 }, nil, 1},
		{"name is immutable", func(p *corev1.Pod) { p.Name = "other" }, []string{"Invalid value: metadata.name"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := old.DeepCopy()
			tc.mutate(p)
			wantErrs(t, update(r, p, old), tc.want...)
			if p.Generation != tc.wantGen || p.Status.Phase != corev1.PodRunning {
				t.Errorf("generation %d, phase %s", p.Generation, p.Status.Phase)
			}
		})
	}
}

func TestPodStatusUpdate(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "pods")
	old := testPod()
	wantErrs(t, create(r, old))
	p := old.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Spec.NodeName = "sneaky"
	p.OwnerReferences = []metav1.OwnerReference{{Name: "x"}}
	wantErrs(t, updateStatus(r, p, old))
	if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "" || p.OwnerReferences != nil || p.Status.QOSClass != old.Status.QOSClass {
		t.Errorf("status update kept %+v / %+v", p.Spec.NodeName, p.Status)
	}
}

func TestPodFields(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "pods")
	p := testPod(func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "default" })
	create(r, p)
	p.Spec.NodeName = "n1"
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}}
	want := fields.Set{
		"spec.nodeName": "n1", "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
		"spec.serviceAccountName": "default", "spec.hostNetwork": "false", "status.phase": "Pending",
		"status.podIP": "10.0.0.1", "status.nominatedNodeName": "",
	}
	if got := r.SelectableFields(p); got.String() != want.String() {
		t.Errorf("fields %v, want %v", got, want)
	}
}

func TestPodTable(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "pods")
	if got := columnNames(r); len(got) != 9 || got[0] != "Name" || got[3] != "Restarts" || got[5] != "IP*" || got[8] != "Readiness Gates*" {
		t.Errorf("columns %v", got)
	}
	created := metav1.NewTime(testNow.Add(-90 * time.Minute))
	finished := metav1.NewTime(testNow.Add(-5 * time.Minute))
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]interface{}
	}{
		{"pending", testPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending; p.CreationTimestamp = created }),
			map[string]interface{}{"Name": "web", "Ready": "0/1", "Status": "Pending", "Restarts": "0", "Age": "90m", "IP": "<none>", "Node": "<none>", "Readiness Gates": "<none>"}},
		{"running with restart", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Spec.NodeName = "n1"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.1.2.3"}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: running, RestartCount: 2,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: finished}}}}
		}), map[string]interface{}{"Ready": "1/1", "Status": "Running", "Restarts": "2 (5m ago)", "IP": "10.1.2.3", "Node": "n1", "Age": "<unknown>"}},
		{"crash loop", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
		}), map[string]interface{}{"Ready": "0/1", "Status": "CrashLoopBackOff"}},
		{"init", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i1", State: running}}
		}), map[string]interface{}{"Status": "Init:0/2"}},
		{"terminating", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.DeletionTimestamp = &created
		}), map[string]interface{}{"Status": "Terminating"}},
		{"gated", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Reason: corev1.PodReasonSchedulingGated}}
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "x"}}
		}), map[string]interface{}{"Status": "SchedulingGated", "Readiness Gates": "0/1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			row := cells(r, tc.pod)
			for k, v := range tc.want {
				if row[k] != v {
					t.Errorf("%s = %v, want %v", k, row[k], v)
				}
			}
		})
	}
}

func TestPodStatusValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "pods")
	old := testPod()
	wantErrs(t, create(r, old))
	p := old.DeepCopy()
	p.Status.NominatedNodeName = "Bad_Node"
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "nope"}}
	wantErrs(t, updateStatus(r, p, old), "Invalid value: status.nominatedNodeName", "Invalid value: status.podIPs", "Invalid value: status.podIPs[2]")
}
