package podcontrol

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTTL is how long unfulfilled expectations are trusted before a
// controller resyncs anyway (upstream's ExpectationsTimeout): a watch event
// that never arrives must not wedge a controller forever.
const ExpectationsTTL = 5 * time.Minute

// Expectations records, per controller key, the creations and deletions a
// controller has issued but not yet seen in its informer cache. While any
// are outstanding the controller must not compute a new diff from the cache,
// or it would create (or delete) the same pods twice.
//
// Deletions are tracked by pod key, so a pod observed deleted twice (an
// update with deletionTimestamp, then the delete event) counts once.
// Safe for concurrent use.
type Expectations struct {
	clock clock.PassiveClock
	mu    struct {
		sync.Mutex
		byKey map[string]*expectation
	}
}

type expectation struct {
	adds      int
	dels      map[string]struct{}
	timestamp time.Time
}

// NewExpectations returns empty expectations timed by clk.
func NewExpectations(clk clock.PassiveClock) *Expectations {
	e := &Expectations{clock: clk}
	e.mu.byKey = map[string]*expectation{}
	return e
}

// Satisfied reports whether the controller for key may sync from its cache:
// nothing is outstanding, nothing was ever recorded, or the record is older
// than ExpectationsTTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.mu.byKey[key]
	if !ok {
		return true
	}
	if x.adds <= 0 && len(x.dels) == 0 {
		return true
	}
	return e.clock.Since(x.timestamp) > ExpectationsTTL
}

// Expect replaces key's record with adds creations and the deletions of
// the pods named by delKeys.
func (e *Expectations) Expect(key string, adds int, delKeys []string) {
	dels := make(map[string]struct{}, len(delKeys))
	for _, k := range delKeys {
		dels[k] = struct{}{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mu.byKey[key] = &expectation{adds: adds, dels: dels, timestamp: e.clock.Now()}
}

// CreationObserved lowers key's outstanding creations by one: a pod the
// controller created appeared, or a creation it expected was not made.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.mu.byKey[key]; ok && x.adds > 0 {
		x.adds--
	}
}

// DeletionObserved marks podKey's deletion as seen (idempotent).
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.mu.byKey[key]; ok {
		delete(x.dels, podKey)
	}
}

// Delete forgets key, when its controller object is gone.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.mu.byKey, key)
}

// Pending returns key's outstanding creations and deletions, for tests and logs.
func (e *Expectations) Pending(key string) (adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.mu.byKey[key]; ok {
		return x.adds, len(x.dels)
	}
	return 0, 0
}
