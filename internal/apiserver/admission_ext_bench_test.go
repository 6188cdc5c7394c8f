package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// BenchmarkConfigMapCreateAdmission is a ConfigMap create through HTTP and
// client-go (JSON) with nothing configured, with 1 and 5 matching
// validating webhooks (a local TLS webhook that allows), and with 10
// matching CEL policies; the differences are the admission cost.
func BenchmarkConfigMapCreateAdmission(b *testing.B) {
	for _, c := range []struct {
		name           string
		webhooks, vaps int
	}{{"none", 0, 0}, {"webhooks-1", 1, 0}, {"webhooks-5", 5, 0}, {"policies-10", 0, 10}} {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			ctx := context.Background()
			if c.webhooks > 0 {
				hook := newHookServer(b, nil)
				var hooks []admissionregistrationv1.ValidatingWebhook
				for i := 0; i < c.webhooks; i++ {
					hooks = append(hooks, validatingHook(fmt.Sprintf("allow-%d.myriad.test", i), hook.clientConfig("/allow"), configMapRule()))
				}
				e.createValidatingHooks("allow", hooks...)
				waitFor(b, 5*time.Second, "webhooks active", func() bool {
					_, _ = e.cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					return hook.calls("/allow") >= c.webhooks
				})
			}
			for i := 0; i < c.vaps; i++ {
				name := fmt.Sprintf("policy-%d", i)
				e.createPolicy(configMapPolicy(name, []admissionregistrationv1.Validation{{
					Expression: fmt.Sprintf("object.metadata.name != 'deny-%d' && (!has(object.data) || object.data.size() < %d)", i, 100+i),
				}}), policyBinding(name, name, admissionregistrationv1.Deny))
			}
			if c.vaps > 0 {
				// Wait until the last policy acts: it alone refuses deny-9.
				waitFor(b, 5*time.Second, "policies active", func() bool {
					_, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "deny-9", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					return err != nil && strings.Contains(err.Error(), "policy-9")
				})
			}
			cms := e.cs.CoreV1().ConfigMaps("default")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := cms.Create(ctx, configMap("default", fmt.Sprintf("cm-%d", i), nil), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExtensionAdmissionIdle is what the webhook and policy plugins
// cost a pod create when no webhook or policy is configured: the hot path
// (the density benchmark's) must not pay for them.
func BenchmarkExtensionAdmissionIdle(b *testing.B) {
	e := newEnv(b)
	ext := e.api.extAdmission
	ctx := request.WithUser(context.Background(), &request.User{Name: "system:node:n1", Groups: []string{"system:nodes"}})
	pod := benchPod(1)
	pod.Namespace = "default"
	a := &admission.Attributes{
		Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: "default", Name: pod.Name, Object: pod,
		Options: &metav1.CreateOptions{},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ext.webhooks.Mutating.Admit(ctx, a); err != nil {
			b.Fatal(err)
		}
		if err := ext.policies.Validate(ctx, a); err != nil {
			b.Fatal(err)
		}
		if err := ext.webhooks.Validating.Validate(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
