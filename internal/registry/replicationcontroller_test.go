package registry

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testRC(mutate ...func(*corev1.ReplicationController)) *corev1.ReplicationController {
	t := testTemplate()
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec:       corev1.ReplicationControllerSpec{Template: &t},
	}
	for _, m := range mutate {
		m(rc)
	}
	return rc
}

func TestReplicationControllerDefaults(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "replicationcontrollers")
	cases := []struct {
		name                    string
		mutate                  func(*corev1.ReplicationController)
		wantSelector, wantLabel map[string]string
		wantReplicas            int32
	}{
		{"selector and labels from the template", nil, map[string]string{"app": "web"}, map[string]string{"app": "web"}, 1},
		{"own selector and labels kept", func(rc *corev1.ReplicationController) {
			rc.Labels = map[string]string{"team": "a"}
			rc.Spec.Selector = map[string]string{"app": "web"}
			rc.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
			rc.Spec.Replicas = ptrTo(int32(0))
		}, map[string]string{"app": "web"}, map[string]string{"team": "a"}, 0},
		{"template without labels defaults nothing", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Labels = nil
			rc.Spec.Selector = map[string]string{"app": "web"}
		}, map[string]string{"app": "web"}, nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := testRC()
			if tc.mutate != nil {
				tc.mutate(rc)
			}
			rc.Status.Replicas = 7 // cleared on create
			create(r, rc)
			if !reflect.DeepEqual(rc.Spec.Selector, tc.wantSelector) || !reflect.DeepEqual(rc.Labels, tc.wantLabel) ||
				*rc.Spec.Replicas != tc.wantReplicas || rc.Status.Replicas != 0 || rc.Generation != 1 {
				t.Errorf("selector %v labels %v replicas %d status %+v generation %d", rc.Spec.Selector, rc.Labels, *rc.Spec.Replicas, rc.Status, rc.Generation)
			}
			// The template gets the pod defaults.
			if s := rc.Spec.Template.Spec; s.RestartPolicy != corev1.RestartPolicyAlways || s.DNSPolicy != corev1.DNSClusterFirst ||
				s.Containers[0].TerminationMessagePath != corev1.TerminationMessagePathDefault {
				t.Errorf("template not defaulted: %+v", s)
			}
		})
	}
}

func TestReplicationControllerValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "replicationcontrollers")
	cases := []struct {
		name   string
		mutate func(*corev1.ReplicationController)
		want   []string
	}{
		{"valid", func(*corev1.ReplicationController) {}, nil},
		{"zero replicas", func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptrTo(int32(0)) }, nil},
		{"negative replicas", func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptrTo(int32(-1)) }, []string{"Invalid value: spec.replicas"}},
		{"negative minReadySeconds", func(rc *corev1.ReplicationController) { rc.Spec.MinReadySeconds = -1 }, []string{"Invalid value: spec.minReadySeconds"}},
		{"no template", func(rc *corev1.ReplicationController) {
			rc.Spec.Template = nil
			rc.Spec.Selector = map[string]string{"app": "web"}
		}, []string{"Required value: spec.template"}},
		{"no template, no selector", func(rc *corev1.ReplicationController) { rc.Spec.Template = nil },
			[]string{"Required value: spec.selector", "Required value: spec.template"}},
		{"no selector, template without labels", func(rc *corev1.ReplicationController) { rc.Spec.Template.Labels = nil },
			[]string{"Required value: spec.selector"}},
		{"selector does not match", func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} },
			[]string{"Invalid value: spec.template.metadata.labels"}},
		{"restart policy Never", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		},
			[]string{"Unsupported value: spec.template.spec.restartPolicy"}},
		{"activeDeadlineSeconds", func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.ActiveDeadlineSeconds = ptrTo(int64(5)) },
			[]string{"Forbidden: spec.template.spec.activeDeadlineSeconds"}},
		{"container without image", func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{"Required value: spec.template.spec.containers[0].image"}},
		{"bad name", func(rc *corev1.ReplicationController) { rc.Name = "Web" }, []string{"Invalid value: metadata.name"}},
		{"no namespace", func(rc *corev1.ReplicationController) { rc.Namespace = "" }, []string{"Required value: metadata.namespace"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantErrs(t, create(r, testRC(tc.mutate)), tc.want...)
		})
	}
	// Without defaulting (validation alone) an empty restart policy is
	// both missing from the pod spec and not Always, as upstream says.
	rc := testRC(func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "web"} })
	wantErrs(t, validateReplicationController(rc),
		"Required value: spec.template.spec.containers[0].imagePullPolicy", "Required value: spec.template.spec.containers[0].terminationMessagePolicy",
		"Required value: spec.template.spec.dnsPolicy", "Required value: spec.template.spec.restartPolicy", "Unsupported value: spec.template.spec.restartPolicy")
}

func TestReplicationControllerUpdateAndStatus(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "replicationcontrollers")
	old := testRC()
	if errs := create(r, old); len(errs) > 0 {
		t.Fatal(errs)
	}
	old.Status = corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 1}

	// The selector is mutable (unlike a ReplicaSet's); a spec change bumps
	// generation and keeps status.
	obj := old.DeepCopy()
	obj.Spec.Selector = map[string]string{"app": "web", "v": "2"}
	obj.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
	obj.Status = corev1.ReplicationControllerStatus{}
	wantErrs(t, update(r, obj, old))
	if obj.Generation != 2 || obj.Status.Replicas != 1 {
		t.Errorf("generation %d status %+v", obj.Generation, obj.Status)
	}
	// A metadata-only change does not.
	obj = old.DeepCopy()
	obj.Annotations = map[string]string{"a": "b"}
	wantErrs(t, update(r, obj, old))
	if obj.Generation != 1 {
		t.Errorf("generation %d after a metadata change", obj.Generation)
	}

	cases := []struct {
		name string
		st   corev1.ReplicationControllerStatus
		want []string
	}{
		{"valid", corev1.ReplicationControllerStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 1}, nil},
		{"negative", corev1.ReplicationControllerStatus{Replicas: 0, FullyLabeledReplicas: -1, ObservedGeneration: -1},
			[]string{"Invalid value: status.fullyLabeledReplicas", "Invalid value: status.observedGeneration"}},
		{"more than replicas", corev1.ReplicationControllerStatus{Replicas: 1, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2},
			[]string{"Invalid value: status.fullyLabeledReplicas", "Invalid value: status.readyReplicas", "Invalid value: status.availableReplicas"}},
		{"available more than ready", corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 2},
			[]string{"Invalid value: status.availableReplicas"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := old.DeepCopy()
			obj.Spec.Replicas = ptrTo(int32(9)) // a status write cannot change the spec
			obj.Status = tc.st
			wantErrs(t, updateStatus(r, obj, old), tc.want...)
			if *obj.Spec.Replicas != 1 || !reflect.DeepEqual(obj.Status, tc.st) {
				t.Errorf("spec replicas %d status %+v", *obj.Spec.Replicas, obj.Status)
			}
		})
	}
}

func TestReplicationControllerScaleTableFields(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "replicationcontrollers")
	rc := testRC(func(rc *corev1.ReplicationController) {
		rc.UID = "u1"
		rc.Spec.Selector = map[string]string{"app": "web", "tier": "fe"}
		rc.Spec.Template.Labels = rc.Spec.Selector
		rc.Spec.Replicas = ptrTo(int32(3))
		rc.Status.Replicas = 2
		rc.Status.ReadyReplicas = 1
	})
	sc := r.Scale.Scale(rc)
	if sc.Name != "web" || sc.UID != "u1" || sc.ResourceVersion != "1" || sc.Spec.Replicas != 3 || sc.Status.Replicas != 2 || sc.Status.Selector != "app=web,tier=fe" {
		t.Errorf("scale %+v", sc)
	}
	r.Scale.SetReplicas(rc, 5)
	if *rc.Spec.Replicas != 5 {
		t.Errorf("replicas %d after SetReplicas(5)", *rc.Spec.Replicas)
	}

	if got, want := columnNames(r), []string{"Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"}; !reflect.DeepEqual(got, want) {
		t.Errorf("columns %v, want %v", got, want)
	}
	row := cells(r, rc)
	if row["Desired"] != int64(5) || row["Current"] != int64(2) || row["Ready"] != int64(1) ||
		row["Containers"] != "app" || row["Images"] != "nginx" || row["Selector"] != "app=web,tier=fe" {
		t.Errorf("row %v", row)
	}
	// A controller without a template still prints.
	bare := testRC(func(rc *corev1.ReplicationController) { rc.Spec.Template = nil })
	if row := cells(r, bare); row["Containers"] != "" || row["Desired"] != int64(0) || row["Selector"] != "<none>" {
		t.Errorf("row of a bare controller %v", row)
	}

	if f := r.SelectableFields(rc); len(f) != 1 || f["status.replicas"] != "2" {
		t.Errorf("fields %v", f)
	}
}

func TestComponentStatusTable(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "componentstatuses")
	if got, want := columnNames(r), []string{"Name", "Status", "Message", "Error"}; !reflect.DeepEqual(got, want) {
		t.Errorf("columns %v, want %v", got, want)
	}
	cases := []struct {
		name  string
		conds []corev1.ComponentCondition
		want  []interface{}
	}{
		{"healthy", []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}}, []interface{}{"x", "Healthy", "ok", ""}},
		{"unhealthy", []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: "gone"}}, []interface{}{"x", "Unhealthy", "", "gone"}},
		{"unknown status is unhealthy", []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionUnknown}}, []interface{}{"x", "Unhealthy", "", ""}},
		{"no condition", nil, []interface{}{"x", "Unknown", "", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Conditions: tc.conds}
			if got := r.Table.Cells(cs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("cells %v, want %v", got, tc.want)
			}
		})
	}
	if r.Namespaced || !reflect.DeepEqual(r.Verbs, []string{"get", "list"}) {
		t.Errorf("namespaced %v verbs %v", r.Namespaced, r.Verbs)
	}
}
