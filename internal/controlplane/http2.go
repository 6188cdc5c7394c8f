package controlplane

import (
	"fmt"
	"net/http"

	"golang.org/x/net/http2"
)

// maxStreamsPerConnection is how many requests one client connection may
// have open at once: 1,000, as upstream's generic API server options set
// it for clients that multiplex many watches on one connection.
const maxStreamsPerConnection = 1000

// configureHTTP2 serves HTTP/2 on srv with a write scheduler whose cost per
// frame does not grow with the connection's idle streams.
//
// A connection's streams are mostly watches that send nothing for minutes.
// net/http's own HTTP/2 server, like golang.org/x/net/http2's default,
// looks for the next frame to write by walking every open stream's queue,
// empty or not, after each frame it writes: with a client multiplexing a
// thousand watches on one connection (an operator, an aggregator, the
// simulator's hollow nodes), that walk was a quarter of the API server's
// CPU (docs/bench/proxy.md). The random scheduler keeps only the streams
// with frames queued; which of those goes next is random, so no stream
// starves.
func configureHTTP2(srv *http.Server) error {
	h2 := &http2.Server{
		MaxConcurrentStreams: maxStreamsPerConnection,
		NewWriteScheduler:    http2.NewRandomWriteScheduler,
	}
	if err := http2.ConfigureServer(srv, h2); err != nil {
		return fmt.Errorf("configuring HTTP/2: %w", err)
	}
	return nil
}
