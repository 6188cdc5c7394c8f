package filters

import "net/http"

// writeStackBytes is the stack a write's goroutine is given up front.
// Managed-fields tracking (structured-merge-diff's recursive compare and
// merge of the whole object) runs deep under the HTTP/2 and filter frames;
// a goroutine that first reaches that depth on its starting stack doubles
// it there, walking and copying every deep frame, once per request. Lease
// renewals spent 8.7% of the server's CPU in that copy when an admission
// change added 184 bytes of frames to the path (docs/bench/api.md).
const writeStackBytes = 32 << 10

// WithWriteStack grows the stack of every POST, PUT and PATCH to more than
// writeStackBytes before anything else runs, while the goroutine holds a
// handful of frames, so the runtime grows it once, cheaply, instead of deep
// inside the merge (CockroachDB's growstack package does the same for its
// storage paths). Put it outermost. Reads are left alone: most need
// little stack, and a large one costs each of them the allocation.
func WithWriteStack(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			growStack(0)
		}
		next.ServeHTTP(w, r)
	})
}

// growStack needs a frame of writeStackBytes, so calling it grows the
// calling goroutine's stack to hold that much above its current depth.
// Call it as growStack(0): the index only keeps the compiler from dropping
// the array.
//
//go:noinline
func growStack(i int) byte {
	var buf [writeStackBytes]byte
	buf[i] = 1
	return buf[(i+1)%len(buf)]
}
