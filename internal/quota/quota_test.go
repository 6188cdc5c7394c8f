package quota

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var t0 = time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func pod(cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: cs}}
}

func TestPodUsage(t *testing.T) {
	grace := int64(30)
	deleting := func(p *corev1.Pod, at time.Time) *corev1.Pod {
		ts := metav1.NewTime(at)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
		return p
	}
	phase := func(p *corev1.Pod, ph corev1.PodPhase) *corev1.Pod { p.Status.Phase = ph; return p }
	withInit := func(p *corev1.Pod, c corev1.Container) *corev1.Pod {
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{"best effort", pod(container("a", nil, nil)), rl("pods", "1", "count/pods", "1")},
		{"requests and limits", pod(container("a", rl("cpu", "100m", "memory", "1Gi"), rl("cpu", "200m", "memory", "2Gi")), container("b", rl("cpu", "50m"), nil)),
			rl("pods", "1", "count/pods", "1", "cpu", "150m", "requests.cpu", "150m", "limits.cpu", "200m", "memory", "1Gi", "requests.memory", "1Gi", "limits.memory", "2Gi")},
		{"init container is the max, not the sum", withInit(pod(container("a", rl("cpu", "100m"), nil)), container("i", rl("cpu", "500m"), nil)),
			rl("pods", "1", "count/pods", "1", "cpu", "500m", "requests.cpu", "500m")},
		{"ephemeral storage", pod(container("a", rl("ephemeral-storage", "1Gi"), rl("ephemeral-storage", "2Gi"))),
			rl("pods", "1", "count/pods", "1", "ephemeral-storage", "1Gi", "requests.ephemeral-storage", "1Gi", "limits.ephemeral-storage", "2Gi")},
		{"hugepages and extended", pod(container("a", rl("hugepages-2Mi", "4Mi", "example.com/gpu", "2"), rl("hugepages-2Mi", "4Mi", "example.com/gpu", "2"))),
			rl("pods", "1", "count/pods", "1", "hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi", "requests.example.com/gpu", "2")},
		{"succeeded: only stored", phase(pod(container("a", rl("cpu", "1"), nil)), corev1.PodSucceeded), rl("count/pods", "1")},
		{"failed: only stored", phase(pod(container("a", rl("cpu", "1"), nil)), corev1.PodFailed), rl("count/pods", "1")},
		{"terminating within grace counts", deleting(pod(container("a", nil, nil)), t0.Add(-10*time.Second)), rl("pods", "1", "count/pods", "1")},
		{"past its grace: only stored", deleting(pod(container("a", nil, nil)), t0.Add(-31*time.Second)), rl("count/pods", "1")},
	}
	e := For(Pods)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Usage(tc.pod, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !Equals(got, tc.want) {
				t.Errorf("usage = %s, want %s", PrettyPrint(got), PrettyPrint(tc.want))
			}
		})
	}
}

func TestPodScopes(t *testing.T) {
	deadline := int64(60)
	terminating := pod(container("a", nil, nil))
	terminating.Spec.ActiveDeadlineSeconds = &deadline
	burstable := pod(container("a", rl("cpu", "1"), nil))
	classed := pod(container("a", nil, nil))
	classed.Spec.PriorityClassName = "high"
	cross := pod(container("a", nil, nil))
	cross.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{Namespaces: []string{"other"}, TopologyKey: "zone"}}}}
	plain := pod(container("a", nil, nil))

	scopes := func(s ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: s}, Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "10")}}
	}
	selector := func(op corev1.ScopeSelectorOperator, values ...string) *corev1.ResourceQuota {
		q := scopes()
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}}}
		return q
	}
	tests := []struct {
		name string
		q    *corev1.ResourceQuota
		pod  *corev1.Pod
		want bool
	}{
		{"no scope", scopes(), plain, true},
		{"Terminating: deadline", scopes(corev1.ResourceQuotaScopeTerminating), terminating, true},
		{"Terminating: none", scopes(corev1.ResourceQuotaScopeTerminating), plain, false},
		{"NotTerminating", scopes(corev1.ResourceQuotaScopeNotTerminating), plain, true},
		{"NotTerminating: deadline", scopes(corev1.ResourceQuotaScopeNotTerminating), terminating, false},
		{"BestEffort", scopes(corev1.ResourceQuotaScopeBestEffort), plain, true},
		{"BestEffort: burstable", scopes(corev1.ResourceQuotaScopeBestEffort), burstable, false},
		{"NotBestEffort", scopes(corev1.ResourceQuotaScopeNotBestEffort), burstable, true},
		{"two scopes, both", scopes(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeTerminating), terminating, true},
		{"two scopes, one", scopes(corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating), terminating, false},
		{"PriorityClass In", selector(corev1.ScopeSelectorOpIn, "high", "mid"), classed, true},
		{"PriorityClass In: other", selector(corev1.ScopeSelectorOpIn, "low"), classed, false},
		{"PriorityClass NotIn", selector(corev1.ScopeSelectorOpNotIn, "low"), classed, true},
		{"PriorityClass Exists", selector(corev1.ScopeSelectorOpExists), classed, true},
		{"PriorityClass Exists: none", selector(corev1.ScopeSelectorOpExists), plain, false},
		{"PriorityClass DoesNotExist", selector(corev1.ScopeSelectorOpDoesNotExist), plain, true},
		{"CrossNamespacePodAffinity", scopes(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), cross, true},
		{"CrossNamespacePodAffinity: none", scopes(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), plain, false},
	}
	e := For(Pods)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Matches(tc.q, tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
	// A scoped quota counts nothing but pods.
	if ok, _ := For(Services).Matches(&corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
		Status: corev1.ResourceQuotaStatus{Hard: rl("services", "1")}}, &corev1.Service{}); ok {
		t.Error("a scoped quota matched a service")
	}
	// A quota on secrets only does not match pods.
	if ok, _ := e.Matches(&corev1.ResourceQuota{Status: corev1.ResourceQuotaStatus{Hard: rl("secrets", "1")}}, plain); ok {
		t.Error("a secrets quota matched a pod")
	}
}

func TestObjectUsage(t *testing.T) {
	falseV := false
	class := "fast"
	tests := []struct {
		name string
		gr   schema.GroupResource
		obj  runtime.Object
		want corev1.ResourceList
	}{
		{"ClusterIP service", Services, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}},
			rl("services", "1", "count/services", "1", "services.loadbalancers", "0", "services.nodeports", "0")},
		{"NodePort service", Services, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}},
			rl("services", "1", "count/services", "1", "services.loadbalancers", "0", "services.nodeports", "2")},
		{"LoadBalancer service", Services, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}},
			rl("services", "1", "count/services", "1", "services.loadbalancers", "1", "services.nodeports", "1")},
		{"LoadBalancer without node ports", Services, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &falseV,
			Ports: []corev1.ServicePort{{Port: 80}, {Port: 81, NodePort: 30001}}}},
			rl("services", "1", "count/services", "1", "services.loadbalancers", "1", "services.nodeports", "1")},
		{"claim with class", PersistentVolumeClaims, &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "5Gi")}}},
			rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "5Gi",
				"fast.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "fast.storageclass.storage.k8s.io/requests.storage", "5Gi")},
		{"claim allocated more than asked", PersistentVolumeClaims, &corev1.PersistentVolumeClaim{
			Spec:   corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "1Gi")}},
			Status: corev1.PersistentVolumeClaimStatus{AllocatedResources: rl("storage", "2Gi")}},
			rl("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1", "requests.storage", "2Gi")},
		{"secret: legacy and count", schema.GroupResource{Resource: "secrets"}, &corev1.Secret{}, rl("secrets", "1", "count/secrets", "1")},
		{"deployment: count", schema.GroupResource{Group: "apps", Resource: "deployments"}, &metav1.PartialObjectMetadata{}, rl("count/deployments.apps", "1")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := For(tc.gr).Usage(tc.obj, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !Equals(got, tc.want) {
				t.Errorf("usage = %s, want %s", PrettyPrint(got), PrettyPrint(tc.want))
			}
		})
	}
}

func TestConstraints(t *testing.T) {
	withInit := pod(container("a", rl("cpu", "1"), rl("cpu", "1")))
	withInit.Spec.InitContainers = []corev1.Container{container("init", nil, nil)}
	tests := []struct {
		name     string
		required []corev1.ResourceName
		pod      *corev1.Pod
		want     string // "" for no error
	}{
		{"nothing required", nil, pod(container("a", nil, nil)), ""},
		{"pods only", []corev1.ResourceName{"pods"}, pod(container("a", nil, nil)), ""},
		{"requests.cpu present", []corev1.ResourceName{"requests.cpu"}, pod(container("a", rl("cpu", "1"), nil)), ""},
		{"requests.cpu missing", []corev1.ResourceName{"requests.cpu", "pods"}, pod(container("a", nil, nil)), "must specify requests.cpu for: a"},
		{"several missing, sorted", []corev1.ResourceName{"limits.memory", "limits.cpu"}, pod(container("b", nil, nil), container("a", nil, rl("cpu", "1"))),
			"must specify limits.cpu for: b; limits.memory for: a,b"},
		{"init containers too", []corev1.ResourceName{"limits.cpu"}, withInit, "must specify limits.cpu for: init"},
		{"ephemeral storage is not required", []corev1.ResourceName{"requests.ephemeral-storage"}, pod(container("a", nil, nil)), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := For(Pods).Constraints(tc.required, tc.pod)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMatchingResources(t *testing.T) {
	names := []corev1.ResourceName{"pods", "requests.cpu", "services", "secrets", "count/secrets", "requests.storage",
		"gold.storageclass.storage.k8s.io/requests.storage", "requests.hugepages-2Mi", "requests.example.com/gpu", "count/deployments.apps"}
	tests := []struct {
		gr   schema.GroupResource
		want string
	}{
		{Pods, "pods,requests.cpu,requests.example.com/gpu,requests.hugepages-2Mi"},
		{Services, "services"},
		{PersistentVolumeClaims, "gold.storageclass.storage.k8s.io/requests.storage,requests.storage"},
		{schema.GroupResource{Resource: "secrets"}, "count/secrets,secrets"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "count/deployments.apps"},
		{schema.GroupResource{Resource: "configmaps"}, ""},
	}
	for _, tc := range tests {
		if got := PrettyPrintNames(For(tc.gr).MatchingResources(names)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.gr, got, tc.want)
		}
	}
}

func TestCountedResource(t *testing.T) {
	for n, want := range map[corev1.ResourceName]string{
		"count/deployments.apps":    "deployments.apps",
		"count/widgets.example.com": "widgets.example.com",
		"count/pods":                "pods",
		"replicationcontrollers":    "replicationcontrollers",
		"secrets":                   "secrets",
		"pods":                      "",
		"requests.cpu":              "",
	} {
		gr, ok := CountedResource(n)
		if got := gr.String(); ok != (want != "") || ok && got != want {
			t.Errorf("%s: %q %v, want %q", n, got, ok, want)
		}
	}
}

func TestArithmetic(t *testing.T) {
	a, b := rl("pods", "2", "cpu", "500m"), rl("pods", "1", "memory", "1Gi")
	if got := PrettyPrint(Add(a, b)); got != "cpu=500m,memory=1Gi,pods=3" {
		t.Errorf("Add: %s", got)
	}
	if got := PrettyPrint(SubtractWithNonNegativeResult(b, a)); got != "memory=1Gi,pods=0" {
		t.Errorf("Subtract: %s", got)
	}
	if ok, ex := LessThanOrEqual(rl("pods", "3", "cpu", "1"), rl("pods", "2", "cpu", "2", "memory", "1")); ok || PrettyPrintNames(ex) != "pods" {
		t.Errorf("LessThanOrEqual: %v %v", ok, ex)
	}
	if got := PrettyPrint(RemoveZeros(rl("pods", "0", "cpu", "1"))); got != "cpu=1" {
		t.Errorf("RemoveZeros: %s", got)
	}
	if !strings.Contains(PrettyPrintNames(IsNegative(rl("pods", "-1", "cpu", "1"))), "pods") {
		t.Error("IsNegative")
	}
}

func TestClaimScopes(t *testing.T) {
	gold, silver := "gold", "silver"
	claim := func(spec, current *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeAttributesClassName: spec},
			Status: corev1.PersistentVolumeClaimStatus{CurrentVolumeAttributesClassName: current}}
	}
	q := func(op corev1.ScopeSelectorOperator, values ...string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass, Operator: op, Values: values}}}},
			Status: corev1.ResourceQuotaStatus{Hard: rl("requests.storage", "10Gi")}}
	}
	tests := []struct {
		name  string
		q     *corev1.ResourceQuota
		claim *corev1.PersistentVolumeClaim
		want  bool
	}{
		{"In: asked for", q(corev1.ScopeSelectorOpIn, "gold"), claim(&gold, nil), true},
		{"In: current", q(corev1.ScopeSelectorOpIn, "gold"), claim(&silver, &gold), true},
		{"In: other", q(corev1.ScopeSelectorOpIn, "gold"), claim(&silver, nil), false},
		{"Exists", q(corev1.ScopeSelectorOpExists), claim(&silver, nil), true},
		{"Exists: none", q(corev1.ScopeSelectorOpExists), claim(nil, nil), false},
		{"DoesNotExist: none", q(corev1.ScopeSelectorOpDoesNotExist), claim(nil, nil), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := For(PersistentVolumeClaims).Matches(tc.q, tc.claim)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}
