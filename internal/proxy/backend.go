package proxy

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Backend programs ServiceViews into the data path.
type Backend interface {
	// Sync programs the changed Services (a nil view: the Service is gone)
	// as one transaction. On error nothing of the batch is in place and the
	// previous state still is; the caller retries the same changes.
	Sync(ctx context.Context, changes map[types.NamespacedName]*ServiceView) (SyncResult, error)
	// Resync rewrites everything Sync has programmed, as one transaction,
	// repairing drift (objects changed or removed behind the proxy's back).
	Resync(ctx context.Context) (SyncResult, error)
	// Supports says whether the backend can program a protocol.
	Supports(p v1.Protocol) bool
}

// SyncResult counts what one transaction touched.
type SyncResult struct {
	Elements int // map and set elements added or deleted
	Chains   int // chains added, flushed or deleted
	Rules    int // rules added
	Maps     int // maps and sets added or deleted
	// StaleFlows counts UDP flows to removed endpoints whose conntrack
	// entries the sync deletes (or, dry run, would delete).
	StaleFlows int
}

// Add returns the sum of r and o.
func (r SyncResult) Add(o SyncResult) SyncResult {
	return SyncResult{r.Elements + o.Elements, r.Chains + o.Chains, r.Rules + o.Rules, r.Maps + o.Maps, r.StaleFlows + o.StaleFlows}
}
