package patch

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "a", Image: "nginx:1"},
			{Name: "b", Image: "redis:1"},
		}},
	}
}

func testDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "nginx:1"}, {Name: "b", Image: "redis:1"}}},
			},
		},
	}
}

func images(containers []corev1.Container) string {
	var s []string
	for _, c := range containers {
		s = append(s, c.Name+"="+c.Image)
	}
	return strings.Join(s, ",")
}

func podImages(o runtime.Object) string { return images(o.(*corev1.Pod).Spec.Containers) }

func TestApply(t *testing.T) {
	const (
		jp  = types.JSONPatchType
		mp  = types.MergePatchType
		smp = types.StrategicMergePatchType
	)
	for _, tc := range []struct {
		name     string
		pt       types.PatchType
		original runtime.Object
		opts     Options
		patch    string
		// check inspects a successful result; code is the expected HTTP
		// status of a failure (0: success expected).
		check    func(t *testing.T, r Result)
		code     int
		contains string
	}{
		{name: "json patch replaces an image", pt: jp, original: testPod(),
			patch: `[{"op":"replace","path":"/spec/containers/1/image","value":"redis:2"}]`,
			check: func(t *testing.T, r Result) { want(t, podImages(r.Object), "a=nginx:1,b=redis:2") }},
		{name: "json patch adds a label", pt: jp, original: testPod(),
			patch: `[{"op":"add","path":"/metadata/labels/tier","value":"front"}]`,
			check: func(t *testing.T, r Result) { want(t, r.Object.(*corev1.Pod).Labels["tier"], "front") }},
		{name: "json patch test op passes", pt: jp, original: testPod(),
			patch: `[{"op":"test","path":"/metadata/name","value":"p"},{"op":"remove","path":"/metadata/labels"}]`,
			check: func(t *testing.T, r Result) { want(t, len(r.Object.(*corev1.Pod).Labels), 0) }},
		{name: "json patch failed test", pt: jp, original: testPod(),
			patch: `[{"op":"test","path":"/metadata/name","value":"q"}]`, code: http.StatusUnprocessableEntity, contains: "test"},
		{name: "json patch missing path", pt: jp, original: testPod(),
			patch: `[{"op":"replace","path":"/spec/nope/x","value":1}]`, code: http.StatusUnprocessableEntity},
		{name: "json patch unknown op", pt: jp, original: testPod(),
			patch: `[{"op":"frobnicate","path":"/metadata/name"}]`, code: http.StatusUnprocessableEntity, contains: "frobnicate"},
		{name: "json patch replaces the document with nothing", pt: jp, original: testPod(),
			patch: `[{"op":"replace","path":""}]`, code: http.StatusUnprocessableEntity},
		{name: "json patch not an array", pt: jp, original: testPod(),
			patch: `{"op":"add"}`, code: http.StatusBadRequest},
		{name: "json patch invalid JSON", pt: jp, original: testPod(), patch: `[{`, code: http.StatusBadRequest},
		{name: "json patch too many ops", pt: jp, original: testPod(),
			patch: "[" + strings.Repeat(`{"op":"test","path":"/kind","value":"Pod"},`, MaxJSONPatchOperations) + `{"op":"test","path":"/kind","value":"Pod"}]`,
			code:  http.StatusRequestEntityTooLarge},
		{name: "json patch changes kind", pt: jp, original: testPod(),
			patch: `[{"op":"replace","path":"/kind","value":"Service"}]`, code: http.StatusUnprocessableEntity, contains: "kind"},
		{name: "json patch removes apiVersion", pt: jp, original: testPod(),
			patch: `[{"op":"remove","path":"/apiVersion"}]`, code: http.StatusUnprocessableEntity, contains: "apiVersion"},
		{name: "json patch wrong value type", pt: jp, original: testPod(),
			patch: `[{"op":"replace","path":"/spec/containers","value":"x"}]`, code: http.StatusUnprocessableEntity},

		{name: "merge patch sets labels and removes one", pt: mp, original: testPod(),
			patch: `{"metadata":{"labels":{"app":null,"tier":"front"}}}`,
			check: func(t *testing.T, r Result) {
				want(t, r.Object.(*corev1.Pod).Labels, map[string]string{"tier": "front"})
			}},
		{name: "merge patch replaces lists whole", pt: mp, original: testPod(),
			patch: `{"spec":{"containers":[{"name":"b","image":"redis:2"}]}}`,
			check: func(t *testing.T, r Result) { want(t, podImages(r.Object), "b=redis:2") }},
		{name: "merge patch invalid JSON", pt: mp, original: testPod(), patch: `{"metadata":`, code: http.StatusBadRequest},
		{name: "merge patch changes apiVersion", pt: mp, original: testPod(),
			patch: `{"apiVersion":"v2"}`, code: http.StatusUnprocessableEntity, contains: "apiVersion"},
		{name: "merge patch null", pt: mp, original: testPod(),
			patch: `null`, code: http.StatusBadRequest},
		{name: "merge patch unknown field warns by default", pt: mp, original: testPod(),
			patch: `{"spec":{"bogus":1}}`,
			check: func(t *testing.T, r Result) { want(t, r.Warnings, []string{`unknown field "spec.bogus"`}) }},
		{name: "merge patch unknown field ignored", pt: mp, original: testPod(), opts: Options{FieldValidation: metav1.FieldValidationIgnore},
			patch: `{"spec":{"bogus":1}}`,
			check: func(t *testing.T, r Result) { want(t, len(r.Warnings), 0) }},
		{name: "merge patch unknown field strict", pt: mp, original: testPod(), opts: Options{FieldValidation: metav1.FieldValidationStrict},
			patch: `{"spec":{"bogus":1}}`, code: http.StatusUnprocessableEntity, contains: `strict decoding error: unknown field "spec.bogus"`},
		{name: "merge patch duplicate field strict", pt: mp, original: testPod(), opts: Options{FieldValidation: metav1.FieldValidationStrict},
			patch: `{"metadata":{"labels":{"x":"1","x":"2"}}}`, code: http.StatusUnprocessableEntity, contains: "duplicate field"},
		{name: "merge patch on a typed object without TypeMeta", pt: mp,
			original: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}},
			opts:     Options{Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}},
			patch:    `{"spec":{"nodeName":"n1"}}`,
			check: func(t *testing.T, r Result) {
				want(t, r.Object.(*corev1.Pod).Spec.NodeName, "n1")
				want(t, r.Object.GetObjectKind().GroupVersionKind().Kind, "Pod")
			}},

		{name: "strategic merge patch merges containers by name", pt: smp, original: testPod(),
			patch: `{"spec":{"containers":[{"name":"b","image":"redis:2"},{"name":"c","image":"busybox"}]}}`,
			check: func(t *testing.T, r Result) { want(t, podImages(r.Object), "a=nginx:1,b=redis:2,c=busybox") }},
		{name: "strategic merge patch deletes a container", pt: smp, original: testPod(),
			patch: `{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}`,
			check: func(t *testing.T, r Result) { want(t, podImages(r.Object), "b=redis:1") }},
		{name: "strategic merge patch on a deployment", pt: smp, original: testDeployment(),
			patch: `{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"a","image":"nginx:2"}]}}}}`,
			check: func(t *testing.T, r Result) {
				d := r.Object.(*appsv1.Deployment)
				want(t, *d.Spec.Replicas, int32(3))
				want(t, images(d.Spec.Template.Spec.Containers), "a=nginx:2,b=redis:1")
			}},
		{name: "strategic merge patch without merge key", pt: smp, original: testPod(),
			patch: `{"spec":{"containers":[{"image":"x"}]}}`, code: http.StatusUnprocessableEntity, contains: "merge key"},
		{name: "strategic merge patch bad directive", pt: smp, original: testPod(),
			patch: `{"$patch":"explode"}`, code: http.StatusUnprocessableEntity, contains: "explode"},
		{name: "strategic merge patch invalid JSON", pt: smp, original: testPod(), patch: `{"spec":[`, code: http.StatusBadRequest},
		{name: "strategic merge patch not an object", pt: smp, original: testPod(), patch: `[1]`, code: http.StatusBadRequest},
		{name: "strategic merge patch changes kind", pt: smp, original: testPod(),
			patch: `{"kind":"Service"}`, code: http.StatusUnprocessableEntity, contains: "kind"},
		{name: "strategic merge patch wrong type", pt: smp, original: testPod(),
			patch: `{"spec":{"nodeName":5}}`, code: http.StatusUnprocessableEntity},
		{name: "strategic merge patch unknown field strict", pt: smp, original: testPod(), opts: Options{FieldValidation: metav1.FieldValidationStrict},
			patch: `{"spec":{"bogus":true}}`, code: http.StatusUnprocessableEntity, contains: "bogus"},

		{name: "apply is not a plain patch", pt: types.ApplyYAMLPatchType, original: testPod(), patch: `{}`, code: http.StatusUnsupportedMediaType},
		{name: "strategic merge patch on a custom resource", pt: smp, original: customResource(), patch: `{}`, code: http.StatusUnsupportedMediaType},
		{name: "merge patch on a custom resource", pt: mp, original: customResource(),
			patch: `{"spec":{"size":3}}`,
			check: func(t *testing.T, r Result) {
				size, _, _ := unstructured.NestedInt64(r.Object.(*unstructured.Unstructured).Object, "spec", "size")
				want(t, size, int64(3))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.original.DeepCopyObject()
			r, err := Apply(tc.pt, tc.original, []byte(tc.patch), tc.opts)
			if !apiequal(before, tc.original) {
				t.Error("original was modified")
			}
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got, wantT := typeName(r.Object), typeName(tc.original); got != wantT {
					t.Errorf("result type %s, want %s", got, wantT)
				}
				tc.check(t, r)
				return
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				t.Fatalf("error %v (%T) is not a StatusError", err, err)
			}
			if got := status.Status().Code; got != int32(tc.code) {
				t.Errorf("code %d, want %d: %v", got, tc.code, err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not mention %q", err, tc.contains)
			}
		})
	}
}

func customResource() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w"},
		"spec":     map[string]interface{}{"size": int64(1)},
	}}
}
