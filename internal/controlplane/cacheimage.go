package controlplane

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// cacheImages says where the API server's caches keep their images and
// with which tag: over the embedded store, beside the store, in the data
// directory that owns it. Over etcd they keep none ("", ""): a directory
// cannot tell one etcd cluster's revisions from another's.
func cacheImages(cfg Config) (dir, tag string, err error) {
	if cfg.Storage != "embedded" {
		return "", "", nil
	}
	if tag, err = buildTag(); err != nil {
		return "", "", err
	}
	return filepath.Join(cfg.DataDir, "cache-images"), tag, nil
}

// buildTag names this binary for cache images: the Go build ID, which
// changes with any change to the code built (an image written by another
// build may index objects differently). Without one (not ELF, or
// stripped) it is the executable's path, size and modification time.
func buildTag() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cache image tag: %w", err)
	}
	if f, err := elf.Open(exe); err == nil {
		defer f.Close()
		if sec := f.Section(".note.go.buildid"); sec != nil {
			if note, err := sec.Data(); err == nil {
				sum := sha256.Sum256(note)
				return "go-build-" + hex.EncodeToString(sum[:16]), nil
			}
		}
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return "", fmt.Errorf("cache image tag: %w", err)
	}
	return fmt.Sprintf("%s:%d:%d", exe, fi.Size(), fi.ModTime().UnixNano()), nil
}
