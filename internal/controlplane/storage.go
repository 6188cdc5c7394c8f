package controlplane

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// stores are the API server's stores: the main one and the shards
// --etcd-servers-overrides asks for.
type stores struct {
	main   storage.Store
	shards []apiserver.StoreShard
	all    []storage.Store
}

func (s *stores) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// openStores opens the embedded store in DataDir, or one etcd client for
// --etcd-servers and one for each distinct set of servers the overrides
// name (overrides naming the same servers share a client and a shard, as
// upstream's do).
func openStores(ctx context.Context, cfg Config) (*stores, error) {
	if cfg.Storage == "embedded" {
		st, err := embedded.Open(ctx, embedded.Options{Dir: filepath.Join(cfg.DataDir, "store"), Logger: cfg.Logger.With("component", "store")})
		if err != nil {
			return nil, fmt.Errorf("opening store: %w", err)
		}
		return &stores{main: st, all: []storage.Store{st}}, nil
	}
	// The etcd backend (internal/storage/etcd) is being merged.
	return nil, errors.New("--storage=etcd: the etcd backend is not in this build yet")
}
