package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// binary is the myriad binary built once for the whole package.
var binary string

// shared is the control plane most tests use.
var shared *server

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "myriad-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "myriad")
	build := exec.Command("go", "build", "-o", binary, "../../cmd/myriad")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building myriad:", err)
		return 1
	}
	shared, err = startServer(filepath.Join(dir, "shared"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting myriad:", err)
		return 1
	}
	code := m.Run()
	if err := shared.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping myriad:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// server is one running `myriad up`.
type server struct {
	dataDir, kubeconfig string
	port                int
	cmd                 *exec.Cmd
	log                 *safeBuffer
	done                chan error
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts myriad up on dataDir and a free port and waits until
// it is ready (kubeconfig written, /readyz ok).
func startServer(dataDir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return startServerOnPort(dataDir, port)
}

func startServerOnPort(dataDir string, port int) (*server, error) {
	return startCommand("up", dataDir, port)
}

// startAPIServer starts `myriad apiserver` (the API alone: no scheduler, no
// controllers) on dataDir and a free port, for tests that run their own
// components against it. Without the serviceaccount controller no
// namespace gets its "default" account, so the ServiceAccount admission
// plugin is off, as in upstream's integration tests.
func startAPIServer(dataDir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return startCommand("apiserver", dataDir, port, "--disable-admission-plugins=ServiceAccount")
}

func startCommand(command, dataDir string, port int, extraArgs ...string) (*server, error) {
	s := &server{dataDir: dataDir, kubeconfig: filepath.Join(dataDir, "kubeconfig"), port: port, log: &safeBuffer{}, done: make(chan error, 1)}
	_ = os.Remove(s.kubeconfig)
	s.cmd = exec.Command(binary, append([]string{command, "--data-dir", dataDir, "--secure-port", strconv.Itoa(port)}, extraArgs...)...)
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.done <- s.cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("myriad exited early: %v\n%s", err, s.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := os.Stat(s.kubeconfig); err == nil {
			return s, nil
		}
	}
	_ = s.cmd.Process.Kill()
	return nil, fmt.Errorf("myriad not ready within 60s:\n%s", s.log.String())
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		return err
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		return fmt.Errorf("myriad did not stop within 30s")
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

func (s *server) restConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatalf("loading kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg
}

func (s *server) client(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(s.restConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// protoClient speaks protobuf, as client-go's core clients do in controllers.
func (s *server) protoClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	cfg := s.restConfig(t)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kubectl runs kubectl against s with stdin and returns its combined output.
func (s *server) kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustKubectl fails the test if kubectl fails.
func (s *server) mustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := s.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
