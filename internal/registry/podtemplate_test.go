package registry

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPodTemplate(mutate ...func(*corev1.PodTemplate)) *corev1.PodTemplate {
	pt := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "pt", Namespace: "ns"},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "web", Image: "nginx"},
				{Name: "side", Image: "busybox:1.36"},
			}},
		},
	}
	for _, m := range mutate {
		m(pt)
	}
	return pt
}

func TestPodTemplateValidation(t *testing.T) {
	reg := newTestRegistry(t)
	r := mustLookup(t, reg, "", "podtemplates")
	cases := []struct {
		name   string
		mutate func(*corev1.PodTemplate)
		want   []string
	}{
		{"valid", func(*corev1.PodTemplate) {}, nil},
		// A pod template, unlike a workload's, may say Never or OnFailure.
		{"restart never", func(pt *corev1.PodTemplate) { pt.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, nil},
		{"bad name", func(pt *corev1.PodTemplate) { pt.Name = "Bad_Name" }, []string{"Invalid value: metadata.name"}},
		{"bad label", func(pt *corev1.PodTemplate) { pt.Template.Labels = map[string]string{"a b": "x"} }, []string{"Invalid value: template.metadata.labels"}},
		{"bad annotation", func(pt *corev1.PodTemplate) { pt.Template.Annotations = map[string]string{"a b": "x"} }, []string{"Invalid value: template.metadata.annotations"}},
		{"no containers", func(pt *corev1.PodTemplate) { pt.Template.Spec.Containers = nil }, []string{"Required value: template.spec.containers"}},
		{"no image", func(pt *corev1.PodTemplate) { pt.Template.Spec.Containers[0].Image = "" }, []string{"Required value: template.spec.containers[0].image"}},
		{"duplicate container", func(pt *corev1.PodTemplate) { pt.Template.Spec.Containers[1].Name = "web" }, []string{"Duplicate value: template.spec.containers[1].name"}},
		{"bad restart policy", func(pt *corev1.PodTemplate) { pt.Template.Spec.RestartPolicy = "Sometimes" }, []string{"Unsupported value: template.spec.restartPolicy"}},
		{"ephemeral containers", func(pt *corev1.PodTemplate) {
			pt.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
		}, []string{"Forbidden: template.spec.ephemeralContainers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantErrs(t, create(r, testPodTemplate(tc.mutate)), tc.want...)
		})
	}
}

func TestPodTemplateDefaults(t *testing.T) {
	reg := newTestRegistry(t)
	r := mustLookup(t, reg, "", "podtemplates")
	pt := testPodTemplate()
	if errs := create(r, pt); len(errs) != 0 {
		t.Fatal(errs)
	}
	// The template's spec gets what a pod's spec gets from defaultPodSpec.
	want := testPodTemplate().Template.Spec
	defaultPodSpec(&want)
	if !reflect.DeepEqual(pt.Template.Spec, want) {
		t.Errorf("spec\n  got  %+v\n  want %+v", pt.Template.Spec, want)
	}
	s := pt.Template.Spec
	cases := []struct {
		name string
		got  interface{}
		want interface{}
	}{
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"schedulerName", s.SchedulerName, corev1.DefaultSchedulerName},
		{"untagged pull policy", s.Containers[0].ImagePullPolicy, corev1.PullAlways},
		{"tagged pull policy", s.Containers[1].ImagePullPolicy, corev1.PullIfNotPresent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestPodTemplateTable(t *testing.T) {
	reg := newTestRegistry(t)
	r := mustLookup(t, reg, "", "podtemplates")
	if got, want := columnNames(r), []string{"Name", "Containers", "Images", "Pod Labels"}; !reflect.DeepEqual(got, want) {
		t.Errorf("columns %q, want %q", got, want)
	}
	cases := []struct {
		name string
		pt   *corev1.PodTemplate
		want map[string]interface{}
	}{
		{"two containers", testPodTemplate(), map[string]interface{}{
			"Name": "pt", "Containers": "web,side", "Images": "nginx,busybox:1.36", "Pod Labels": "app=web"}},
		{"no labels", testPodTemplate(func(pt *corev1.PodTemplate) { pt.Template.Labels = nil }), map[string]interface{}{
			"Name": "pt", "Containers": "web,side", "Images": "nginx,busybox:1.36", "Pod Labels": "<none>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := cells(r, tc.pt); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("row %v, want %v", got, tc.want)
			}
		})
	}
}
