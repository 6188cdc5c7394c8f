package kubelettest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// Request is one request the server answered: its path, raw query and
// the common name of the client certificate that made it.
type Request struct {
	Path, Query, ClientCN string
}

// Server is a kubelet API over HTTPS on 127.0.0.1.
//
//   - /containerLogs/{ns}/{pod}/{container}: LogLines lines
//     "line N of ns/pod/container"; with follow=true, one more line every
//     FollowInterval until the client goes.
//   - /exec/{ns}/{pod}/{container}?command=…: "echo ARGS" writes ARGS and a
//     newline to stdout; "cat" copies stdin to stdout; "exit N" exits
//     with code N; "sleep" waits for stdin to close; anything else is
//     exit code 127.
//   - /attach/{ns}/{pod}/{container}: writes "attached to CONTAINER\n",
//     then copies stdin to stdout.
//   - /portForward/{ns}/{pod}: every forwarded port echoes what it gets.
//   - /healthz: "ok". Any other path: 404.
type Server struct {
	// URL is https://127.0.0.1:PORT; Port is PORT.
	URL  string
	Port int32

	srv *http.Server
	ln  net.Listener

	mu struct {
		sync.Mutex
		requests []Request
	}
}

// LogLines and FollowInterval shape /containerLogs.
const (
	LogLines       = 3
	FollowInterval = 20 * time.Millisecond
)

// Start serves on 127.0.0.1 (an ephemeral port unless port is set) with
// a serving certificate for 127.0.0.1 signed by ca, accepting clients
// whose certificate ca signed.
func Start(ca *CA, port int) (*Server, error) {
	pair, _, _, err := ca.Issue("kubelettest", nil, true, net.IPv4(127, 0, 0, 1))
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool(),
		NextProtos:   []string{"http/1.1"},
	})
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, Port: int32(ln.Addr().(*net.TCPAddr).Port)}
	s.URL = "https://" + ln.Addr().String()
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server and every open stream.
func (s *Server) Close() { _ = s.srv.Close() }

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.mu.requests...)
}

func (s *Server) record(r *http.Request) {
	var cn string
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		cn = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	s.mu.Lock()
	s.mu.requests = append(s.mu.requests, Request{Path: r.URL.Path, Query: r.URL.RawQuery, ClientCN: cn})
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/healthz":
		fmt.Fprint(w, "ok")
	case parts[0] == "containerLogs" && len(parts) == 4:
		serveLogs(w, r, parts[1], parts[2], parts[3])
	case parts[0] == "exec" && len(parts) == 4:
		opts, err := remotecommand.NewOptions(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		remotecommand.ServeExec(w, r, executor{}, parts[1]+"/"+parts[2], "", parts[3], r.URL.Query()["command"], opts,
			time.Minute, 10*time.Second, remotecommand.SupportedStreamingProtocols)
	case parts[0] == "attach" && len(parts) == 4:
		opts, err := remotecommand.NewOptions(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		remotecommand.ServeAttach(w, r, executor{}, parts[1]+"/"+parts[2], "", parts[3], opts,
			time.Minute, 10*time.Second, remotecommand.SupportedStreamingProtocols)
	case parts[0] == "portForward" && len(parts) == 3:
		opts, err := portforward.NewV4Options(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		portforward.ServePortForward(w, r, echoForwarder{}, parts[1]+"/"+parts[2], "", opts, time.Minute, 10*time.Second, portforward.SupportedProtocols)
	default:
		http.NotFound(w, r)
	}
}

func serveLogs(w http.ResponseWriter, r *http.Request, ns, pod, container string) {
	w.Header().Set("Content-Type", "text/plain")
	n := 0
	line := func() bool {
		n++
		_, err := fmt.Fprintf(w, "line %d of %s/%s/%s\n", n, ns, pod, container)
		_ = http.NewResponseController(w).Flush()
		return err == nil
	}
	for range LogLines {
		if !line() {
			return
		}
	}
	if r.URL.Query().Get("follow") != "true" {
		return
	}
	t := time.NewTicker(FollowInterval)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			if !line() {
				return
			}
		}
	}
}

// executor runs the tiny command set Server documents.
type executor struct{}

func (executor) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, _ io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if len(cmd) == 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("no command"), Code: 127}
	}
	switch cmd[0] {
	case "echo":
		_, err := fmt.Fprintln(out, strings.Join(cmd[1:], " "))
		return err
	case "cat":
		if in == nil || out == nil {
			return nil
		}
		_, err := io.Copy(out, in)
		return err
	case "sleep":
		if in != nil {
			_, _ = io.Copy(io.Discard, in)
		} else {
			<-ctx.Done()
		}
		return nil
	case "exit":
		code := 1
		if len(cmd) > 1 {
			code, _ = strconv.Atoi(cmd[1])
		}
		return utilexec.CodeExitError{Err: fmt.Errorf("exit %d", code), Code: code}
	}
	return utilexec.CodeExitError{Err: fmt.Errorf("%s: not found", cmd[0]), Code: 127}
}

func (executor) AttachContainer(_ context.Context, _, _, container string, in io.Reader, out, _ io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize) error {
	if out != nil {
		if _, err := fmt.Fprintf(out, "attached to %s\n", container); err != nil {
			return err
		}
		if in != nil {
			_, err := io.Copy(out, in)
			return err
		}
	}
	return nil
}

// echoForwarder answers every forwarded port by echoing.
type echoForwarder struct{}

func (echoForwarder) PortForward(_ context.Context, _, _ string, _ int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	_, err := io.Copy(stream, stream)
	return err
}

// Silent listens on 127.0.0.1 and accepts connections without ever
// answering: a kubelet that hangs. Close it when done.
func Silent() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln, nil
}

// SilentAfterHandshake listens on 127.0.0.1 with a serving certificate
// from ca, completes every TLS handshake and then never answers: a kubelet
// hung past its TLS layer. Close it when done.
func SilentAfterHandshake(ca *CA) (net.Listener, error) {
	pair, _, _, err := ca.Issue("kubelettest-silent", nil, true, net.IPv4(127, 0, 0, 1))
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return nil, err
	}
	go func() {
		var mu sync.Mutex
		var held []net.Conn
		defer func() {
			mu.Lock()
			for _, c := range held {
				_ = c.Close()
			}
			mu.Unlock()
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			go func() { _ = c.(*tls.Conn).Handshake() }()
		}
	}()
	return ln, nil
}
