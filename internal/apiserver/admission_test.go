package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// recorder is an admission plugin that mutates and validates every
// operation: it records what the chain showed it and refuses what refuse
// says to.
type recorder struct {
	mu     sync.Mutex
	calls  []string
	refuse func(phase string, a *admission.Attributes) error
}

func (*recorder) Handles(admission.Operation) bool { return true }

func (r *recorder) Admit(_ context.Context, a *admission.Attributes) error {
	return r.record("admit", a)
}

func (r *recorder) Validate(_ context.Context, a *admission.Attributes) error {
	return r.record("validate", a)
}

// record notes "phase OP resource/sub Kind ns/name obj=… old=… dry=… user".
func (r *recorder) record(phase string, a *admission.Attributes) error {
	user := "-"
	if a.User != nil {
		user = a.User.Name
	}
	res := a.Resource.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	line := fmt.Sprintf("%s %s %s %s %s/%s obj=%v old=%v dry=%v %s", phase, a.Operation, res, a.Kind.Kind,
		a.Namespace, a.Name, a.Object != nil, a.OldObject != nil, a.DryRun, user)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, line)
	if r.refuse != nil {
		return r.refuse(phase, a)
	}
	return nil
}

// take returns the calls since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

func withAdmission(plugins ...admission.Interface) envOption {
	return withConfig(func(c *Config) { c.AdmissionPlugins = plugins })
}

// TestAdmissionPoints: every write path calls the chain with the
// attributes upstream gives its plugins, mutating before validating.
func TestAdmissionPoints(t *testing.T) {
	rec := &recorder{}
	e := newEnv(t, withAdmission(rec), withHandler(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), &request.User{Name: "alice"})))
		})
	}))
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	pods := e.cs.CoreV1().Pods("default")
	deps := e.cs.AppsV1().Deployments("default")
	if _, err := deps.Create(ctx, testDeployment("web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"p", "q"} {
		if _, err := pods.Create(ctx, testPod(name, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.createNamespace("doomed")
	rec.take()

	steps := []struct {
		name string
		do   func() error
		want []string
	}{{
		name: "create",
		do: func() error {
			_, err := cms.Create(ctx, testConfigMap("a", nil), metav1.CreateOptions{})
			return err
		},
		want: []string{
			"admit CREATE configmaps ConfigMap default/a obj=true old=false dry=false alice",
			"validate CREATE configmaps ConfigMap default/a obj=true old=false dry=false alice",
		},
	}, {
		name: "dry-run create with a generated name: admitted before the name exists",
		do: func() error {
			cm := testConfigMap("", nil)
			cm.GenerateName = "gen-"
			_, err := cms.Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		},
		want: []string{
			"admit CREATE configmaps ConfigMap default/ obj=true old=false dry=true alice",
			"validate CREATE configmaps ConfigMap default/gen-* obj=true old=false dry=true alice",
		},
	}, {
		name: "update",
		do: func() error {
			cm, _ := cms.Get(ctx, "a", metav1.GetOptions{})
			cm.Data = map[string]string{"k": "v2"}
			_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err
		},
		want: []string{
			"admit UPDATE configmaps ConfigMap default/a obj=true old=true dry=false alice",
			"validate UPDATE configmaps ConfigMap default/a obj=true old=true dry=false alice",
		},
	}, {
		name: "patch is an update",
		do: func() error {
			_, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"v3"}}`), metav1.PatchOptions{})
			return err
		},
		want: []string{
			"admit UPDATE configmaps ConfigMap default/a obj=true old=true dry=false alice",
			"validate UPDATE configmaps ConfigMap default/a obj=true old=true dry=false alice",
		},
	}, {
		name: "apply of a new object is a create",
		do: func() error {
			_, err := cms.Patch(ctx, "applied", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"}}`), metav1.PatchOptions{FieldManager: "me"})
			return err
		},
		want: []string{
			"admit CREATE configmaps ConfigMap default/applied obj=true old=false dry=false alice",
			"validate CREATE configmaps ConfigMap default/applied obj=true old=false dry=false alice",
		},
	}, {
		name: "status",
		do: func() error {
			p, _ := pods.Get(ctx, "p", metav1.GetOptions{})
			p.Status.Message = "hi"
			_, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		},
		want: []string{
			"admit UPDATE pods/status Pod default/p obj=true old=true dry=false alice",
			"validate UPDATE pods/status Pod default/p obj=true old=true dry=false alice",
		},
	}, {
		name: "binding",
		do: func() error {
			return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
		},
		want: []string{
			"admit CREATE pods/binding Binding default/p obj=true old=false dry=false alice",
			"validate CREATE pods/binding Binding default/p obj=true old=false dry=false alice",
		},
	}, {
		name: "legacy binding is admitted as bindings",
		do: func() error {
			return e.cs.CoreV1().RESTClient().Post().Namespace("default").Resource("bindings").
				Body(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Target: corev1.ObjectReference{Name: "n1"}}).Do(ctx).Error()
		},
		want: []string{
			"admit CREATE bindings Binding default/q obj=true old=false dry=false alice",
			"validate CREATE bindings Binding default/q obj=true old=false dry=false alice",
		},
	}, {
		name: "scale sees Scales, and the deployment's write is not admitted again",
		do: func() error {
			sc, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			sc.Spec.Replicas = 3
			_, err = deps.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{})
			return err
		},
		want: []string{
			"admit UPDATE deployments/scale Scale default/web obj=true old=true dry=false alice",
			"validate UPDATE deployments/scale Scale default/web obj=true old=true dry=false alice",
		},
	}, {
		name: "eviction; the pod's delete is not admitted again",
		do: func() error {
			return pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}})
		},
		want: []string{
			"admit CREATE pods/eviction Eviction default/p obj=true old=false dry=false alice",
			"validate CREATE pods/eviction Eviction default/p obj=true old=false dry=false alice",
		},
	}, {
		name: "delete: admitted without objects, validated with the stored one",
		do:   func() error { return cms.Delete(ctx, "a", metav1.DeleteOptions{}) },
		want: []string{
			"admit DELETE configmaps ConfigMap default/a obj=false old=false dry=false alice",
			"validate DELETE configmaps ConfigMap default/a obj=false old=true dry=false alice",
		},
	}, {
		name: "namespace delete, then finalize",
		do: func() error {
			if err := e.cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
				return err
			}
			ns, err := e.cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
			if err != nil {
				return err
			}
			ns.Spec.Finalizers = nil
			_, err = e.cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
			return err
		},
		want: []string{
			"admit DELETE namespaces Namespace /doomed obj=false old=false dry=false alice",
			"validate DELETE namespaces Namespace /doomed obj=false old=true dry=false alice",
			"admit UPDATE namespaces/finalize Namespace /doomed obj=true old=true dry=false alice",
			"validate UPDATE namespaces/finalize Namespace /doomed obj=true old=true dry=false alice",
		},
	}}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := collapseRetries(rec.take())
		if len(got) == 2 && strings.HasPrefix(got[1], "validate CREATE configmaps ConfigMap default/gen-") {
			got[1] = strings.Replace(got[1], got[1][strings.Index(got[1], "gen-"):strings.Index(got[1], " obj=")], "gen-*", 1)
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("%s: chain saw\n\t%s\nwant\n\t%s", s.name, strings.Join(got, "\n\t"), strings.Join(s.want, "\n\t"))
		}
	}
}

// collapseRetries drops an admit/validate pair identical to the pair
// before it: an update that loses its compare-and-swap (the watch cache a
// write behind, more often under the race detector) is admitted again on
// the next attempt, as upstream's GuaranteedUpdate does, and the test
// cares about what each attempt sees, not how many there were.
func collapseRetries(seen []string) []string {
	out := make([]string, 0, len(seen))
	for i := 0; i < len(seen); i += 2 {
		if i+1 < len(seen) && len(out) >= 2 && seen[i] == out[len(out)-2] && seen[i+1] == out[len(out)-1] {
			continue
		}
		out = append(out, seen[i:min(i+2, len(seen))]...)
	}
	return out
}

// TestAdmissionRefusal: a refusal reaches the client as the plugin's
// Status, nothing is stored, and a refused Service write gives back what
// it was allocated and keeps what it held.
func TestAdmissionRefusal(t *testing.T) {
	rec := &recorder{}
	refuse := func(op admission.Operation) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.refuse = func(phase string, a *admission.Attributes) error {
			if a.Operation == op && phase == "validate" {
				return apierrors.NewForbidden(a.GroupResource(), a.Name, errors.New("refused"))
			}
			return nil
		}
	}
	e := newEnv(t, smallRanges, withAdmission(rec))
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")

	// More refused creates than the range (6 addresses, 3 node ports)
	// holds: each must give back what it was allocated.
	refuse(admission.Create)
	for i := 0; i < 8; i++ {
		_, err := svcs.Create(ctx, testService(fmt.Sprintf("s%d", i), corev1.ServiceTypeNodePort, 0), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("create s%d: want 403 refused, got %v", i, err)
		}
	}
	if _, err := svcs.Get(ctx, "s0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused create was stored: %v", err)
	}
	refuse(admission.Update)
	var first *corev1.Service
	for i := 0; i < 3; i++ {
		svc, err := svcs.Create(ctx, testService(fmt.Sprintf("s%d", i), corev1.ServiceTypeNodePort, 0), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create s%d after refusals: %v", i, err)
		}
		if first == nil {
			first = svc
		}
	}

	// A refused update to ClusterIP keeps the node port it would free.
	toClusterIP := first.DeepCopy()
	toClusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	toClusterIP.Spec.Ports[0].NodePort = 0
	toClusterIP.Spec.ExternalTrafficPolicy = ""
	if _, err := svcs.Update(ctx, toClusterIP, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("refused update: want 403, got %v", err)
	}
	refuse(admission.Delete)
	steal := testService("steal", corev1.ServiceTypeNodePort, first.Spec.Ports[0].NodePort)
	if _, err := svcs.Create(ctx, steal, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a refused update freed its node port: %v", err)
	}

	// A refused delete leaves the object and what it holds.
	if err := svcs.Delete(ctx, first.Name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("refused delete: want 403, got %v", err)
	}
	if _, err := svcs.Get(ctx, first.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("a refused delete removed the object: %v", err)
	}
	if _, err := svcs.Create(ctx, steal, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a refused delete freed a node port: %v", err)
	}
}
