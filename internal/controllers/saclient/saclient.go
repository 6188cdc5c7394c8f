package saclient

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Namespace is where the controllers' ServiceAccounts live.
const Namespace = "kube-system"

// DefaultExpiration is the lifetime asked for each token (upstream's
// controller client builder asks for one hour).
const DefaultExpiration = time.Hour

// Builder makes per-ServiceAccount client configurations. Safe for
// concurrent use.
type Builder struct {
	root kubernetes.Interface
	base *rest.Config
	// transport is base's, without its credentials, shared by every
	// account's client: the controllers of one process multiplex over one
	// connection as they did under one identity, instead of a connection
	// each.
	transport  http.RoundTripper
	expiration time.Duration
	clock      clock.PassiveClock
}

// NewBuilder returns a Builder whose ServiceAccounts are created and whose
// tokens are requested through root, and whose configurations are base
// (server, CA, rate limits) with base's own credentials removed.
func NewBuilder(root kubernetes.Interface, base *rest.Config, clk clock.PassiveClock) (*Builder, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	anon := rest.AnonymousClientConfig(base)
	// AnonymousClientConfig drops WrapTransport, which is how myriad up
	// hands its components the in-memory loopback transport; it carries
	// no credentials, so the ServiceAccount clients keep it.
	anon.WrapTransport = base.WrapTransport
	rt, err := rest.TransportFor(anon)
	if err != nil {
		return nil, fmt.Errorf("saclient: transport: %w", err)
	}
	return &Builder{root: root, base: base, transport: rt, expiration: DefaultExpiration, clock: clk}, nil
}

// Config is a client configuration that authenticates as
// system:serviceaccount:kube-system:<serviceAccount>. It calls nothing
// until its first request, so building controllers stays free of API
// calls; that request creates the ServiceAccount if needed and fetches a
// token.
func (b *Builder) Config(serviceAccount string) *rest.Config {
	rc := rest.AnonymousClientConfig(b.base)
	// The TLS settings live in the shared transport now (client-go
	// refuses both).
	rc.TLSClientConfig = rest.TLSClientConfig{}
	rc.Transport = b.transport
	rc.UserAgent = b.base.UserAgent + "/" + serviceAccount
	src := &tokenSource{b: b, name: serviceAccount}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &tokenTransport{src: src, next: rt}
	}
	return rc
}

// tokenSource holds one ServiceAccount's current token.
type tokenSource struct {
	b    *Builder
	name string

	mu      sync.Mutex
	token   string
	refresh time.Time // when to fetch the next token
}

// get returns a valid token, fetching a new one when none is held or the
// held one is past 80% of its life.
func (s *tokenSource) get(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.b.clock.Now().Before(s.refresh) {
		return s.token, nil
	}
	tok, err := s.fetch(ctx)
	if err != nil {
		return "", fmt.Errorf("token for serviceaccount %s/%s: %w", Namespace, s.name, err)
	}
	issued := s.b.clock.Now()
	lifetime := tok.Status.ExpirationTimestamp.Sub(issued)
	s.token = tok.Status.Token
	s.refresh = issued.Add(lifetime * 8 / 10)
	return s.token, nil
}

// invalidate drops token if it is still the held one, so the next request
// fetches another.
func (s *tokenSource) invalidate(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == token {
		s.token = ""
	}
}

func (s *tokenSource) fetch(ctx context.Context) (*authenticationv1.TokenRequest, error) {
	sas := s.b.root.CoreV1().ServiceAccounts(Namespace)
	expiration := int64(s.b.expiration / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}
	tok, err := sas.CreateToken(ctx, s.name, req, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: Namespace}}
		if _, err := sas.Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the service account: %w", err)
		}
		tok, err = sas.CreateToken(ctx, s.name, req, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, err
	}
	if tok.Status.Token == "" {
		return nil, fmt.Errorf("the server returned an empty token")
	}
	return tok, nil
}

// tokenTransport sets the ServiceAccount's bearer token on every request.
type tokenTransport struct {
	src  *tokenSource
	next http.RoundTripper
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.src.get(req.Context())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.src.invalidate(tok)
	}
	return resp, err
}

// WrappedRoundTripper lets client-go's transport debugging see through.
func (t *tokenTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
