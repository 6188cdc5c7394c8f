package kubeletserver

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// hollowRuntime is what runs behind the streams of one request: the pod as the
// request found it, on its hollow node.
type hollowRuntime struct {
	s    *Server
	pod  *corev1.Pod
	node string
}

var (
	_ remotecommand.Executor    = (*hollowRuntime)(nil)
	_ remotecommand.Attacher    = (*hollowRuntime)(nil)
	_ portforward.PortForwarder = (*hollowRuntime)(nil)
)

// ExecInContainer runs cmd in a hollow container. The commands it knows:
//
//	cat                           copies stdin to stdout until stdin ends
//	true                          exits 0
//	false                         exits 1
//	exit N, sh -c "exit N"        exits N (0..255)
//	echo ARGS...                  prints ARGS, space-separated
//	hostname                      prints the pod's name
//
// Anything else prints its command line, space-separated, and exits 0: a
// fixed answer that shows the command got through. A non-zero exit reaches
// the client as the kubelet reports one (NonZeroExitCode, cause ExitCode).
func (rt *hollowRuntime) ExecInContainer(_ context.Context, _, _, _ string, cmd []string, in io.Reader, out, _ io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	go drainResize(resize)
	if len(cmd) == 1 && cmd[0] == "cat" {
		if in == nil {
			return nil
		}
		if out == nil {
			out = discard{}
		}
		_, err := io.Copy(out, in)
		return err
	}
	text, code := rt.run(cmd, in)
	if out != nil && len(text) > 0 {
		if _, err := out.Write(text); err != nil {
			return err
		}
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("exit status %d", code), Code: code}
	}
	return nil
}

// run is ExecInContainer for the commands that need no stdin: their output
// and exit code.
func (rt *hollowRuntime) run(cmd []string, _ io.Reader) ([]byte, int) {
	if len(cmd) == 3 && (cmd[0] == "sh" || cmd[0] == "/bin/sh" || cmd[0] == "bash") && cmd[1] == "-c" {
		if code, ok := exitCode(strings.Fields(cmd[2])); ok {
			return nil, code
		}
	}
	if code, ok := exitCode(cmd); ok {
		return nil, code
	}
	switch {
	case len(cmd) == 1 && cmd[0] == "true":
		return nil, 0
	case len(cmd) == 1 && cmd[0] == "false":
		return nil, 1
	case len(cmd) >= 1 && cmd[0] == "echo":
		return []byte(strings.Join(cmd[1:], " ") + "\n"), 0
	case len(cmd) == 1 && cmd[0] == "hostname":
		return []byte(rt.pod.Name + "\n"), 0
	}
	return []byte(strings.Join(cmd, " ") + "\n"), 0
}

// exitCode recognizes "exit N".
func exitCode(cmd []string) (int, bool) {
	if len(cmd) != 2 || cmd[0] != "exit" {
		return 0, false
	}
	n, err := strconv.Atoi(cmd[1])
	if err != nil || n < 0 || n > 255 {
		return 0, false
	}
	return n, true
}

// AttachContainer streams the container's log, followed, to out until the
// client goes away; whatever arrives on stdin is read and dropped.
func (rt *hollowRuntime) AttachContainer(ctx context.Context, _, _, container string, in io.Reader, out, _ io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize) error {
	go drainResize(resize)
	if in != nil {
		go func() { _, _ = io.Copy(io.Discard, in) }()
	}
	if out == nil {
		<-ctx.Done()
		return nil
	}
	lg, err := rt.s.containerLog(rt.pod, rt.node, container)
	if err != nil {
		return err
	}
	opts := &corev1.PodLogOptions{Follow: true}
	tail := int64(1)
	opts.TailLines = &tail
	w := &flushWriter{w: out}
	rt.s.writeLog(ctx, w, lg, opts)
	return nil
}

// PortForward echoes every byte the client sends on stream back to it, on
// any port, until the client closes its side.
func (rt *hollowRuntime) PortForward(_ context.Context, _, _ string, _ int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	_, err := io.Copy(stream, stream)
	return err
}

// drainResize reads terminal size changes, which hollow containers have no
// use for, until the stream's resize channel closes.
func drainResize(c <-chan remotecommand.TerminalSize) {
	if c == nil {
		return
	}
	for range c {
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }
