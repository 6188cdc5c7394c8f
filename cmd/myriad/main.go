// Command myriad is the Myriad control plane: one binary, one subcommand per
// process (see DESIGN.md's command-line contract).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout io.Writer) error
}

func commands() []command {
	return []command{
		{"up", "run the all-in-one control plane on the embedded store", runUp},
		{"apiserver", "run the API server", runAPIServer},
		{"scheduler", "run the scheduler against an API server (--kubeconfig)", runScheduler},
		{"controllers", "run the controller manager against an API server", runControllers},
		{"sim", "run hollow nodes (simulated kubelets) against an API server", runSim},
		{"proxy", "run the service proxy for one node (nf_tables, or --backend dry-run)", runProxy},
		{"kubeconfig", "print a kubeconfig with a client certificate for a user, component or node (--data-dir's CA)", runKubeconfig},
		{"bench", "run a benchmark or SLO load-test scenario (myriad bench -h lists them)", runBench},
		{"version", "print the version", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "myriad:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout)
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("usage: myriad <command> [flags]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'myriad <command> -h' for its flags.\n")
	fmt.Fprint(w, b.String())
}

// newLogger returns a text logger at the level named by --v style flags.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}
