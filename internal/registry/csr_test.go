package registry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// testCSRPEM returns a PEM certificate request for cn/orgs signed by a
// fresh P-256 key.
func testCSRPEM(t testing.TB, cn string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// testCertPEM returns a self-signed PEM certificate.
func testCertPEM(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func testCSR(t testing.TB, mutate ...func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    testCSRPEM(t, "alice"),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
	for _, m := range mutate {
		m(csr)
	}
	return csr
}

func cond(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue, Reason: "Test", LastUpdateTime: at, LastTransitionTime: at}
}

func TestCSRValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "certificates.k8s.io", "certificatesigningrequests")
	tampered := func(csr *certificatesv1.CertificateSigningRequest) {
		// Flip a byte of the signature (the DER's tail): it still parses.
		b, _ := pem.Decode(csr.Spec.Request)
		b.Bytes[len(b.Bytes)-3] ^= 0xff
		csr.Spec.Request = pem.EncodeToMemory(b)
	}
	cases := []struct {
		name   string
		mutate func(*certificatesv1.CertificateSigningRequest)
		want   []string
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, nil},
		{"any name", func(csr *certificatesv1.CertificateSigningRequest) { csr.Name = "node-csr-Ab_C:d" }, nil},
		{"every usage", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Usages = nil
			for _, u := range validUsageNames() {
				csr.Spec.Usages = append(csr.Spec.Usages, certificatesv1.KeyUsage(u))
			}
		}, nil},
		{"name not a path segment", func(csr *certificatesv1.CertificateSigningRequest) { csr.Name = "a/b" }, []string{"Invalid value: metadata.name"}},
		{"custom signer", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.SignerName = "example.com/my-signer.v1" }, nil},
		{"ten minutes", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.ExpirationSeconds = ptrTo[int32](600) }, nil},
		{"no request", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.Request = nil }, []string{"Invalid value: spec.request"}},
		{"not PEM", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.Request = []byte("hello") }, []string{"Invalid value: spec.request"}},
		{"wrong PEM type", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.Request = testCertPEM(t) }, []string{"Invalid value: spec.request"}},
		{"garbage DER", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x01}})
		}, []string{"Invalid value: spec.request"}},
		{"bad signature", tampered, []string{"Invalid value: spec.request"}},
		{"no usages", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.Usages = nil }, []string{"Required value: spec.usages"}},
		{"unknown usage", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Usages = append(csr.Spec.Usages, "flying")
		}, []string{"Unsupported value: spec.usages[1]"}},
		{"duplicate usage", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Usages = append(csr.Spec.Usages, certificatesv1.UsageClientAuth)
		}, []string{"Duplicate value: spec.usages[1]"}},
		{"no signer", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.SignerName = "" }, []string{"Required value: spec.signerName"}},
		{"signer without path", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.SignerName = "example.com" }, []string{"Invalid value: spec.signerName"}},
		{"signer domain one label", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.SignerName = "example/signer" }, []string{"Invalid value: spec.signerName"}},
		{"signer bad path", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.SignerName = "example.com/Bad_Path" }, []string{"Invalid value: spec.signerName"}},
		{"signer too long", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.SignerName = "example.com/" + strings.Repeat("a.", 290) + "a"
		}, []string{"Too long: spec.signerName"}},
		{"legacy signer", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.SignerName = legacyUnknownSignerName }, []string{"Invalid value: spec.signerName"}},
		{"short expiration", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.ExpirationSeconds = ptrTo[int32](599) }, []string{"Invalid value: spec.expirationSeconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantErrs(t, create(r, testCSR(t, tc.mutate)), tc.want...)
		})
	}
}

// TestCSRCreate: the requestor comes from the request's user, whatever the
// client wrote, and a request cannot be created approved or issued.
func TestCSRCreate(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "certificates.k8s.io", "certificatesigningrequests")
	csr := testCSR(t, func(csr *certificatesv1.CertificateSigningRequest) {
		csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = "system:admin", "forged", []string{"system:masters"}
		csr.Spec.Extra = map[string]certificatesv1.ExtraValue{"k": {"v"}}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}
		csr.Status.Certificate = testCertPEM(t)
	})
	ctx := request.WithUser(context.Background(), &request.User{Name: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"}})
	r.Strategy.PrepareForCreate(ctx, csr)
	if errs := r.Strategy.Validate(ctx, csr); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := csr.Spec
	if s.Username != "alice" || s.UID != "u-1" || strings.Join(s.Groups, ",") != "dev,system:authenticated" || s.Extra != nil {
		t.Errorf("spec identity = %q %q %q %v, want the request's user", s.Username, s.UID, s.Groups, s.Extra)
	}
	if len(csr.Status.Conditions) != 0 || len(csr.Status.Certificate) != 0 {
		t.Errorf("status not reset: %+v", csr.Status)
	}

	// No user on the context (the server's own write): no identity.
	anon := testCSR(t, func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.Username = "forged" })
	r.Strategy.PrepareForCreate(context.Background(), anon)
	if anon.Spec.Username != "" {
		t.Errorf("username = %q without a user", anon.Spec.Username)
	}
}

// stored returns a CSR as the store would hold it: created by bob, with
// conds.
func stored(t *testing.T, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
	csr := testCSR(t, func(csr *certificatesv1.CertificateSigningRequest) {
		csr.ResourceVersion = "5"
		csr.Spec.Username = "bob"
		csr.Status.Conditions = conds
	})
	return csr
}

func TestCSRUpdateKeepsSpecAndStatus(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "certificates.k8s.io", "certificatesigningrequests")
	old := stored(t)
	csr := old.DeepCopy()
	csr.Labels = map[string]string{"a": "b"}
	csr.Spec.Username = "mallory"
	csr.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}
	if errs := update(r, csr, old); len(errs) > 0 {
		t.Fatal(errs)
	}
	if csr.Spec.Username != "bob" || csr.Spec.Usages[0] != certificatesv1.UsageClientAuth || len(csr.Status.Conditions) != 0 {
		t.Errorf("update changed spec or status: %+v %+v", csr.Spec, csr.Status)
	}
	if csr.Labels["a"] != "b" {
		t.Error("labels not updated")
	}
}

func updateApproval(r *Resource, obj, old runtime.Object) field.ErrorList {
	ctx := context.Background()
	r.Approval.PrepareForStatusUpdate(ctx, obj, old)
	return r.Approval.ValidateStatusUpdate(ctx, obj, old)
}

func TestCSRApproval(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "certificates.k8s.io", "certificatesigningrequests")
	approved, denied, failed := cond(certificatesv1.CertificateApproved), cond(certificatesv1.CertificateDenied), cond(certificatesv1.CertificateFailed)
	cases := []struct {
		name     string
		old      []certificatesv1.CertificateSigningRequestCondition
		new      []certificatesv1.CertificateSigningRequestCondition
		want     []string
		wantType []certificatesv1.RequestConditionType // conditions after, when valid
	}{
		{"approve", nil, conds(approved), nil, types(approved)},
		{"deny", nil, conds(denied), nil, types(denied)},
		{"approve and deny", nil, conds(approved, denied), []string{"Invalid value: status.conditions[1].type"}, nil},
		{"deny an approved one", conds(approved), conds(approved, denied), []string{"Invalid value: status.conditions[1].type"}, nil},
		{"remove approval", conds(approved), nil, []string{"Forbidden: status.conditions"}, nil},
		{"approve twice", nil, conds(approved, approved), []string{"Duplicate value: status.conditions[1].type"}, nil},
		{"approved false", nil, conds(func() certificatesv1.CertificateSigningRequestCondition {
			c := approved
			c.Status = corev1.ConditionFalse
			return c
		}()), []string{"Unsupported value: status.conditions[0].status"}, nil},
		{"no status", nil, conds(func() certificatesv1.CertificateSigningRequestCondition {
			c := approved
			c.Status = ""
			return c
		}()), []string{"Required value: status.conditions[0].status"}, nil},
		{"custom condition false", nil, conds(approved, certificatesv1.CertificateSigningRequestCondition{Type: "Checked", Status: corev1.ConditionFalse}), nil,
			[]certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, "Checked"}},
		// Approval writes all conditions, but may not drop a Failed one.
		{"failed kept", conds(failed), conds(func() certificatesv1.CertificateSigningRequestCondition {
			c := failed
			c.Message = "changed"
			return c
		}(), approved), nil, types(approved, failed)},
		{"failed dropped", conds(failed), conds(approved), []string{"Forbidden: status.conditions"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := stored(t, tc.old...)
			csr := old.DeepCopy()
			csr.Status.Conditions = append([]certificatesv1.CertificateSigningRequestCondition(nil), tc.new...)
			csr.Status.Certificate = testCertPEM(t) // never through approval
			csr.Spec.Username = "mallory"
			wantErrs(t, updateApproval(r, csr, old), tc.want...)
			if len(csr.Status.Certificate) != 0 || csr.Spec.Username != "bob" {
				t.Errorf("approval changed the certificate or spec")
			}
			if tc.want == nil && tc.wantType != nil {
				got := types(csr.Status.Conditions...)
				if !sameTypes(got, tc.wantType) {
					t.Errorf("conditions %v, want %v", got, tc.wantType)
				}
				for _, c := range csr.Status.Conditions {
					if c.LastUpdateTime.IsZero() || c.LastTransitionTime.IsZero() {
						t.Errorf("condition %s has no timestamps", c.Type)
					}
				}
			}
		})
	}
}

func TestCSRStatus(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "certificates.k8s.io", "certificatesigningrequests")
	approved, failed := cond(certificatesv1.CertificateApproved), cond(certificatesv1.CertificateFailed)
	cert := testCertPEM(t)
	cases := []struct {
		name    string
		oldCert []byte
		old     []certificatesv1.CertificateSigningRequestCondition
		cert    []byte
		new     []certificatesv1.CertificateSigningRequestCondition
		want    []string
	}{
		{"issue", nil, conds(approved), cert, conds(approved), nil},
		{"issue a chain with text", nil, conds(approved), append(append([]byte("leaf\n"), cert...), cert...), conds(approved), nil},
		{"fail", nil, conds(approved), nil, conds(approved, failed), nil},
		{"not PEM", nil, conds(approved), []byte("junk"), conds(approved), []string{"Invalid value: status.certificate"}},
		{"wrong block", nil, conds(approved), testCSRPEM(t, "x"), conds(approved), []string{"Invalid value: status.certificate"}},
		{"garbage certificate", nil, conds(approved), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), conds(approved), []string{"Invalid value: status.certificate"}},
		{"headers", nil, conds(approved), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"a": "b"}, Bytes: []byte{1}}), conds(approved), []string{"Invalid value: status.certificate"}},
		{"replace certificate", cert, conds(approved), testCertPEM(t), conds(approved), []string{"Forbidden: status.certificate"}},
		{"remove failed", nil, conds(approved, failed), nil, conds(approved), []string{"Forbidden: status.conditions"}},
		{"approve through status", nil, nil, nil, conds(approved), []string{"Forbidden: status.conditions"}},
		// Changing Approved through status is ignored: old's is put back.
		{"approval preserved", nil, conds(approved), cert, conds(func() certificatesv1.CertificateSigningRequestCondition {
			c := approved
			c.Message = "changed"
			return c
		}()), nil},
		{"remove approval", nil, conds(approved), cert, nil, []string{"Forbidden: status.conditions"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := stored(t, tc.old...)
			old.Status.Certificate = tc.oldCert
			csr := old.DeepCopy()
			csr.Status.Conditions = append([]certificatesv1.CertificateSigningRequestCondition(nil), tc.new...)
			csr.Status.Certificate = tc.cert
			wantErrs(t, updateStatus(r, csr, old), tc.want...)
		})
	}

	// The main resource cannot write a certificate.
	old := stored(t, approved)
	csr := old.DeepCopy()
	csr.Status.Certificate = cert
	if errs := update(r, csr, old); len(errs) > 0 || len(csr.Status.Certificate) != 0 {
		t.Errorf("main update wrote the certificate: %v", errs)
	}
}

func TestCSRTable(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "certificates.k8s.io", "certificatesigningrequests")
	if got := strings.Join(columnNames(r), ","); got != "Name,Age,SignerName,Requestor,RequestedDuration,Condition" {
		t.Fatalf("columns %s", got)
	}
	cases := []struct {
		name     string
		mutate   func(*certificatesv1.CertificateSigningRequest)
		duration string
		cond     string
	}{
		{"pending", func(*certificatesv1.CertificateSigningRequest) {}, "<none>", "Pending"},
		{"approved issued", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Conditions = conds(cond(certificatesv1.CertificateApproved))
			csr.Status.Certificate = []byte("x")
			csr.Spec.ExpirationSeconds = ptrTo[int32](3600)
		}, "60m", "Approved,Issued"},
		{"denied failed", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Conditions = conds(cond(certificatesv1.CertificateDenied), cond(certificatesv1.CertificateFailed))
			csr.Spec.ExpirationSeconds = ptrTo[int32](86400 * 2)
		}, "2d", "Denied,Failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := stored(t)
			tc.mutate(csr)
			row := cells(r, csr)
			if row["SignerName"] != certificatesv1.KubeAPIServerClientSignerName || row["Requestor"] != "bob" ||
				row["RequestedDuration"] != tc.duration || row["Condition"] != tc.cond {
				t.Errorf("row %v, want duration %s condition %s", row, tc.duration, tc.cond)
			}
		})
	}
	if got := r.SelectableFields(stored(t))["spec.signerName"]; got != certificatesv1.KubeAPIServerClientSignerName {
		t.Errorf("spec.signerName field = %q", got)
	}
}

// FuzzCSRValidation feeds arbitrary request bytes, signer names, usages and
// certificates through create and status validation: they must reject or
// accept, never panic.
func FuzzCSRValidation(f *testing.F) {
	f.Add(testCSRPEM(f, "alice"), "kubernetes.io/kube-apiserver-client", "client auth", testCertPEM(f))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n"), "a/b", "", []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{}, "", "flying", []byte{0})
	r, err := NewWithOptions(Options{})
	if err != nil {
		f.Fatal(err)
	}
	res, _ := r.LookupResource(v1(certificatesGroup), "certificatesigningrequests")
	f.Fuzz(func(t *testing.T, req []byte, signer, usage string, cert []byte) {
		csr := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "x"},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: req, SignerName: signer, Usages: []certificatesv1.KeyUsage{certificatesv1.KeyUsage(usage)},
			},
		}
		_ = create(res, csr)
		next := csr.DeepCopy()
		next.Status.Certificate = cert
		next.Status.Conditions = conds(cond(certificatesv1.CertificateApproved), certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.RequestConditionType(usage)})
		_ = updateStatus(res, next, csr)
		_ = updateApproval(res, next.DeepCopy(), csr)
		_ = res.Table.Cells(next)
	})
}

func conds(cs ...certificatesv1.CertificateSigningRequestCondition) []certificatesv1.CertificateSigningRequestCondition {
	return cs
}

func types(cs ...certificatesv1.CertificateSigningRequestCondition) []certificatesv1.RequestConditionType {
	var out []certificatesv1.RequestConditionType
	for _, c := range cs {
		out = append(out, c.Type)
	}
	return out
}

func sameTypes(a, b []certificatesv1.RequestConditionType) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[certificatesv1.RequestConditionType]int{}
	for _, t := range a {
		seen[t]++
	}
	for _, t := range b {
		seen[t]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
