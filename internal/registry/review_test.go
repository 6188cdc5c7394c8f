package registry

import (
	"context"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestReviewValidation(t *testing.T) {
	reg := newTestRegistry(t)
	pods := &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "get", Resource: "pods"}
	path := &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}
	tests := []struct {
		name     string
		resource string
		obj      runtime.Object
		fields   []string
	}{
		{"sar valid", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: pods}}, nil},
		{"sar groups only", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"g"}, NonResourceAttributes: path}}, nil},
		{"sar nothing", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{}, []string{"spec.resourceAttributes", "spec.user"}},
		{"sar both", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: pods, NonResourceAttributes: path}}, []string{"spec.nonResourceAttributes"}},
		{"sar metadata", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: pods}}, []string{"metadata"}},
		{"sar managed fields ignored", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: pods}}, nil},
		{"sar bad label requirement", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods",
			LabelSelector: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{{Key: "", Operator: metav1.LabelSelectorOpExists}}}}}},
			[]string{"spec.resourceAttributes.labelSelector.requirements[0].key"}},
		{"sar unknown operator allowed", "subjectaccessreviews", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods",
			FieldSelector: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: "Future", Values: []string{"n"}}}}}}}, nil},
		{"ssar valid", "selfsubjectaccessreviews", &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: pods}}, nil},
		{"ssar nothing", "selfsubjectaccessreviews", &authorizationv1.SelfSubjectAccessReview{}, []string{"spec.resourceAttributes"}},
		{"ssar name", "selfsubjectaccessreviews", &authorizationv1.SelfSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: path}}, []string{"metadata"}},
		{"lsar valid", "localsubjectaccessreviews", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: pods}}, nil},
		{"lsar other namespace", "localsubjectaccessreviews", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "other"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: pods}}, []string{"spec.resourceAttributes.namespace"}},
		{"lsar path", "localsubjectaccessreviews", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", NonResourceAttributes: path}}, []string{"spec.nonResourceAttributes"}},
		{"lsar name", "localsubjectaccessreviews", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: pods}}, []string{"metadata"}},
		{"ssrr anything", "selfsubjectrulesreviews", &authorizationv1.SelfSubjectRulesReview{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustLookup(t, reg, "authorization.k8s.io", tt.resource)
			var got []string
			for _, e := range r.Strategy.Validate(context.Background(), tt.obj) {
				got = append(got, e.Field)
			}
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, tt.fields) {
				t.Fatalf("fields %v, want %v", got, tt.fields)
			}
		})
	}
}
