package bootstraptoken

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Options configure an Authenticator; zero fields take the stated defaults.
type Options struct {
	// Clock judges expiration (default the real clock).
	Clock clock.PassiveClock
	// Logger receives why a token that looked like a bootstrap token was
	// refused, at debug level as upstream logs it at V(3) (default
	// slog.Default()).
	Logger *slog.Logger
}

// Authenticator is the bootstrap token authenticator. It is safe for
// concurrent use once Run has started it.
type Authenticator struct {
	informer toolscache.SharedIndexInformer
	clock    clock.PassiveClock
	log      *slog.Logger

	mu struct {
		sync.RWMutex
		// entries by token id: the valid-looking Secrets (right type,
		// usage and id, parseable groups and expiration, not being
		// deleted). A Secret that is not is absent.
		entries map[string]*entry
	}
}

var _ authn.TokenAuthenticator = (*Authenticator)(nil)

// entry is what authenticating a token needs from its Secret, parsed once.
type entry struct {
	secret []byte
	// expires is the zero time for a token without expiration.
	expires time.Time
	// user is shared by every request the token authenticates: it must
	// not be modified.
	user *request.User
}

// New builds the authenticator over lw, which lists and watches Secrets
// (all namespaces: New narrows it to kube-system's bootstrap token
// Secrets with a field selector). Call Run to start it.
func New(lw toolscache.ListerWatcher, opts Options) (*Authenticator, error) {
	if lw == nil {
		return nil, errors.New("bootstraptoken: a ListerWatcher is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	a := &Authenticator{clock: opts.Clock, log: opts.Logger}
	a.mu.entries = map[string]*entry{}
	a.informer = toolscache.NewSharedIndexInformer(selected{toolscache.ToListerWatcherWithContext(lw)}, &corev1.Secret{}, 0, toolscache.Indexers{})
	_, err := a.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.set(obj) },
		UpdateFunc: func(_, obj any) { a.set(obj) },
		DeleteFunc: a.remove,
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Run feeds the authenticator until ctx is done.
func (a *Authenticator) Run(ctx context.Context) { a.informer.RunWithContext(ctx) }

// HasSynced reports whether the initial list has been loaded: before
// that, every bootstrap token is refused.
func (a *Authenticator) HasSynced() bool { return a.informer.HasSynced() }

// AuthenticateToken implements authn.TokenAuthenticator. A token not of
// the bootstrap form is not this authenticator's (false, nil); one of the
// form that no valid Secret matches is refused the same way, as upstream,
// so the union answers 401 with its generic message and nothing tells a
// caller which part was wrong. Bootstrap tokens have no audiences: every
// audience accepts them, as upstream.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string, _ []string) (*authn.TokenResponse, bool, error) {
	id, secret, ok := ParseToken(token)
	if !ok {
		return nil, false, nil
	}
	a.mu.RLock()
	e := a.mu.entries[id]
	a.mu.RUnlock()
	if e == nil {
		return nil, false, nil
	}
	// The log calls are guarded: their arguments would cost an
	// allocation on every refused request.
	if subtle.ConstantTimeCompare(e.secret, []byte(secret)) != 1 {
		if a.log.Enabled(ctx, slog.LevelDebug) {
			a.log.DebugContext(ctx, "bootstrap token refused: wrong token-secret", "tokenID", id)
		}
		return nil, false, nil
	}
	if !e.expires.IsZero() && !a.clock.Now().Before(e.expires) {
		if a.log.Enabled(ctx, slog.LevelDebug) {
			a.log.DebugContext(ctx, "bootstrap token refused: expired", "tokenID", id, "expiration", e.expires)
		}
		return nil, false, nil
	}
	return &authn.TokenResponse{User: e.user}, true, nil
}

// set files obj's entry, or drops the token's entry when obj no longer
// makes a valid one.
func (a *Authenticator) set(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	id, ok := bootstrapsecretutil.ParseName(s.Name)
	if !ok {
		return
	}
	e, why := parseSecret(s, id)
	a.mu.Lock()
	defer a.mu.Unlock()
	if e == nil {
		if why != "" {
			a.log.Debug("bootstrap token secret not usable for authentication", "secret", s.Name, "reason", why)
		}
		delete(a.mu.entries, id)
		return
	}
	a.mu.entries[id] = e
}

func (a *Authenticator) remove(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if id, ok := bootstrapsecretutil.ParseName(s.Name); ok {
		a.mu.Lock()
		delete(a.mu.entries, id)
		a.mu.Unlock()
	}
}

// parseSecret checks s as upstream's authenticator does on every request
// (except expiration, which depends on when it is used) and returns the
// entry, or nil and why not.
func parseSecret(s *corev1.Secret, id string) (*entry, string) {
	switch {
	case s.Namespace != metav1.NamespaceSystem:
		return nil, ""
	case s.DeletionTimestamp != nil:
		return nil, "is being deleted"
	case s.Type != bootstrapapi.SecretTypeBootstrapToken || s.Data == nil:
		return nil, "type is not " + string(bootstrapapi.SecretTypeBootstrapToken)
	case bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenIDKey) != id:
		return nil, "token-id does not match the name"
	case bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenUsageAuthentication) != "true":
		return nil, "not marked " + bootstrapapi.BootstrapTokenUsageAuthentication + "=true"
	}
	secret := s.Data[bootstrapapi.BootstrapTokenSecretKey]
	if len(secret) == 0 {
		return nil, "no token-secret"
	}
	var expires time.Time
	if v := bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenExpirationKey); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			// Upstream treats an unparseable expiration as expired.
			return nil, "unparseable expiration " + v
		}
		expires = t
	}
	groups, err := bootstrapsecretutil.GetGroups(s)
	if err != nil {
		return nil, "invalid auth-extra-groups: " + err.Error()
	}
	// system:authenticated is added here, once, rather than by the
	// bearer token authenticator per request.
	groups = append(groups, request.GroupAuthenticated)
	return &entry{
		secret:  append([]byte(nil), secret...),
		expires: expires,
		user:    &request.User{Name: bootstrapapi.BootstrapUserPrefix + id, Groups: groups},
	}, ""
}

// fieldSelector narrows the informer to what can be a bootstrap token.
var fieldSelector = fields.AndSelectors(
	fields.OneTermEqualSelector("metadata.namespace", metav1.NamespaceSystem),
	fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)),
).String()

// selected is a ListerWatcher over kube-system's bootstrap token Secrets.
type selected struct {
	lw toolscache.ListerWatcherWithContext
}

var _ toolscache.ListerWatcherWithContext = selected{}

func (s selected) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s selected) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

func (s selected) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.FieldSelector = fieldSelector
	return s.lw.ListWithContext(ctx, opts)
}

func (s selected) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = fieldSelector
	return s.lw.WatchWithContext(ctx, opts)
}
