package controlplane

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Connections a shutdown's grace could not end are closed by closeAll,
// and those the server closed itself are forgotten.
func TestConnTrackerClosesWhatShutdownLeaves(t *testing.T) {
	tcpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := trackConns(tcpLn)
	entered := make(chan struct{}, 3)
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	mux.HandleFunc("/hang", func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release // ignores its context, as a handler mid-write would
	})
	mux.HandleFunc("/ok", func(http.ResponseWriter, *http.Request) {})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	url := "http://" + tcpLn.Addr().String()

	// A connection the client closes is closed by the server too, and
	// forgotten.
	quick := &http.Transport{}
	resp, err := (&http.Client{Transport: quick}).Get(url + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	quick.CloseIdleConnections()
	waitFor(t, 5*time.Second, "the closed connection forgotten", func() bool { return ln.open() == 0 })

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{}} // a connection each
			resp, err := c.Get(url + "/hang")
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range 3 {
		<-entered
	}
	if n := ln.open(); n != 3 {
		t.Fatalf("%d connections open, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with hanging requests = %v, want the deadline", err)
	}
	if n := ln.closeAll(); n != 3 {
		t.Errorf("closeAll closed %d connections, want 3", n)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil {
			t.Error("a hanging request got an answer, want its connection closed")
		}
	}
	if n := ln.open(); n != 0 {
		t.Errorf("%d connections open after closeAll, want 0", n)
	}
}

// open is how many accepted connections are not closed yet.
func (t *connTracker) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}
