package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/apiserver/expiry"
	"github.com/myriad-k8s/myriad/internal/storage"
)

// startEventExpiry deletes events EventTTL after their last write, through
// whichever API they were written (both are stored as core/v1 events).
// A store that expires keys itself (TTLWriter) needs no loop: events are
// written to it with their TTL (shards.go).
func (s *Server) startEventExpiry() error {
	if s.cfg.EventTTL < 0 || s.eventsExpireInStore() {
		return nil
	}
	h, ok := s.handlers[schema.GroupVersionResource{Version: "v1", Resource: "events"}]
	if !ok {
		return nil
	}
	e, err := expiry.New(expiry.Config{
		Store:     h.objects.store,
		Prefix:    h.objects.prefix(),
		TTL:       s.cfg.EventTTL,
		LastWrite: func(kv storage.KeyValue) (time.Time, bool) { return eventLastWrite(h.objects, kv) },
		Clock:     s.clock,
		Logger:    s.log.With("component", "event-ttl"),
		Metrics:   s.metrics,
	})
	if err != nil {
		return fmt.Errorf("event expiry: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		<-s.stop
		cancel()
	}()
	go func() {
		defer s.wg.Done()
		e.Run(ctx)
	}()
	return nil
}

// eventLastWrite is the newest time a stored event records about itself:
// what a restarted server counts its TTL from, having not seen the write.
func eventLastWrite(o *objectStore, kv storage.KeyValue) (time.Time, bool) {
	obj, err := o.decode(kv)
	if err != nil {
		return time.Time{}, false
	}
	e, ok := obj.(*corev1.Event)
	if !ok {
		return time.Time{}, false
	}
	t := e.CreationTimestamp.Time
	for _, c := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	for _, mf := range e.ManagedFields {
		if mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t, !t.IsZero()
}
