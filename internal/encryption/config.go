package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"
	"sigs.k8s.io/yaml"
)

// Upstream's value prefixes (k8s.io/apiserver encryptionconfig).
const (
	aesCBCPrefix    = "k8s:enc:aescbc:v1:"
	aesGCMPrefix    = "k8s:enc:aesgcm:v1:"
	secretboxPrefix = "k8s:enc:secretbox:v1:"
	// EncryptedPrefix starts every value an encrypting provider wrote.
	EncryptedPrefix = "k8s:enc:"
)

// Config is a loaded EncryptionConfiguration: a transformer per group
// resource pattern.
type Config struct {
	// exact, group ("*.group" as Resource "*") and all ("*.*") patterns,
	// looked up in that order, as upstream's transformerFromOverrides.
	byResource map[schema.GroupResource]*rule
}

// rule is one resource's providers.
type rule struct {
	transformer value.Transformer
	// encrypts is false when the first provider is identity: writes are
	// stored as they are.
	encrypts bool
	// onlyIdentity: nothing to read or write differently; the resource
	// keeps the bare store.
	onlyIdentity bool
}

var anyGroupAnyResource = schema.GroupResource{Group: "*", Resource: "*"}

// LoadFile reads an EncryptionConfiguration file
// (--encryption-provider-config).
func LoadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading encryption provider configuration file %q: %w", path, err)
	}
	cfg, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("encryption provider configuration file %q: %w", path, err)
	}
	return cfg, nil
}

// Load parses and checks an EncryptionConfiguration (YAML or JSON). Unknown
// fields are refused, so a misspelt provider does not silently store
// plaintext.
func Load(data []byte) (*Config, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errors.New("configuration is empty")
	}
	var ec apiserverv1.EncryptionConfiguration
	if err := yaml.UnmarshalStrict(data, &ec); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if ec.Kind != "EncryptionConfiguration" || (ec.APIVersion != "apiserver.config.k8s.io/v1" && ec.APIVersion != "apiserver.config.k8s.io/v1beta1") {
		return nil, fmt.Errorf("got %s %q, want apiserver.config.k8s.io/v1 EncryptionConfiguration", ec.APIVersion, ec.Kind)
	}
	if len(ec.Resources) == 0 {
		return nil, errors.New("resources: at least one resource configuration is required")
	}
	c := &Config{byResource: map[schema.GroupResource]*rule{}}
	for i, rc := range ec.Resources {
		if len(rc.Resources) == 0 {
			return nil, fmt.Errorf("resources[%d].resources: at least one resource is required", i)
		}
		if len(rc.Providers) == 0 {
			return nil, fmt.Errorf("resources[%d].providers: at least one provider is required", i)
		}
		prefixed, err := providers(rc.Providers)
		if err != nil {
			return nil, fmt.Errorf("resources[%d].%w", i, err)
		}
		r := &rule{
			transformer:  value.NewPrefixTransformers(errors.New("no matching prefix found"), prefixed...),
			encrypts:     rc.Providers[0].Identity == nil,
			onlyIdentity: len(rc.Providers) == 1 && rc.Providers[0].Identity != nil,
		}
		for j, res := range rc.Resources {
			gr, err := parseResource(res)
			if err != nil {
				return nil, fmt.Errorf("resources[%d].resources[%d]: %w", i, j, err)
			}
			// As upstream: a pattern listed earlier masks later
			// entries it covers, which is refused rather than ignored.
			if _, ok := c.byResource[schema.GroupResource{Group: gr.Group, Resource: "*"}]; ok {
				return nil, fmt.Errorf("resources[%d].resources[%d]: resource %q is masked by earlier rule %q", i, j, res, "*."+gr.Group)
			}
			if _, ok := c.byResource[anyGroupAnyResource]; ok {
				return nil, fmt.Errorf("resources[%d].resources[%d]: resource %q is masked by earlier rule \"*.*\"", i, j, res)
			}
			if _, ok := c.byResource[gr]; ok {
				return nil, fmt.Errorf("resources[%d].resources[%d]: resource %q is listed more than once", i, j, res)
			}
			c.byResource[gr] = r
		}
	}
	return c, nil
}

// parseResource parses "secrets", "deployments.apps", "*.apps", "*." (all
// of the core group) and "*.*".
func parseResource(s string) (schema.GroupResource, error) {
	switch {
	case s == "":
		return schema.GroupResource{}, errors.New("resource must not be empty")
	case s == "*":
		return schema.GroupResource{}, errors.New(`"*" is not a resource: use "*." for the core group or "*.*" for all`)
	case s == "*.*":
		return anyGroupAnyResource, nil
	case s != strings.ToLower(s):
		return schema.GroupResource{}, fmt.Errorf("resource %q must be lower case", s)
	}
	gr := schema.ParseGroupResource(s)
	if strings.Contains(gr.Resource, "/") {
		return schema.GroupResource{}, fmt.Errorf("resource %q: subresources cannot be encrypted", s)
	}
	return gr, nil
}

// providers builds one resource configuration's prefix transformers in
// order, as upstream's prefixTransformersAndProbes.
func providers(ps []apiserverv1.ProviderConfiguration) ([]value.PrefixTransformer, error) {
	out := make([]value.PrefixTransformer, 0, len(ps))
	for i, p := range ps {
		n := 0
		for _, set := range []bool{p.AESGCM != nil, p.AESCBC != nil, p.Secretbox != nil, p.Identity != nil, p.KMS != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("providers[%d]: exactly one of aesgcm, aescbc, secretbox, identity, kms is required, got %d", i, n)
		}
		var (
			t   value.PrefixTransformer
			err error
		)
		switch {
		case p.AESGCM != nil:
			t, err = aesProvider(p.AESGCM.Keys, aesGCMPrefix, aestransformer.NewGCMTransformer)
		case p.AESCBC != nil:
			t, err = aesProvider(p.AESCBC.Keys, aesCBCPrefix, func(b cipher.Block) (value.Transformer, error) {
				return aestransformer.NewCBCTransformer(b), nil
			})
		case p.Secretbox != nil:
			t, err = secretboxProvider(p.Secretbox.Keys)
		case p.Identity != nil:
			t = value.PrefixTransformer{Transformer: identity.NewEncryptCheckTransformer(), Prefix: []byte{}}
		case p.KMS != nil:
			err = fmt.Errorf("kms provider %q: KMS is not supported by this server (use aescbc, aesgcm or secretbox)", p.KMS.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("providers[%d]: %w", i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// keyBytes checks a provider's keys and decodes their secrets.
func keyBytes(keys []apiserverv1.Key, sizes ...int) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, errors.New("provider has no keys")
	}
	seen := map[string]bool{}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if k.Name == "" {
			return nil, fmt.Errorf("keys[%d]: name is required", i)
		}
		if strings.Contains(k.Name, ":") {
			// The name ends at the first colon in the stored prefix.
			return nil, fmt.Errorf("key %q: name must not contain ':'", k.Name)
		}
		if seen[k.Name] {
			return nil, fmt.Errorf("key %q: duplicate name", k.Name)
		}
		seen[k.Name] = true
		if k.Secret == "" {
			return nil, fmt.Errorf("key %q has no secret", k.Name)
		}
		b, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("key %q: secret is not valid base64: %w", k.Name, err)
		}
		ok := false
		for _, s := range sizes {
			ok = ok || len(b) == s
		}
		if !ok {
			return nil, fmt.Errorf("key %q: secret is %d bytes, want one of %v", k.Name, len(b), sizes)
		}
		out[i] = b
	}
	return out, nil
}

// aesProvider is upstream's aesPrefixTransformer: one transformer per key,
// chosen on reads by the "<name>:" prefix, the first one writing.
func aesProvider(keys []apiserverv1.Key, prefix string, newT func(cipher.Block) (value.Transformer, error)) (value.PrefixTransformer, error) {
	secrets, err := keyBytes(keys, 16, 24, 32)
	if err != nil {
		return value.PrefixTransformer{}, err
	}
	per := make([]value.PrefixTransformer, len(keys))
	for i, k := range keys {
		block, err := aes.NewCipher(secrets[i])
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("key %q: %w", k.Name, err)
		}
		t, err := newT(block)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("key %q: %w", k.Name, err)
		}
		per[i] = value.PrefixTransformer{Transformer: t, Prefix: []byte(k.Name + ":")}
	}
	return value.PrefixTransformer{
		Transformer: value.NewPrefixTransformers(errors.New("no matching key was found for the provided AES transformer"), per...),
		Prefix:      []byte(prefix),
	}, nil
}

// secretboxProvider is upstream's secretboxPrefixTransformer.
func secretboxProvider(keys []apiserverv1.Key) (value.PrefixTransformer, error) {
	secrets, err := keyBytes(keys, 32)
	if err != nil {
		return value.PrefixTransformer{}, err
	}
	per := make([]value.PrefixTransformer, len(keys))
	for i, k := range keys {
		var key [32]byte
		copy(key[:], secrets[i])
		per[i] = value.PrefixTransformer{Transformer: secretbox.NewSecretboxTransformer(key), Prefix: []byte(k.Name + ":")}
	}
	return value.PrefixTransformer{
		Transformer: value.NewPrefixTransformers(errors.New("no matching key was found for the provided Secretbox transformer"), per...),
		Prefix:      []byte(secretboxPrefix),
	}, nil
}

// rule is the providers of gr, nil when the configuration does not name
// it: exact name first, then "*.group", then "*.*", as upstream.
func (c *Config) rule(gr schema.GroupResource) *rule {
	if c == nil {
		return nil
	}
	if r, ok := c.byResource[gr]; ok {
		return r
	}
	if r, ok := c.byResource[schema.GroupResource{Group: gr.Group, Resource: "*"}]; ok {
		return r
	}
	return c.byResource[anyGroupAnyResource]
}

// Encrypts reports whether gr's writes are encrypted.
func (c *Config) Encrypts(gr schema.GroupResource) bool {
	r := c.rule(gr)
	return r != nil && r.encrypts
}
