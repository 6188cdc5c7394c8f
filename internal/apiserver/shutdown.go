package apiserver

import (
	"context"
	"sync"
)

// BookmarkWatchers gives every watch that accepts bookmarks one at its
// cache's revision and waits, until ctx ends, for the watches to send
// what they hold (cache.BookmarkAll). Call it when going down, before the
// watches end: each client then resumes after the restart from the
// revision it had reached instead of its last event, which for a quiet
// selector (a node's pods) can be older than the restarted server's
// window and would cost a relist per client — ten thousand at once in a
// large cluster.
func (s *Server) BookmarkWatchers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, h := range s.handlers {
		wg.Go(func() { h.cache.BookmarkAll(ctx) })
	}
	wg.Wait()
}
