package serviceaccount

import (
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	jose "github.com/go-jose/go-jose/v4"
)

// Paths of the OIDC discovery documents, as upstream.
const (
	OpenIDConfigurationPath = "/.well-known/openid-configuration"
	JWKSPath                = "/openid/v1/jwks"
)

// openIDMetadata is the discovery document: what an OIDC relying party
// needs to verify a token offline (upstream's openidmetadata.go).
type openIDMetadata struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// DiscoveryHandler serves OpenIDConfigurationPath and JWKSPath: the
// issuer's metadata pointing at jwksURI, and keys as a JSON Web Key Set.
// Both are computed once (they change only with a restart) and cached by
// clients for an hour, as upstream. Who may read them is the
// authorizer's business (upstream grants system:service-account-issuer-
// discovery to every ServiceAccount).
func DiscoveryHandler(issuer, jwksURI string, keys []crypto.PublicKey) (http.Handler, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("serviceaccount: issuer %q is not an https URL; OIDC discovery needs one", issuer)
	}
	if jwksURI == "" {
		return nil, errors.New("serviceaccount: the JWKS URI is required")
	}
	set := jose.JSONWebKeySet{}
	algs := []string{}
	for _, k := range keys {
		alg, err := algorithmFor(k)
		if err != nil {
			return nil, err
		}
		id, err := KeyID(k)
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: id, Algorithm: string(alg), Use: "sig"})
		if !slices.Contains(algs, string(alg)) {
			algs = append(algs, string(alg))
		}
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: encoding the key set: %w", err)
	}
	config, err := json.Marshal(openIDMetadata{
		Issuer: issuer, JWKSURI: jwksURI,
		ResponseTypes: []string{"id_token"}, SubjectTypes: []string{"public"}, SigningAlgs: algs,
	})
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		switch r.URL.Path {
		case OpenIDConfigurationPath:
			body = config
			w.Header().Set("Content-Type", "application/json")
		case JWKSPath:
			body = jwks
			w.Header().Set("Content-Type", "application/jwk-set+json")
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	}), nil
}
