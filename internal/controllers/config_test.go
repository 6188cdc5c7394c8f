package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func TestEnabled(t *testing.T) {
	tests := []struct {
		list []string
		name string
		want bool
	}{
		{[]string{"*"}, "namespace", true},
		{[]string{"*", "-namespace"}, "namespace", false},
		{[]string{"-namespace", "*"}, "namespace", false},
		{[]string{"namespace"}, "namespace", true},
		{[]string{"namespace"}, "garbagecollector", false},
		{[]string{"-namespace"}, "garbagecollector", false},
		{nil, "namespace", false},
	}
	for _, tc := range tests {
		if got := Enabled(tc.list, tc.name); got != tc.want {
			t.Errorf("Enabled(%v, %q) = %v, want %v", tc.list, tc.name, got, tc.want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
		check   func(Config) bool
	}{
		{"no rest config", Config{}, true, nil},
		{"defaults", Config{RESTConfig: &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}}, false, func(c Config) bool {
			return c.LeaseDuration == 15*time.Second && c.RenewDeadline == 10*time.Second && c.RetryPeriod == 2*time.Second &&
				c.LeaseNamespace == "kube-system" && c.LeaseName == "kube-controller-manager" && string(c.RootCA) == "ca" &&
				len(c.Controllers) == 1 && c.Controllers[0] == "*" && c.Identity != ""
		}},
		{"bad timing with election", Config{RESTConfig: &rest.Config{}, LeaderElect: true, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}, true, nil},
		{"unreadable CA file", Config{RESTConfig: &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: "/nonexistent/ca.crt"}}}, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.withDefaults()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tc.check != nil && !tc.check(got) {
				t.Fatalf("defaults wrong: %+v", got)
			}
		})
	}
}

func TestTrimForCache(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Annotations: map[string]string{lastApplied: "{}", "keep": "x"}}}
	md := &metav1.PartialObjectMetadata{ObjectMeta: *pod.ObjectMeta.DeepCopy()}
	for _, obj := range []any{pod, md} {
		if _, err := trimForCache(obj); err != nil {
			t.Fatal(err)
		}
	}
	if pod.ManagedFields != nil || md.ManagedFields != nil {
		t.Fatal("managedFields kept")
	}
	if pod.Annotations[lastApplied] == "" {
		t.Fatal("typed objects keep their annotations")
	}
	if _, ok := md.Annotations[lastApplied]; ok || md.Annotations["keep"] != "x" {
		t.Fatalf("metadata annotations %v", md.Annotations)
	}
}
