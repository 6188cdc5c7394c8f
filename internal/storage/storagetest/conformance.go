// Package storagetest is the conformance suite every storage.Store backend
// runs: the embedded (Pebble) store today, the etcd backend later. A backend
// passes it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storagetest.RunConformance(t, func(t *testing.T) storage.Store { ... })
//	}
//
// Each case gets a fresh, empty store. The suite closes stores itself only in
// the cases that test Close; newStore should register its own t.Cleanup to
// close the store (Close is idempotent).
package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// waitTimeout bounds every wait for an event; tests fail rather than hang.
// It is generous because the race detector on a loaded 2-core machine is slow;
// passing tests never wait for it.
const waitTimeout = 20 * time.Second

// RunConformance runs every semantic case of the storage.Store contract
// against stores made by newStore.
func RunConformance(t *testing.T, newStore func(t *testing.T) storage.Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"GetMissing", testGetMissing},
		{"CreateGet", testCreateGet},
		{"CreateExists", testCreateExists},
		{"UpdateCAS", testUpdateCAS},
		{"UpdateConflictCarriesCurrent", testUpdateConflict},
		{"UpdateExpectedZero", testUpdateExpectedZero},
		{"UpdateMissing", testUpdateMissing},
		{"DeleteCAS", testDeleteCAS},
		{"DeleteConflict", testDeleteConflict},
		{"DeleteMissing", testDeleteMissing},
		{"DeleteUnconditional", testDeleteUnconditional},
		{"RecreateAfterDelete", testRecreateAfterDelete},
		{"ValuesAreCopies", testValuesAreCopies},
		{"EmptyValue", testEmptyValue},
		{"RevisionsStrictlyIncreasing", testRevisionsIncreasing},
		{"FailedWritesConsumeNoRevision", testFailedWritesNoRevision},
		{"ListPrefixIsolation", testListPrefixIsolation},
		{"ListRevision", testListRevision},
		{"ListEmpty", testListEmpty},
		{"WatchOrdering", testWatchOrdering},
		{"WatchPrefixFilter", testWatchPrefixFilter},
		{"WatchFromOldRevision", testWatchFromOldRevision},
		{"WatchFromOldRevisionThenLive", testWatchFromOldThenLive},
		{"WatchAfterCompaction", testWatchAfterCompaction},
		{"WatchPrevValue", testWatchPrevValue},
		{"WatchPrevValueConcurrent", testWatchPrevValueConcurrent},
		{"CompactRules", testCompactRules},
		{"RequestProgress", testRequestProgress},
		{"RequestProgressOrdering", testRequestProgressOrdering},
		{"WatchStop", testWatchStop},
		{"WatchContextCancel", testWatchContextCancel},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ConcurrentCAS", testConcurrentCAS},
		{"ContextCancelledWrite", testContextCancelledWrite},
		{"Health", testHealth},
		{"Close", testClose},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// ctx returns a context bounded by waitTimeout and cancelled at test end.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}
