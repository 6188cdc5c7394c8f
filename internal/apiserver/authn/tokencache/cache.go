package tokencache

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
)

// Defaults, as upstream's.
const (
	DefaultTTL     = 10 * time.Second
	DefaultEntries = 4096
)

// Config configures New; zero values take the defaults.
type Config struct {
	// TTL is how long a success is remembered (default 10 s).
	TTL time.Duration
	// MaxEntries bounds the memory (default 4096 tokens).
	MaxEntries int
	Clock      clock.PassiveClock
}

// Cache is a caching authn.TokenAuthenticator. Safe for concurrent use.
type Cache struct {
	next authn.TokenAuthenticator
	ttl  time.Duration
	max  int
	now  func() time.Time

	mu struct {
		sync.Mutex
		entries map[[sha256.Size]byte]entry
	}
}

type entry struct {
	resp    *authn.TokenResponse
	expires time.Time
}

var _ authn.TokenAuthenticator = (*Cache)(nil)

// New caches next's successes.
func New(next authn.TokenAuthenticator, cfg Config) *Cache {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultEntries
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Cache{next: next, ttl: cfg.TTL, max: cfg.MaxEntries, now: cfg.Clock.Now}
	c.mu.entries = make(map[[sha256.Size]byte]entry)
	return c
}

// AuthenticateToken answers from the cache or asks next. The key is a
// digest of the token and the audiences asked about, so the cache holds
// no token and an answer for one audience is never given for another.
func (c *Cache) AuthenticateToken(ctx context.Context, token string, audiences []string) (*authn.TokenResponse, bool, error) {
	key := digest(token, audiences)
	now := c.now()
	c.mu.Lock()
	e, ok := c.mu.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.resp, true, nil
	}
	resp, ok, err := c.next.AuthenticateToken(ctx, token, audiences)
	if !ok || err != nil {
		return resp, ok, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.entries) >= c.max {
		c.evictLocked(now)
	}
	c.mu.entries[key] = entry{resp: resp, expires: now.Add(c.ttl)}
	return resp, true, nil
}

// evictLocked drops expired entries and, if that is not enough, an
// arbitrary quarter of the rest (map order): a full cache under a flood of
// distinct tokens stays bounded without an LRU list on the hot path.
func (c *Cache) evictLocked(now time.Time) {
	for k, e := range c.mu.entries {
		if !now.Before(e.expires) {
			delete(c.mu.entries, k)
		}
	}
	drop := len(c.mu.entries) - c.max*3/4
	for k := range c.mu.entries {
		if drop <= 0 {
			break
		}
		delete(c.mu.entries, k)
		drop--
	}
}

func digest(token string, audiences []string) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(token))
	if audiences == nil {
		h.Write([]byte{0}) // the API server's own, distinct from an empty list
	} else {
		h.Write([]byte{1})
		h.Write([]byte(strings.Join(audiences, "\x00")))
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
