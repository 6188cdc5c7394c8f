package upstream

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

func TestObjectConvertorCopiesWithinAType(t *testing.T) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	o := ObjectInterfaces(s)
	// What a webhook does: a versioned copy of the admitted object ...
	admitted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	versioned, err := apiadmission.ConvertToGVK(admitted, gvk, o)
	if err != nil {
		t.Fatal(err)
	}
	if versioned == admitted || versioned.GetObjectKind().GroupVersionKind() != gvk {
		t.Fatalf("versioned object: same pointer %v, kind %v", versioned == admitted, versioned.GetObjectKind().GroupVersionKind())
	}
	// ... patched, and copied back: the admitted object changes, its
	// (empty) TypeMeta does not.
	versioned.(*corev1.ConfigMap).Data["k"] = "patched"
	if admitted.Data["k"] != "v" {
		t.Fatal("the versioned copy shares the admitted object's map")
	}
	if err := o.GetObjectConvertor().Convert(versioned, admitted, nil); err != nil {
		t.Fatal(err)
	}
	if admitted.Data["k"] != "patched" || !admitted.GetObjectKind().GroupVersionKind().Empty() {
		t.Errorf("after copy back: data %v, kind %v", admitted.Data, admitted.GetObjectKind().GroupVersionKind())
	}
	// Custom resources are Unstructured and already carry their kind.
	cr := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget", "spec": map[string]interface{}{"a": int64(1)}}}
	crGVK := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	same, err := apiadmission.ConvertToGVK(cr, crGVK, o)
	if err != nil || same != cr {
		t.Fatalf("custom resource: %v %v", same, err)
	}
	patched := cr.DeepCopy()
	patched.Object["spec"] = map[string]interface{}{"a": int64(2)}
	if err := o.GetObjectConvertor().Convert(patched, cr, nil); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(cr.Object, "spec", "a"); v != 2 || cr.GetKind() != "Widget" {
		t.Errorf("custom resource after copy back: %v", cr.Object)
	}
	if _, err := o.GetObjectCreater().New(crGVK); err != nil {
		t.Errorf("creating an object of an unregistered kind: %v", err)
	}
}

type sink []string

func (s *sink) AddWarning(text string) { *s = append(*s, text) }

type annotations map[string]string

func (a annotations) AddAnnotation(key, value string) { a[key] = value }

func TestAttributes(t *testing.T) {
	var warnings sink
	ctx := request.WithWarnings(context.Background(), &warnings)
	cm := &corev1.ConfigMap{}
	a := &admission.Attributes{
		Operation: admission.Update, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
		Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: "ns", Name: "n", Object: cm, DryRun: true,
		User: &request.User{Name: "alice", UID: "1", Groups: []string{"g"}, Extra: map[string][]string{"x": {"y"}}},
	}
	ctx, attr := Attributes(ctx, a)
	u := attr.GetUserInfo()
	if u.GetName() != "alice" || u.GetUID() != "1" || u.GetGroups()[0] != "g" || u.GetExtra()["x"][0] != "y" {
		t.Errorf("user %+v", u)
	}
	if attr.GetObject() != cm || attr.GetOldObject() != nil || !attr.IsDryRun() || attr.GetOperation() != apiadmission.Update || attr.GetName() != "n" {
		t.Errorf("attributes %+v", attr)
	}
	warning.AddWarning(ctx, "", "careful")
	if len(warnings) != 1 || warnings[0] != "careful" {
		t.Errorf("warnings %q", warnings)
	}
	// Audit annotations reach the request's audit event; Request-level
	// ones (a webhook's patch) do not.
	audited := annotations{}
	_, attr = Attributes(request.WithAuditAnnotations(context.Background(), audited), a)
	if err := attr.AddAnnotation("validation.policy.admission.k8s.io/validation_failure", "[...]"); err != nil {
		t.Fatal(err)
	}
	if err := attr.AddAnnotationWithLevel("patch.webhook.admission.k8s.io/round_0_index_0", "{}", auditinternal.LevelRequest); err != nil {
		t.Fatal(err)
	}
	if len(audited) != 1 || audited["validation.policy.admission.k8s.io/validation_failure"] != "[...]" {
		t.Errorf("audit annotations %v", audited)
	}
	// The server's own writes have no user; upstream's plugins get an
	// empty one rather than nil.
	a.User = nil
	if _, attr = Attributes(context.Background(), a); attr.GetUserInfo() == nil || attr.GetUserInfo().GetName() != "" {
		t.Errorf("user of a write without one: %v", attr.GetUserInfo())
	}
}

func TestInProcessTransportStreams(t *testing.T) {
	ended := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := request.UserFrom(r.Context())
		w.Header().Set("X-User", u.Name)
		w.WriteHeader(http.StatusAccepted)
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "line %d\n", i); err != nil {
				ended <- err
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				ended <- r.Context().Err()
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	cfg := InProcessConfig(h, &request.User{Name: "system:apiserver"})
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/watch", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-User") != "system:apiserver" {
		t.Fatalf("response %d, header %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 3; i++ {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("line %d\n", i) {
			t.Fatalf("line %d: %q %v", i, line, err)
		}
	}
	// Closing the body ends the handler's request.
	_ = resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler kept running after the body was closed")
	}
}

func TestConfiguredCounts(t *testing.T) {
	var nilC *Configured
	if !nilC.Any() {
		t.Error("a nil Configured must always let the plugin run")
	}
	c := &Configured{}
	if c.Any() {
		t.Error("nothing configured yet")
	}
	c.n.Add(1)
	if !c.Any() {
		t.Error("one configured")
	}
}
