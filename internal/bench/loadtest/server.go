package loadtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// ServerProcess is a `myriad up` the bench started as its own subprocess,
// on a data directory and port it keeps across restarts.
type ServerProcess struct {
	Binary  string
	DataDir string
	Port    int
	// Args are extra flags for `myriad up`.
	Args []string
	// LogPath receives the server's stdout and stderr (appended across
	// restarts).
	LogPath string

	mu struct {
		sync.Mutex
		cmd  *exec.Cmd
		done chan error
	}
}

// Kubeconfig is the admin kubeconfig the server writes.
func (s *ServerProcess) Kubeconfig() string { return filepath.Join(s.DataDir, "kubeconfig") }

// PID is the running server's process ID, 0 when it is not running.
func (s *ServerProcess) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.cmd == nil || s.mu.cmd.Process == nil {
		return 0
	}
	return s.mu.cmd.Process.Pid
}

// Start runs the server and waits until its kubeconfig exists and
// /readyz answers ok, or ctx ends, or a minute passes.
func (s *ServerProcess) Start(ctx context.Context) error {
	if err := s.startNoWait(); err != nil {
		return err
	}
	s.mu.Lock()
	done := s.mu.done
	s.mu.Unlock()
	return s.waitReady(ctx, done)
}

// startNoWait starts the process and returns at once.
func (s *ServerProcess) startNoWait() error {
	if s.Port == 0 {
		p, err := FreePort()
		if err != nil {
			return err
		}
		s.Port = p
	}
	// The kubeconfig is written once serving: removing a previous run's
	// lets waitReady tell when this process got there.
	_ = os.Remove(s.Kubeconfig())
	log, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	args := append([]string{"up", "--data-dir", s.DataDir, "--secure-port", strconv.Itoa(s.Port)}, s.Args...)
	cmd := exec.Command(s.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", s.Binary, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); log.Close() }()
	s.mu.Lock()
	s.mu.cmd, s.mu.done = cmd, done
	s.mu.Unlock()
	return nil
}

func (s *ServerProcess) waitReady(ctx context.Context, done chan error) error {
	deadline := time.Now().Add(time.Minute)
	var mc *MetricsClient
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("myriad up exited before serving (%v); see %s", err, s.LogPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if mc == nil {
			cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig())
			if err != nil {
				continue
			}
			if mc, err = NewMetricsClient(cfg); err != nil {
				return err
			}
		}
		if mc.Ready(ctx) {
			return nil
		}
	}
	return fmt.Errorf("myriad up not ready within a minute; see %s", s.LogPath)
}

// Stop sends SIGTERM and waits up to 30 s for a clean exit, then kills.
func (s *ServerProcess) Stop() error {
	s.mu.Lock()
	cmd, done := s.mu.cmd, s.mu.done
	s.mu.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("myriad up exited with %v; see %s", err, s.LogPath)
		}
		return err
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("myriad up did not stop within 30s; killed")
	}
}

// FreePort returns a TCP port free on 127.0.0.1 right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func execShell(ctx context.Context, command string) ([]byte, error) {
	return exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
}
