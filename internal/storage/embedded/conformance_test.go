package embedded

import (
	"context"
	"log/slog"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/storagetest"
)

// openTest opens a store in a fresh temporary directory, closed at test end.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storagetest.RunConformance(t, func(t *testing.T) storage.Store {
		return openTest(t, Options{})
	})
}

// TestConformanceTinyRing runs the suite with a ring and replay chunk so
// small that nearly every watch from a past revision replays from disk in
// several passes and hands off to live events mid-stream.
func TestConformanceTinyRing(t *testing.T) {
	storagetest.RunConformance(t, func(t *testing.T) storage.Store {
		return openTest(t, Options{WatchRingEvents: 2, ReplayChunk: 3})
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
