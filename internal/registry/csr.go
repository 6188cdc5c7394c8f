package registry

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// certificateSigningRequestResource serves certificates.k8s.io/v1
// certificatesigningrequests with upstream's three write paths: the object
// itself (metadata only: spec is fixed at create, status belongs to the
// subresources), status (the signer's certificate and Failed condition)
// and approval (the Approved and Denied conditions).
func certificateSigningRequestResource(c clock) *Resource {
	gv := v1(certificatesGroup)
	s := strategy[*certificatesv1.CertificateSigningRequest]{behavior[*certificatesv1.CertificateSigningRequest]{
		// Upstream accepts any name a URL path segment can carry.
		name:           path.ValidatePathSegmentName,
		creator:        setCSRRequestor,
		resetStatus:    resetCSRStatus,
		keepStatus:     keepCSRSpecAndStatus,
		validate:       validateCSRCreate,
		validateUpdate: validateCSRUpdate,
	}}
	status := strategy[*certificatesv1.CertificateSigningRequest]{behavior[*certificatesv1.CertificateSigningRequest]{
		keepSpec:       func(obj, old *certificatesv1.CertificateSigningRequest) { prepareCSRStatusUpdate(obj, old, c()) },
		validateStatus: validateCSRStatusUpdate,
	}}
	approval := strategy[*certificatesv1.CertificateSigningRequest]{behavior[*certificatesv1.CertificateSigningRequest]{
		keepSpec:       func(obj, old *certificatesv1.CertificateSigningRequest) { prepareCSRApprovalUpdate(obj, old, c()) },
		validateStatus: validateCSRApprovalUpdate,
	}}
	return &Resource{
		GroupVersion: gv,
		Kind:         "CertificateSigningRequest",
		Resource:     "certificatesigningrequests",
		SingularName: "certificatesigningrequest",
		ShortNames:   []string{"csr"},
		Verbs:        allVerbs(),
		Subresources: []string{"approval", "status"},
		New:          func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList:      func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		Strategy:     s,
		Status:       statusOf(status),
		Approval:     statusOf(approval),
		SelectableFields: func(o runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": o.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
		},
		// Upstream's printCertificateSigningRequest.
		Table: table[*certificatesv1.CertificateSigningRequest]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				ageColumn(),
				col("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
				col("Requestor", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["request"]),
				col("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
				col("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
			},
			cells: func(csr *certificatesv1.CertificateSigningRequest) []interface{} {
				requested := "<none>"
				if e := csr.Spec.ExpirationSeconds; e != nil {
					requested = duration.HumanDuration(time.Duration(*e) * time.Second)
				}
				return []interface{}{csr.Name, c.since(csr.CreationTimestamp), orNone(csr.Spec.SignerName), csr.Spec.Username, requested, csrCondition(csr)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "certificatesigningrequests"),
	}
}

// csrCondition is upstream's Condition cell: Denied over Approved over
// Pending, then ",Failed" and ",Issued".
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	s := "Pending"
	switch {
	case denied:
		s = "Denied"
	case approved:
		s = "Approved"
	}
	if failed {
		s += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		s += ",Issued"
	}
	return s
}

// setCSRRequestor replaces whatever identity the client wrote into spec with
// the requesting user's: signers and approvers trust these fields. Myriad's
// users carry no extra attributes, so spec.extra stays empty.
func setCSRRequestor(csr *certificatesv1.CertificateSigningRequest, u *request.User) {
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	if u == nil {
		return
	}
	csr.Spec.Username, csr.Spec.UID = u.Name, u.UID
	csr.Spec.Groups = append([]string(nil), u.Groups...)
}

// resetCSRStatus: a request cannot be created approved or issued.
func resetCSRStatus(csr *certificatesv1.CertificateSigningRequest) {
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

// keepCSRSpecAndStatus: an update of the object changes only metadata;
// spec is fixed at create (silently kept, as upstream), status changes
// through the subresources.
func keepCSRSpecAndStatus(csr, old *certificatesv1.CertificateSigningRequest) {
	csr.Spec = old.Spec
	csr.Status = old.Status
}

// prepareCSRStatusUpdate keeps spec and the Approved and Denied conditions,
// which only the approval subresource changes. When the writer added or
// removed one, it is not preserved and validation reports it.
func prepareCSRStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest, now time.Time) {
	csr.Spec = old.Spec
	preserveConditions(csr, old, certificatesv1.CertificateApproved)
	preserveConditions(csr, old, certificatesv1.CertificateDenied)
	stampConditions(csr, old, now)
}

// prepareCSRApprovalUpdate keeps spec and all of status but the
// conditions, which validation then holds to the approval rules (a Failed
// condition may not go, for one).
func prepareCSRApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest, now time.Time) {
	stampConditions(csr, old, now)
	conds := csr.Status.Conditions
	csr.Spec = old.Spec
	csr.Status = *old.Status.DeepCopy()
	csr.Status.Conditions = conds
}

// preserveConditions puts old's conditions of type t back in csr, in
// order, when csr has as many of them as old; otherwise it leaves csr
// alone for validation to refuse.
func preserveConditions(csr, old *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) {
	var oldC []certificatesv1.CertificateSigningRequestCondition
	for _, c := range old.Status.Conditions {
		if c.Type == t {
			oldC = append(oldC, c)
		}
	}
	var idx []int
	for i, c := range csr.Status.Conditions {
		if c.Type == t {
			idx = append(idx, i)
		}
	}
	if len(idx) != len(oldC) {
		return
	}
	for i, j := range idx {
		csr.Status.Conditions[j] = oldC[i]
	}
}

// stampConditions defaults condition timestamps as upstream: lastUpdateTime
// to now, lastTransitionTime to old's for the same type and status, else now.
func stampConditions(csr, old *certificatesv1.CertificateSigningRequest, now time.Time) {
	t := metav1.NewTime(now.Truncate(time.Second))
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = t
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = t
		for _, o := range old.Status.Conditions {
			if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}

// conditionStatuses are the allowed condition statuses: True only for
// Approved, Denied and Failed.
func conditionStatuses(t certificatesv1.RequestConditionType) []string {
	switch t {
	case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
		return []string{string(corev1.ConditionTrue)}
	}
	return []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
}
