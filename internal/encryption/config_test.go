package encryption

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Keys for tests: base64 of 32, 16 and 32 bytes.
const (
	key28  = "c2VjcmV0IGlzIHNlY3VyZSwgb3IgaXMgaXQ/Cg==" // 28 bytes: no AES size
	key32  = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="
	key32b = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY="
	key16  = "MTIzNDU2Nzg5MDEyMzQ1Ng=="
)

func TestLoadErrors(t *testing.T) {
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
	cases := []struct{ name, body, want string }{
		{"empty", "", "empty"},
		{"wrong kind", "apiVersion: v1\nkind: Secret\n", "want apiserver.config.k8s.io/v1 EncryptionConfiguration"},
		{"not yaml", "{[", "decoding"},
		{"unknown field", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbs:\n      keys: [{name: k, secret: " + key32 + "}]\n", "aescbs"},
		{"no resources", head, "at least one resource configuration"},
		{"no providers", head + "resources:\n- resources: [secrets]\n", "at least one provider"},
		{"two kinds in one provider", head + "resources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n    aescbc:\n      keys: [{name: k, secret: " + key32 + "}]\n", "exactly one of"},
		{"empty provider", head + "resources:\n- resources: [secrets]\n  providers:\n  - {}\n", "exactly one of"},
		{"no keys", head + "resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: []}\n", "no keys"},
		{"bad base64", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k, secret: '!!'}]\n", "not valid base64"},
		{"bad aes size", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k, secret: " + key28 + "}]\n", "28 bytes"},
		{"bad secretbox size", head + "resources:\n- resources: [secrets]\n  providers:\n  - secretbox:\n      keys: [{name: k, secret: " + key16 + "}]\n", "16 bytes"},
		{"key without name", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{secret: " + key32 + "}]\n", "name is required"},
		{"key without secret", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k}]\n", "has no secret"},
		{"duplicate key", head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k, secret: " + key32 + "}, {name: k, secret: " + key32b + "}]\n", "duplicate"},
		{"kms", head + "resources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: vault, endpoint: unix:///tmp/kms.sock}\n", "KMS is not supported"},
		{"masked by group", head + "resources:\n- resources: ['*.apps', deployments.apps]\n  providers:\n  - identity: {}\n", `masked by earlier rule "*.apps"`},
		{"masked by all", head + "resources:\n- resources: ['*.*']\n  providers:\n  - identity: {}\n- resources: [secrets]\n  providers:\n  - identity: {}\n", `masked by earlier rule "*.*"`},
		{"listed twice", head + "resources:\n- resources: [secrets, secrets]\n  providers:\n  - identity: {}\n", "more than once"},
		{"bare star", head + "resources:\n- resources: ['*']\n  providers:\n  - identity: {}\n", `"*" is not a resource`},
		{"subresource", head + "resources:\n- resources: [pods/status]\n  providers:\n  - identity: {}\n", "subresources"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestResourceMatching(t *testing.T) {
	c, err := Load([]byte(`
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, configmaps]
  providers:
  - aescbc:
      keys: [{name: k1, secret: ` + key32 + `}]
- resources: [events]
  providers:
  - identity: {}
- resources: ['*.apps']
  providers:
  - secretbox:
      keys: [{name: k1, secret: ` + key32 + `}]
- resources: [leases.coordination.k8s.io]
  providers:
  - identity: {}
  - aesgcm:
      keys: [{name: k1, secret: ` + key16 + `}]
- resources: ['*.']
  providers:
  - aesgcm:
      keys: [{name: k1, secret: ` + key16 + `}]
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		gr                schema.GroupResource
		encrypts, wrapped bool
	}{
		{schema.GroupResource{Resource: "secrets"}, true, true},
		{schema.GroupResource{Resource: "configmaps"}, true, true},
		{schema.GroupResource{Resource: "events"}, false, false},
		{schema.GroupResource{Resource: "pods"}, true, true}, // "*." : the core group
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, true, true},
		{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, false, true}, // identity first: reads decrypt
		{schema.GroupResource{Group: "batch", Resource: "jobs"}, false, false},
	}
	for _, tc := range cases {
		if got := c.Encrypts(tc.gr); got != tc.encrypts {
			t.Errorf("Encrypts(%s) = %v, want %v", tc.gr, got, tc.encrypts)
		}
		if _, got := c.Wrap(tc.gr, nil).(*Store); got != tc.wrapped {
			t.Errorf("Wrap(%s) wrapped = %v, want %v", tc.gr, got, tc.wrapped)
		}
	}
	var none *Config
	if none.Wrap(schema.GroupResource{Resource: "secrets"}, nil) != nil || none.Encrypts(schema.GroupResource{Resource: "secrets"}) {
		t.Fatal("a nil Config must leave every store as it is")
	}
}
