package registry

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

func TestAPIServiceValidation(t *testing.T) {
	port := int32(443)
	remote := func(mut func(*apiregistrationv1.APIService)) *apiregistrationv1.APIService {
		a := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io"}, Spec: apiregistrationv1.APIServiceSpec{
			Group: "metrics.k8s.io", Version: "v1beta1", GroupPriorityMinimum: 100, VersionPriority: 100,
			Service: &apiregistrationv1.ServiceReference{Namespace: "kube-system", Name: "metrics-server", Port: &port},
		}}
		if mut != nil {
			mut(a)
		}
		return a
	}
	cases := []struct {
		name string
		obj  *apiregistrationv1.APIService
		want string // substring of the joined errors; "" for none
	}{
		{"valid remote", remote(nil), ""},
		{"valid local", remote(func(a *apiregistrationv1.APIService) { a.Spec.Service = nil }), ""},
		{"name not version.group", remote(func(a *apiregistrationv1.APIService) { a.Name = "metrics" }),
			"metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\""},
		{"group priority", remote(func(a *apiregistrationv1.APIService) { a.Spec.GroupPriorityMinimum = 0 }),
			"spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"},
		{"version priority", remote(func(a *apiregistrationv1.APIService) { a.Spec.VersionPriority = 1001 }),
			"spec.versionPriority: Invalid value: 1001: must be positive and less than 1000"},
		{"local with caBundle", remote(func(a *apiregistrationv1.APIService) { a.Spec.Service = nil; a.Spec.CABundle = []byte("x") }),
			"spec.caBundle: Invalid value: \"1 bytes\": local APIServices may not have a caBundle"},
		{"insecure and caBundle", remote(func(a *apiregistrationv1.APIService) {
			a.Spec.InsecureSkipTLSVerify = true
			a.Spec.CABundle = []byte("x")
		}),
			"spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"},
		{"missing service name", remote(func(a *apiregistrationv1.APIService) { a.Spec.Service.Name = "" }),
			"spec.service.name: Required value"},
		{"bad port", remote(func(a *apiregistrationv1.APIService) { p := int32(70000); a.Spec.Service.Port = &p }),
			"spec.service.port: Invalid value: 70000: port is not valid"},
	}
	res := apiServiceResource(clock(nil))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res.Strategy.PrepareForCreate(context.Background(), tc.obj)
			errs := res.Strategy.Validate(context.Background(), tc.obj)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("unexpected errors: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("errors %v, want one containing %q", got, tc.want)
			}
		})
	}
}

func TestAPIServicePrepareAndTable(t *testing.T) {
	res := apiServiceResource(clock(nil))
	local := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.apps"}, Spec: apiregistrationv1.APIServiceSpec{Group: "apps", Version: "v1", GroupPriorityMinimum: 17800, VersionPriority: 15},
		Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{Type: "Available", Status: "False"}}}}
	res.Strategy.PrepareForCreate(context.Background(), local)
	cells := res.Table.Cells(local)
	if cells[1] != "Local" || cells[2] != "True" {
		t.Errorf("local APIService cells %v, want Local True (created available, as upstream)", cells)
	}
	remote := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io", ResourceVersion: "7"}, Spec: apiregistrationv1.APIServiceSpec{
		Group: "metrics.k8s.io", Version: "v1beta1", GroupPriorityMinimum: 100, VersionPriority: 100,
		Service: &apiregistrationv1.ServiceReference{Namespace: "kube-system", Name: "metrics-server"}}}
	res.Strategy.PrepareForCreate(context.Background(), remote)
	if remote.Spec.Service.Port == nil || *remote.Spec.Service.Port != 443 {
		t.Errorf("service port not defaulted to 443: %v", remote.Spec.Service.Port)
	}
	if cells := res.Table.Cells(remote); cells[1] != "kube-system/metrics-server" || cells[2] != "Unknown" {
		t.Errorf("new remote APIService cells %v", cells)
	}
	updated := remote.DeepCopy()
	updated.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: "Available", Status: "False", Reason: "MissingEndpoints"}}
	updated.Spec.VersionPriority = 5
	res.Status.PrepareForStatusUpdate(context.Background(), updated, remote)
	if updated.Spec.VersionPriority != 100 {
		t.Error("a status update changed the spec")
	}
	if cells := res.Table.Cells(updated); cells[2] != "False (MissingEndpoints)" {
		t.Errorf("AVAILABLE cell %q, want upstream's \"False (MissingEndpoints)\"", cells[2])
	}
	if errs := res.Status.ValidateStatusUpdate(context.Background(), updated, remote); len(errs) != 0 {
		t.Errorf("status update: %v", errs)
	}
	updated.Status.Conditions[0].Status = "Maybe"
	if errs := res.Status.ValidateStatusUpdate(context.Background(), updated, remote); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "Unsupported value: \"Maybe\"") {
		t.Errorf("status update with status Maybe: %v", errs)
	}
}
