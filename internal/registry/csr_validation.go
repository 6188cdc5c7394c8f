package registry

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// legacyUnknownSignerName is the v1beta1-only signer v1 refuses.
const legacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// validUsages is upstream's allValidUsages.
var validUsages = func() map[certificatesv1.KeyUsage]bool {
	m := map[certificatesv1.KeyUsage]bool{}
	for _, u := range []certificatesv1.KeyUsage{
		certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
		certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
		certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
		certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
		certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
		certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
		certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
		certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
	} {
		m[u] = true
	}
	return m
}()

func validUsageNames() []string {
	out := make([]string, 0, len(validUsages))
	for u := range validUsages {
		out = append(out, string(u))
	}
	sort.Strings(out)
	return out
}

// csrOptions relax the rules of a create for an update, as upstream's
// certificateValidationOptions: what the subresource may change, and
// tolerance of problems the stored object already has (so an old object
// stays updatable).
type csrOptions struct {
	settingApproval, settingCertificate bool

	bothApprovedAndDenied, duplicateConditionTypes, emptyConditionType bool
	arbitraryCertificate, unknownUsages, duplicateUsages, legacySigner bool
}

func csrOptionsFor(csr, old *certificatesv1.CertificateSigningRequest) csrOptions {
	if old == nil {
		return csrOptions{}
	}
	var o csrOptions
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range old.Status.Conditions {
		o.duplicateConditionTypes = o.duplicateConditionTypes || seen[c.Type]
		o.emptyConditionType = o.emptyConditionType || c.Type == ""
		seen[c.Type] = true
	}
	o.bothApprovedAndDenied = seen[certificatesv1.CertificateApproved] && seen[certificatesv1.CertificateDenied]
	o.arbitraryCertificate = bytes.Equal(csr.Status.Certificate, old.Status.Certificate) || validateIssuedCertificate(old.Status.Certificate) != nil
	seenUsage := map[certificatesv1.KeyUsage]bool{}
	for _, u := range old.Spec.Usages {
		o.unknownUsages = o.unknownUsages || !validUsages[u]
		o.duplicateUsages = o.duplicateUsages || seenUsage[u]
		seenUsage[u] = true
	}
	o.legacySigner = old.Spec.SignerName == legacyUnknownSignerName
	return o
}

// parseCSRRequest decodes spec.request: one PEM "CERTIFICATE REQUEST"
// block holding a PKCS#10 request (upstream's ParseCSR). It does not check
// the signature.
func parseCSRRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// checkCSRRequest parses spec.request and checks the requester holds the
// key it asks a certificate for.
func checkCSRRequest(pemBytes []byte) error {
	req, err := parseCSRRequest(pemBytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

func validateCSRCreate(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSR(csr, csrOptions{})
}

// validateCSR is upstream's validateCertificateSigningRequest less object
// metadata (the generic strategy checks that). Signer-specific rules
// (usages and subject a signer accepts) are not API validation upstream:
// the signer refuses such a request with a Failed condition.
func validateCSR(csr *certificatesv1.CertificateSigningRequest, o csrOptions) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if err := checkCSRRequest(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	if !o.unknownUsages {
		for i, u := range csr.Spec.Usages {
			if !validUsages[u] {
				errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, validUsageNames()))
			}
		}
	}
	if !o.duplicateUsages {
		seen := map[certificatesv1.KeyUsage]bool{}
		for i, u := range csr.Spec.Usages {
			if seen[u] {
				errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), u))
			}
			seen[u] = true
		}
	}
	if !o.legacySigner && csr.Spec.SignerName == legacyUnknownSignerName {
		errs = append(errs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(spec.Child("signerName"), csr.Spec.SignerName)...)
	}
	if e := csr.Spec.ExpirationSeconds; e != nil && *e < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *e, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateCSRConditions(field.NewPath("status", "conditions"), csr, o)...)
	if !o.arbitraryCertificate {
		if err := validateIssuedCertificate(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

func validateCSRConditions(p *field.Path, csr *certificatesv1.CertificateSigningRequest, o csrOptions) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	var approved, denied bool
	for i, c := range csr.Status.Conditions {
		if !o.emptyConditionType && c.Type == "" {
			errs = append(errs, field.Required(p.Index(i).Child("type"), ""))
		}
		allowed := conditionStatuses(c.Type)
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(p.Index(i).Child("status"), ""))
		case !contains(allowed, string(c.Status)):
			errs = append(errs, field.NotSupported(p.Index(i).Child("status"), c.Status, allowed))
		}
		if !o.bothApprovedAndDenied {
			switch c.Type {
			case certificatesv1.CertificateApproved:
				approved = true
				if denied {
					errs = append(errs, field.Invalid(p.Index(i).Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			case certificatesv1.CertificateDenied:
				denied = true
				if approved {
					errs = append(errs, field.Invalid(p.Index(i).Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			}
		}
		if !o.duplicateConditionTypes {
			if seen[c.Type] {
				errs = append(errs, field.Duplicate(p.Index(i).Child("type"), c.Type))
			}
			seen[c.Type] = true
		}
	}
	return errs
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// validateIssuedCertificate is upstream's validateCertificate: empty, or
// one or more header-less CERTIFICATE PEM blocks that parse (text around
// the blocks is allowed, RFC 7468 §5.2).
func validateIssuedCertificate(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// validateSignerName is upstream's ValidateSignerName: "<domain>/<path>",
// the domain DNS labels with at least one dot, the path dot-separated DNS
// subdomains, room for "<fqdn>/<namespace>.<name>".
func validateSignerName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	segs := strings.Split(name, "/")
	if len(segs) != 2 {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	domain, path := segs[0], segs[1]
	if len(domain) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(p, domain, validation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(p, domain, fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break // the rest would repeat the same complaint
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(p, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(path, ".") {
		if msgs := validation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(p, path, fmt.Sprintf("validating component %q: %s", l, m)))
			}
			break
		}
	}
	maxLen := validation.DNS1123SubdomainMaxLength + 1 + validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 1
	if len(name) > maxLen {
		errs = append(errs, field.TooLong(p, name, maxLen))
	}
	return errs
}

func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRUpdateWith(csr, old, csrOptionsFor(csr, old))
}

func validateCSRStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	o := csrOptionsFor(csr, old)
	o.settingCertificate = true
	return validateCSRUpdateWith(csr, old, o)
}

func validateCSRApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	o := csrOptionsFor(csr, old)
	o.settingApproval = true
	return validateCSRUpdateWith(csr, old, o)
}

// validateCSRUpdateWith is upstream's validateCertificateSigningRequestUpdate
// less metadata: Approved, Denied and Failed conditions are never removed;
// Approved and Denied change only through approval; the certificate is set
// only through status, and only once.
func validateCSRUpdateWith(csr, old *certificatesv1.CertificateSigningRequest, o csrOptions) field.ErrorList {
	errs := validateCSR(csr, o)
	conds := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(findConditions(csr, t)) < len(findConditions(old, t)) {
			errs = append(errs, field.Forbidden(conds, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !o.settingApproval {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			oldC, newC := findConditions(old, t), findConditions(csr, t)
			switch {
			case len(newC) < len(oldC):
				// reported above
			case len(newC) > len(oldC):
				errs = append(errs, field.Forbidden(conds, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(oldC, newC):
				errs = append(errs, field.Forbidden(conds, fmt.Sprintf("updates may not modify a condition of type %q\n%v", t, diff.Diff(oldC, newC))))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		switch {
		case !o.settingCertificate:
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
	}
	return errs
}

func findConditions(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}
