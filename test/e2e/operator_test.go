package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.myriad.io", Version: "v1", Kind: "Widget"}

// widgetReconciler is a small operator as controller-runtime users write
// them: each Widget gets a ConfigMap it owns carrying spec.message, and
// status.observedMessage says what the ConfigMap holds.
type widgetReconciler struct{ client.Client }

func (r *widgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	if err := r.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if w.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	msg, _, _ := unstructured.NestedString(w.Object, "spec", "message")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "widget-" + w.GetName(), Namespace: w.GetNamespace()}}
	if _, err := ctrl.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"message": msg}
		return ctrl.SetControllerReference(w, cm, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	if observed, _, _ := unstructured.NestedString(w.Object, "status", "observedMessage"); observed != msg {
		if err := unstructured.SetNestedField(w.Object, msg, "status", "observedMessage"); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Status().Update(ctx, w); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// TestControllerRuntimeOperator runs a controller-runtime manager (with
// leader election) against myriad up: it reconciles custom resources of a
// CRD installed with kubectl through informers on the custom resource and
// on the ConfigMaps it owns, and the garbage collector removes what it
// made when a Widget is deleted.
func TestControllerRuntimeOperator(t *testing.T) {
	const ns = "operator-e2e"
	shared.mustKubectl(t, "", "create", "namespace", ns)
	defer func() { _, _ = shared.kubectl(t, "", "delete", "namespace", ns, "--wait=false") }()
	shared.mustKubectl(t, "", "apply", "-f", "testdata/widgets-crd.yaml")
	defer func() { _, _ = shared.kubectl(t, "", "delete", "-f", "testdata/widgets-crd.yaml", "--wait=false") }()
	shared.mustKubectl(t, "", "wait", "--for", "condition=Established", "--timeout=30s", "crd/widgets.example.myriad.io")

	// controller-runtime's logs go where client-go's do (klog, stderr).
	ctrl.SetLogger(klog.Background())
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(shared.restConfig(t), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "widgets.example.myriad.io",
		LeaderElectionNamespace: ns,
	})
	if err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(widgetGVK)
	if err := ctrl.NewControllerManagedBy(mgr).For(widget).Owns(&corev1.ConfigMap{}).Complete(&widgetReconciler{mgr.GetClient()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	select {
	case <-mgr.Elected():
	case err := <-done:
		t.Fatalf("manager stopped before it was elected: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("manager not elected within 30s")
	}

	c := shared.client(t)
	configMapSays := func(want string) func() bool {
		return func() bool {
			cm, err := c.CoreV1().ConfigMaps(ns).Get(context.Background(), "widget-w1", metav1.GetOptions{})
			return err == nil && cm.Data["message"] == want
		}
	}
	shared.mustKubectl(t, fmt.Sprintf("apiVersion: example.myriad.io/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: %s\nspec:\n  message: hello\n", ns), "apply", "-f", "-")
	waitFor(t, 30*time.Second, configMapSays("hello"))
	waitFor(t, 30*time.Second, func() bool {
		out, _ := shared.kubectl(t, "", "get", "widget", "w1", "-n", ns, "-o", "jsonpath={.status.observedMessage}")
		return out == "hello"
	})
	if out := shared.mustKubectl(t, "", "get", "wd", "-n", ns); !strings.Contains(out, "MESSAGE") || !strings.Contains(out, "OBSERVED") || !strings.Contains(out, "hello") {
		t.Fatalf("kubectl get wd:\n%s", out)
	}

	shared.mustKubectl(t, "", "patch", "widget", "w1", "-n", ns, "--type", "merge", "-p", `{"spec":{"message":"bye"}}`)
	waitFor(t, 30*time.Second, configMapSays("bye"))

	// The schema's maxLength is enforced, with the field path.
	long := fmt.Sprintf(`{"spec":{"message":%q}}`, strings.Repeat("x", 80))
	if out, err := shared.kubectl(t, "", "patch", "widget", "w1", "-n", ns, "--type", "merge", "-p", long); err == nil || !strings.Contains(out, "spec.message") || !strings.Contains(out, "64") {
		t.Fatalf("a message past maxLength: err %v\n%s", err, out)
	}

	lease, err := c.CoordinationV1().Leases(ns).Get(context.Background(), "widgets.example.myriad.io", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatalf("leader election lease: %+v, %v", lease, err)
	}

	shared.mustKubectl(t, "", "delete", "widget", "w1", "-n", ns)
	waitFor(t, 60*time.Second, func() bool {
		_, err := c.CoreV1().ConfigMaps(ns).Get(context.Background(), "widget-w1", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
