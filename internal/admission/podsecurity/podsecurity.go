package podsecurity

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psadmission "k8s.io/pod-security-admission/admission"
	psconfig "k8s.io/pod-security-admission/admission/api"
	psload "k8s.io/pod-security-admission/admission/api/load"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Config configures the plugin.
type Config struct {
	// Configuration holds the defaults for namespaces without labels and
	// the exemptions. Default: upstream's (privileged everywhere, no
	// exemptions).
	Configuration *psconfig.PodSecurityConfiguration
	// Namespace reads a namespace, as the plugin needs for every pod and
	// workload write (from a cache: it is on the pod create path). It
	// returns a NotFound error when there is none. Required.
	Namespace func(ctx context.Context, name string) (*corev1.Namespace, error)
	// Pods lists a namespace's pods, for the warnings about existing pods
	// when a namespace's enforce level is tightened. Required.
	Pods func(ctx context.Context, namespace string) ([]*corev1.Pod, error)
	// Metrics receives upstream's pod_security_* counters; nil: none.
	Metrics prometheus.Registerer
}

// Plugin is the PodSecurity validating admission plugin.
type Plugin struct {
	delegate  *psadmission.Admission
	extractor psadmission.PodSpecExtractor
}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New builds the plugin and checks its configuration.
func New(cfg Config) (*Plugin, error) {
	if cfg.Namespace == nil || cfg.Pods == nil {
		return nil, errors.New("podsecurity: Config.Namespace and Config.Pods are required")
	}
	if cfg.Configuration == nil {
		def, err := psload.LoadFromData(nil)
		if err != nil {
			return nil, fmt.Errorf("podsecurity: default configuration: %w", err)
		}
		cfg.Configuration = def
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("podsecurity: policy evaluator: %w", err)
	}
	rec, err := newRecorder(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	extractor := psadmission.DefaultPodSpecExtractor{}
	d := &psadmission.Admission{
		Configuration:    cfg.Configuration,
		Evaluator:        evaluator,
		Metrics:          rec,
		PodSpecExtractor: extractor,
		NamespaceGetter:  namespaceGetter(cfg.Namespace),
		PodLister:        podLister(cfg.Pods),
	}
	if err := d.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("podsecurity: configuration: %w", err)
	}
	if err := d.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("podsecurity: invalid configuration: %w", err)
	}
	return &Plugin{delegate: d, extractor: extractor}, nil
}

// Handles: creates and updates, as upstream's plugin.
func (p *Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

var (
	podsResource       = corev1.Resource("pods")
	namespacesResource = corev1.Resource("namespaces")
)

// Validate asks the library about a write of a pod, a namespace or a
// workload with a pod template and delivers its answer: warnings to the
// client, annotations to the audit event, a refusal as the library's
// Status.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	gr := a.GroupResource()
	if gr != podsResource && gr != namespacesResource && !p.extractor.HasPodSpec(gr) {
		return nil
	}
	attrs := &psapi.AttributesRecord{
		Name: a.Name, Namespace: a.Namespace,
		Kind: a.Kind, Resource: a.Resource, Subresource: a.Subresource,
		Operation: admissionv1.Operation(a.Operation),
		Object:    a.Object, OldObject: a.OldObject,
	}
	if gr == namespacesResource {
		// Upstream's attributes of a namespace request name the namespace
		// as their namespace too; the library's exemption check reads it.
		attrs.Namespace = a.Name
	}
	if a.User != nil {
		attrs.Username = a.User.Name
	}
	res := p.delegate.Validate(ctx, attrs)
	for _, w := range res.Warnings {
		request.AddWarning(ctx, w)
	}
	for k, v := range res.AuditAnnotations {
		request.AddAuditAnnotation(ctx, auditKey(k), v)
	}
	if res.Allowed {
		return nil
	}
	return refusal(a, res.Result)
}

// refusal is the error for a refused write: the library's Status
// (Forbidden with its message, or Invalid for bad namespace labels) over
// upstream's generic "Not allowed by PodSecurity" forbidden, as upstream's
// plugin builds it.
func refusal(a *admission.Attributes, st *metav1.Status) error {
	//lint:ignore ST1005 upstream's message, word for word
	err := apierrors.NewForbidden(a.GroupResource(), a.Name, errors.New("Not allowed by PodSecurity"))
	if st == nil {
		return err
	}
	if st.Message != "" {
		err.ErrStatus.Message = st.Message
	}
	if st.Reason != "" {
		err.ErrStatus.Reason = st.Reason
	}
	if st.Details != nil {
		err.ErrStatus.Details = st.Details
	}
	if st.Code != 0 {
		err.ErrStatus.Code = st.Code
	}
	return err
}

// namespaceGetter and podLister adapt functions to the library's
// interfaces.
type namespaceGetter func(ctx context.Context, name string) (*corev1.Namespace, error)

func (f namespaceGetter) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return f(ctx, name)
}

type podLister func(ctx context.Context, namespace string) ([]*corev1.Pod, error)

func (f podLister) ListPods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	return f(ctx, namespace)
}

// auditKey is the audit annotation key of the library's annotation k,
// without a concatenation per pod for the keys it uses.
func auditKey(k string) string {
	switch k {
	case psapi.EnforcedPolicyAnnotationKey:
		return psapi.AuditAnnotationPrefix + psapi.EnforcedPolicyAnnotationKey
	case psapi.AuditViolationsAnnotationKey:
		return psapi.AuditAnnotationPrefix + psapi.AuditViolationsAnnotationKey
	case psapi.ExemptionReasonAnnotationKey:
		return psapi.AuditAnnotationPrefix + psapi.ExemptionReasonAnnotationKey
	}
	return psapi.AuditAnnotationPrefix + k
}
