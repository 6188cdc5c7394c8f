package patch

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/myriad-k8s/myriad/internal/openapi"
)

var (
	tcOnce sync.Once
	tc     managedfields.TypeConverter
	tcErr  error
)

// typeConverter is built once per test binary: it is immutable, and
// building it is the slow part.
func typeConverter(t testing.TB) managedfields.TypeConverter {
	t.Helper()
	tcOnce.Do(func() {
		var o *openapi.OpenAPI
		o, tcErr = openapi.New(openapi.Config{Resources: []openapi.Resource{
			{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: "pods", Namespaced: true},
			{GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Resource: "deployments", Namespaced: true},
		}})
		if tcErr == nil {
			tc, tcErr = o.TypeConverter()
		}
	})
	if tcErr != nil {
		t.Fatal(tcErr)
	}
	return tc
}

func newFieldManagers(t testing.TB) *FieldManagers {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	f, err := NewFieldManagers(FieldManagersConfig{TypeConverter: typeConverter(t), Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// managers summarises managedFields as "manager/operation[/subresource]:
// field,field" with the top-level fields each entry owns under spec.
func managers(t *testing.T, obj runtime.Object) []string {
	t.Helper()
	var out []string
	for _, e := range obj.(metav1.Object).GetManagedFields() {
		var fields map[string]interface{}
		if e.FieldsV1 != nil {
			if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
				t.Fatal(err)
			}
		}
		var owned []string
		for k := range fields {
			owned = append(owned, k)
		}
		sort.Strings(owned)
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s+":"+strings.Join(owned, ","))
	}
	sort.Strings(out)
	return out
}

func TestUpdateTracksManagedFields(t *testing.T) {
	f := newFieldManagers(t)
	pod := testPod()
	pod.TypeMeta = metav1.TypeMeta{} // as read from storage

	created, err := f.Update(&corev1.Pod{}, pod, "creator", "")
	if err != nil {
		t.Fatal(err)
	}
	want(t, managers(t, created), []string{"creator/Update:f:metadata,f:spec"})
	entry := created.(*corev1.Pod).ManagedFields[0]
	if entry.APIVersion != "v1" || entry.FieldsType != "FieldsV1" || entry.Time == nil {
		t.Errorf("entry %+v", entry)
	}
	if !strings.Contains(string(entry.FieldsV1.Raw), `"k:{\"name\":\"a\"}"`) {
		t.Errorf("containers not keyed by name: %s", entry.FieldsV1.Raw)
	}

	live := created.DeepCopyObject().(*corev1.Pod)
	live.UID = "uid-1" // stored
	edited := live.DeepCopy()
	edited.Spec.Containers[1].Image = "redis:2"
	updated, err := f.Update(live, edited, "editor", "")
	if err != nil {
		t.Fatal(err)
	}
	want(t, managers(t, updated), []string{"creator/Update:f:metadata,f:spec", "editor/Update:f:spec"})

	withStatus := updated.DeepCopyObject().(*corev1.Pod)
	withStatus.Status.Phase = corev1.PodRunning
	status, err := f.Update(updated, withStatus, "kubelet", "status")
	if err != nil {
		t.Fatal(err)
	}
	want(t, managers(t, status), []string{"creator/Update:f:metadata,f:spec", "editor/Update:f:spec", "kubelet/Update/status:f:status"})
}

const applyPod = `apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: default
  labels:
    app: web
spec:
  containers:
  - name: a
    image: %s
`

func podConfig(image string) []byte { return []byte(strings.ReplaceAll(applyPod, "%s", image)) }

func TestServerSideApply(t *testing.T) {
	f := newFieldManagers(t)

	// Apply-create: live is an empty object of the kind.
	created, _, err := f.Apply(&corev1.Pod{}, podConfig("nginx:1"), "alice", ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want(t, podImages(created), "a=nginx:1")
	want(t, managers(t, created), []string{"alice/Apply:f:metadata,f:spec"})
	live := created.DeepCopyObject().(*corev1.Pod)
	live.UID = "uid-1"

	// The same manager changes its own field.
	again, _, err := f.Apply(live, podConfig("nginx:2"), "alice", ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want(t, podImages(again), "a=nginx:2")
	want(t, managers(t, again), []string{"alice/Apply:f:metadata,f:spec"})

	// Another manager wants a different value: conflict, upstream-shaped.
	_, _, err = f.Apply(again, podConfig("nginx:3"), "bob", ApplyOptions{})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusConflict || !apierrors.IsConflict(err) {
		t.Fatalf("want a 409 Conflict, got %v", err)
	}
	st := status.Status()
	if st.Details == nil || len(st.Details.Causes) != 1 ||
		st.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict ||
		st.Details.Causes[0].Field != `.spec.containers[name="a"].image` ||
		st.Details.Causes[0].Message != `conflict with "alice"` {
		t.Errorf("conflict details %+v", st.Details)
	}
	if !strings.HasPrefix(st.Message, `Apply failed with 1 conflict: conflict with "alice": .spec.containers[name="a"].image`) {
		t.Errorf("conflict message %q", st.Message)
	}

	// Same value from another manager: shared ownership, no conflict.
	shared, _, err := f.Apply(again, podConfig("nginx:2"), "carol", ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want(t, managers(t, shared), []string{"alice/Apply:f:metadata,f:spec", "carol/Apply:f:metadata,f:spec"})

	// Force takes the field over.
	forced, _, err := f.Apply(again, podConfig("nginx:3"), "bob", ApplyOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	want(t, podImages(forced), "a=nginx:3")
	for _, e := range forced.(*corev1.Pod).ManagedFields {
		if e.Manager == "alice" && strings.Contains(string(e.FieldsV1.Raw), "f:image") {
			t.Errorf("alice still owns the image: %s", e.FieldsV1.Raw)
		}
	}

	// A plain update after apply is tracked alongside.
	edited := forced.DeepCopyObject().(*corev1.Pod)
	edited.Labels["tier"] = "front"
	updated, err := f.Update(forced, edited, "kubectl-label", "")
	if err != nil {
		t.Fatal(err)
	}
	want(t, managers(t, updated), []string{"alice/Apply:f:metadata,f:spec", "bob/Apply:f:metadata,f:spec", "kubectl-label/Update:f:metadata"})
}

func TestServerSideApplyErrors(t *testing.T) {
	f := newFieldManagers(t)
	for _, tc := range []struct {
		name    string
		live    runtime.Object
		config  string
		manager string
		opts    ApplyOptions
		code    int32
	}{
		{name: "no manager", live: &corev1.Pod{}, config: string(podConfig("x")), code: http.StatusUnprocessableEntity},
		{name: "invalid YAML", live: &corev1.Pod{}, config: "metadata: [", manager: "m", code: http.StatusBadRequest},
		{name: "not an object", live: &corev1.Pod{}, config: "null", manager: "m", code: http.StatusBadRequest},
		{name: "other kind", live: &corev1.Pod{}, config: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: p}\n", manager: "m", code: http.StatusBadRequest},
		{name: "other version", live: &corev1.Pod{}, config: "apiVersion: v2\nkind: Pod\nmetadata: {name: p}\n", manager: "m", code: http.StatusBadRequest},
		{name: "unknown field", live: &corev1.Pod{}, config: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {bogus: 1}\n", manager: "m", code: http.StatusBadRequest},
		{name: "managedFields set", live: &corev1.Pod{}, config: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, managedFields: [{manager: x}]}\n", manager: "m", code: http.StatusBadRequest},
		{name: "duplicate field strict", live: &corev1.Pod{}, config: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, name: q}\n", manager: "m",
			opts: ApplyOptions{FieldValidation: metav1.FieldValidationStrict}, code: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.Apply(tc.live, []byte(tc.config), tc.manager, tc.opts)
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				t.Fatalf("error %v (%T) is not a StatusError", err, err)
			}
			if status.Status().Code != tc.code {
				t.Errorf("code %d, want %d: %v", status.Status().Code, tc.code, err)
			}
		})
	}
}

// TestApplyThenPatch runs the API server's PATCH path: a strategic merge
// patch through Apply, then managedFields through Update.
func TestApplyThenPatch(t *testing.T) {
	f := newFieldManagers(t)
	dep := testDeployment()
	created, err := f.Update(&appsv1.Deployment{}, dep, "creator", "")
	if err != nil {
		t.Fatal(err)
	}
	live := created.(*appsv1.Deployment)
	live.UID = "uid-1"
	r, err := Apply(types.StrategicMergePatchType, live, []byte(`{"spec":{"replicas":5}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	patched, err := f.Update(live, r.Object, "kubectl-scale", "")
	if err != nil {
		t.Fatal(err)
	}
	want(t, *patched.(*appsv1.Deployment).Spec.Replicas, int32(5))
	want(t, managers(t, patched), []string{"creator/Update:f:spec", "kubectl-scale/Update:f:spec"})
}

// TestServerSideApplyDeployment applies integers, quantities and a nested
// keyed list, which the YAML decoding must hand to the schema intact.
func TestServerSideApplyDeployment(t *testing.T) {
	f := newFieldManagers(t)
	config := []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: a
        image: nginx:1
        ports: [{containerPort: 80, protocol: TCP}]
        resources: {limits: {cpu: 500m, memory: 1Gi}}
`)
	out, _, err := f.Apply(&appsv1.Deployment{}, config, "alice", ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := out.(*appsv1.Deployment)
	want(t, *d.Spec.Replicas, int32(3))
	c := d.Spec.Template.Spec.Containers[0]
	want(t, c.Ports[0].ContainerPort, int32(80))
	want(t, c.Resources.Limits.Cpu().String(), "500m")
	if !strings.Contains(string(d.ManagedFields[0].FieldsV1.Raw), `"k:{\"containerPort\":80,\"protocol\":\"TCP\"}"`) {
		t.Errorf("ports not keyed by containerPort and protocol: %s", d.ManagedFields[0].FieldsV1.Raw)
	}
}
