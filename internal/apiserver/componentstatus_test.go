package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// TestComponentStatuses checks each entry's source: the leader Leases of
// the scheduler and the controller manager (absent, expired, fresh,
// released) and the store's health for etcd-0; and that the resource is
// read-only.
func TestComponentStatuses(t *testing.T) {
	now := time.Now()
	fc := testingclock.NewFakeClock(now)
	e := newEnv(t, withConfig(func(c *Config) { c.Clock = fc }))
	ctx := context.Background()

	conds := func() map[string]corev1.ComponentCondition {
		t.Helper()
		l, err := e.cs.CoreV1().ComponentStatuses().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]corev1.ComponentCondition{}
		for _, cs := range l.Items {
			if len(cs.Conditions) != 1 || cs.Conditions[0].Type != corev1.ComponentHealthy {
				t.Fatalf("%s: conditions %+v", cs.Name, cs.Conditions)
			}
			out[cs.Name] = cs.Conditions[0]
		}
		if len(out) != 3 {
			t.Fatalf("entries %v, want scheduler, controller-manager and etcd-0", out)
		}
		return out
	}
	healthy := func(c corev1.ComponentCondition) bool {
		return c.Status == corev1.ConditionTrue && c.Message == "ok" && c.Error == ""
	}

	c := conds()
	if !healthy(c["etcd-0"]) {
		t.Errorf("etcd-0 %+v, want healthy", c["etcd-0"])
	}
	for _, name := range []string{"scheduler", "controller-manager"} {
		if c[name].Status != corev1.ConditionFalse || !strings.Contains(c[name].Error, "no leader Lease") {
			t.Errorf("%s without a Lease: %+v", name, c[name])
		}
	}

	lease := func(name, holder string, renewed time.Time) {
		t.Helper()
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr(int32(15)),
				RenewTime: &metav1.MicroTime{Time: renewed}},
		}
		leases := e.cs.CoordinationV1().Leases(metav1.NamespaceSystem)
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		} else if err == nil {
			l.ResourceVersion = cur.ResourceVersion
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	lease("kube-scheduler", "a", now.Add(-5*time.Second))
	lease("kube-controller-manager", "b", now.Add(-20*time.Second))
	c = conds()
	if !healthy(c["scheduler"]) {
		t.Errorf("scheduler renewed 5s ago: %+v", c["scheduler"])
	}
	if cm := c["controller-manager"]; cm.Status != corev1.ConditionFalse || !strings.Contains(cm.Error, "last renewed 20s ago") {
		t.Errorf("controller-manager renewed 20s ago with a 15s lease: %+v", cm)
	}
	// Released at shutdown: no holder.
	lease("kube-scheduler", "", now)
	if s := conds()["scheduler"]; s.Status != corev1.ConditionFalse || !strings.Contains(s.Error, "no holder") {
		t.Errorf("released scheduler Lease: %+v", s)
	}

	// Get by name, the deprecation warning, and a missing name.
	r := e.do(http.MethodGet, "/api/v1/componentstatuses/etcd-0", nil)
	var cs corev1.ComponentStatus
	if err := json.Unmarshal(r.body, &cs); r.code != http.StatusOK || err != nil || cs.Kind != "ComponentStatus" || cs.Name != "etcd-0" {
		t.Errorf("get etcd-0: %d %s", r.code, r.body)
	}
	if w := r.header.Get("Warning"); !strings.Contains(w, componentStatusDeprecation) {
		t.Errorf("warning header %q", w)
	}
	e.do(http.MethodGet, "/api/v1/componentstatuses/nope", nil).wantStatus(t, http.StatusNotFound, metav1.StatusReasonNotFound)

	// Protobuf, as client-go's core clients speak it.
	if l, err := e.proto.CoreV1().ComponentStatuses().List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 3 {
		t.Errorf("protobuf list: %v %+v", err, l)
	}
	if cs, err := e.proto.CoreV1().ComponentStatuses().Get(ctx, "scheduler", metav1.GetOptions{}); err != nil || cs.Name != "scheduler" || len(cs.Conditions) != 1 {
		t.Errorf("protobuf get: %v %+v", err, cs)
	}

	// Selectors, the table.
	l, err := e.cs.CoreV1().ComponentStatuses().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=etcd-0"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "etcd-0" {
		t.Errorf("field-selected list: %v %+v", err, l)
	}
	if l, err := e.cs.CoreV1().ComponentStatuses().List(ctx, metav1.ListOptions{LabelSelector: "a=b"}); err != nil || len(l.Items) != 0 {
		t.Errorf("label-selected list: %v %+v", err, l)
	}
	r = e.do(http.MethodGet, "/api/v1/componentstatuses", nil, "Accept: application/json;as=Table;v=v1;g=meta.k8s.io")
	var table metav1.Table
	if err := json.Unmarshal(r.body, &table); r.code != http.StatusOK || err != nil || len(table.Rows) != 3 || len(table.ColumnDefinitions) != 4 {
		t.Errorf("table: %d %s", r.code, r.body)
	}

	// Read-only.
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/componentstatuses"},
		{http.MethodDelete, "/api/v1/componentstatuses/etcd-0"},
		{http.MethodPut, "/api/v1/componentstatuses/etcd-0"},
		{http.MethodGet, "/api/v1/componentstatuses?watch=true"},
	} {
		e.do(tc.method, tc.path, []byte(`{"metadata":{"name":"etcd-0"}}`), "Content-Type: application/json").
			wantStatus(t, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed)
	}
}
