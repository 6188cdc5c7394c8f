package apiserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/myriad-k8s/myriad/internal/encryption"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// TestCacheImageDir: a server with CacheImageDir gives its built-in
// caches image files there, but none to a resource encrypted at rest
// (whose old image, written before encryption was configured, it
// removes: the image holds plaintext), and clears temporary files a
// stop cut short.
func TestCacheImageDir(t *testing.T) {
	dir := t.TempDir()
	images := filepath.Join(dir, "cache-images")
	if err := os.MkdirAll(images, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"secrets.image", "pods.image.tmp123"} {
		if err := os.WriteFile(filepath.Join(images, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := encryption.Load([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n" +
		"resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k, secret: MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := embedded.Open(context.Background(), embedded.Options{Dir: filepath.Join(dir, "store"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Config{Store: st, Logger: quietLogger(), CacheImageDir: images, CacheImageTag: "t", Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		resource string
		want     string
	}{
		{"pods", filepath.Join(images, "pods.image")},
		{"configmaps", filepath.Join(images, "configmaps.image")},
		{"secrets", ""},
	} {
		h, ok := s.handlers[servicesGVR.GroupVersion().WithResource(tc.resource)]
		if !ok {
			t.Fatalf("no handler for %s", tc.resource)
		}
		if got := h.cache.ImageFile(); got != tc.want {
			t.Errorf("%s's image file %q, want %q", tc.resource, got, tc.want)
		}
	}
	for _, f := range []string{"secrets.image", "pods.image.tmp123"} {
		if _, err := os.Stat(filepath.Join(images, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", f, err)
		}
	}
}
