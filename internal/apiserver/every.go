package apiserver

import (
	"context"
	"time"
)

// every runs fn each interval on the server's clock, with a context
// bounded by timeout, until the server stops. It joins s.wg.
func (s *Server) every(interval, timeout time.Duration, fn func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := s.clock.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C():
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			fn(ctx)
			cancel()
		}
	}()
}
