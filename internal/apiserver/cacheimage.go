package apiserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/cache"
)

// cacheImageFile is where the cache named metricsName keeps its image
// under Config.CacheImageDir, "" when it keeps none: no directory, or a
// resource encrypted at rest, whose image would hold its plaintext (an
// image left from before encryption was turned on is removed).
func (s *Server) cacheImageFile(metricsName schema.GroupResource, encrypted bool) (string, error) {
	if s.cfg.CacheImageDir == "" {
		return "", nil
	}
	// A served version's cache is named "group/version"; keep it one
	// path element.
	file := filepath.Join(s.cfg.CacheImageDir, strings.ReplaceAll(metricsName.String(), "/", "_")+".image")
	if encrypted {
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("removing the cache image of encrypted %s: %w", metricsName, err)
		}
		return "", nil
	}
	return file, nil
}

// prepareCacheImageDir makes Config.CacheImageDir and removes what a
// stop cut short left there (SaveImage's temporary files).
func (s *Server) prepareCacheImageDir() error {
	if s.cfg.CacheImageDir == "" {
		return nil
	}
	if err := os.MkdirAll(s.cfg.CacheImageDir, 0o700); err != nil {
		return fmt.Errorf("cache image directory: %w", err)
	}
	left, err := filepath.Glob(filepath.Join(s.cfg.CacheImageDir, "*.tmp*"))
	if err != nil {
		return fmt.Errorf("cache image directory: %w", err)
	}
	for _, f := range left {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("cache image directory: %w", err)
		}
	}
	return nil
}

// saveCacheImages has every stopped built-in cache save its image, on
// every core: a million objects are a few hundred MB to write, and the
// time is the stop's.
func (s *Server) saveCacheImages() {
	if s.cfg.CacheImageDir == "" {
		return
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	for _, h := range s.handlers {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// Stop has no deadline to pass on: the write is bounded by
			// the cache's size.
			if err := h.cache.SaveImage(context.Background()); err != nil && !errors.Is(err, cache.ErrNoImage) {
				s.log.Warn("cache image not saved; the next start lists the store", "resource", h.res.GroupVersionResource(), "err", err)
			}
		})
	}
	wg.Wait()
	s.log.Info("saved the cache images", "took", time.Since(start).Round(time.Millisecond))
}
