package loadtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options say where a scenario runs and where its report goes.
type Options struct {
	// Kubeconfig of the server under test. Empty: the bench starts
	// `myriad up` (Binary) on DataDir as a subprocess and stops it at the
	// end.
	Kubeconfig string
	// Binary is the myriad binary to start when Kubeconfig is empty
	// (normally os.Executable()).
	Binary string
	// DataDir for the started server. Default: a temporary directory,
	// removed afterwards.
	DataDir string
	// ServerArgs are extra `myriad up` flags for the started server.
	ServerArgs []string
	// ServerPID is the PID of a local server given by Kubeconfig, so its
	// CPU and RSS can be read from /proc. 0: from its process_* metrics.
	ServerPID int
	// Out is the report directory (required).
	Out string
	// Command is the command line recorded in the report.
	Command string
	// Progress receives the live progress line (stderr); nil for none.
	Progress io.Writer
	// Logger for the bench's own logs. Default: warnings to stderr.
	Logger *slog.Logger
	// SampleInterval between /metrics and /proc samples. Default 1 s.
	SampleInterval time.Duration
	// Keep leaves what the scenario made (namespaces and their objects,
	// hollow nodes' Node objects) on the server instead of deleting it
	// at the end: for a throwaway server, where deleting 200,000 pods and
	// 10,000 Nodes took longer than the run and the report waited on it.
	Keep bool
	// CPUProfile, if set, is where a CPU profile of this process (the
	// scenario's clients, watchers and hollow nodes, not the server) over
	// the scenario is written.
	CPUProfile string
	// QPS and Burst of the bench's clients. Default 5,000 and 10,000:
	// the server, not the client, is what is measured.
	QPS   float32
	Burst int
}

// Env is what a scenario runs with.
type Env struct {
	// RESTConfig is the server's config with the bench's QPS; Client is a
	// clientset on it (protobuf).
	RESTConfig *rest.Config
	Client     kubernetes.Interface
	// Server is the subprocess when the bench started it, else nil.
	Server   *ServerProcess
	Metrics  *MetricsClient
	Monitor  *Monitor
	Progress *Progress
	// Latency records the scenario's calls; its stats become the report's
	// latency table (with SLO verdicts when SLOs is set) unless the
	// scenario fills Result.Latencies itself (OwnLatencyTable), e.g. per
	// phase. Its samples always make the latency-over-time plot.
	Latency         *Recorder
	SLOs            bool
	OwnLatencyTable bool
	Result          *Result
	Log             *slog.Logger
	// Plots the scenario wants besides the standard CPU, memory and
	// latency ones.
	Plots []PlotSpec
	// Start is time zero of every series.
	Start time.Time
	// RestartCommand is run by Restart for a server the bench did not
	// start.
	RestartCommand string
	// Keep is Options.Keep: the scenario's cleanup does nothing.
	Keep bool
}

// Elapsed is seconds since Start, for series points.
func (e *Env) Elapsed() float64 { return time.Since(e.Start).Seconds() }

// Restart restarts the server: SIGTERM and start again on the same data
// dir and port when the bench started it, else RestartCommand through
// sh -c. It returns once the new process is started (not ready).
func (e *Env) Restart(ctx context.Context) error {
	if e.Server != nil {
		if err := e.Server.Stop(); err != nil {
			e.Log.Warn("server stop", "err", err)
		}
		return e.Server.startNoWait()
	}
	if e.RestartCommand == "" {
		return errors.New("the server was given by --kubeconfig: restarting it needs --restart-command")
	}
	out, err := execShell(ctx, e.RestartCommand)
	if err != nil {
		return fmt.Errorf("restart command %q: %w: %s", e.RestartCommand, err, out)
	}
	return nil
}

// Scenario is one scenario's body. It fills env.Result's params, figures,
// verdicts and series; the harness adds the machine, the server's CPU,
// memory and request-rate series, the latency table and the plots.
type Scenario func(ctx context.Context, env *Env) error

// Run prepares the environment, runs fn, and writes the report to
// opts.Out. The result is returned (and written) even when fn fails, with
// the failure in its notes.
func Run(ctx context.Context, name string, opts Options, restartCommand string, fn Scenario) (*Result, error) {
	if opts.Out == "" {
		return nil, errors.New("--out is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if opts.QPS == 0 {
		opts.QPS, opts.Burst = 5000, 10000
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	env := &Env{Log: opts.Logger, RestartCommand: restartCommand, Keep: opts.Keep}
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		srv, cleanup, err := startServer(ctx, opts)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		env.Server = srv
		kubeconfig = srv.Kubeconfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	cfg.UserAgent = "myriad-bench-" + name
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	env.RESTConfig = cfg
	if env.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if env.Metrics, err = NewMetricsClient(cfg); err != nil {
		return nil, err
	}
	stopProfile, err := StartCPUProfile(opts.CPUProfile)
	if err != nil {
		return nil, err
	}
	env.Start = time.Now()
	env.Result = &Result{SchemaVersion: SchemaVersion, Scenario: name, Command: opts.Command, Machine: LocalMachine(),
		Start: env.Start.UTC(), Server: Server{Host: cfg.Host, StartedByBench: env.Server != nil, PID: opts.ServerPID},
		Params: map[string]string{}}
	pid := func() int { return opts.ServerPID }
	if env.Server != nil {
		pid = env.Server.PID
		env.Result.Server.PID = env.Server.PID()
	}
	env.Latency = NewRecorder(env.Start)
	env.Monitor = StartMonitor(ctx, MonitorConfig{Metrics: env.Metrics, PID: pid, Interval: opts.SampleInterval, Start: env.Start})
	env.Progress = NewProgress(opts.Progress, name)

	runErr := fn(ctx, env)
	stopProfile()
	env.Progress.Stop()
	totals := env.Monitor.Stop(context.WithoutCancel(ctx))
	addServerTotals(env, totals)
	if err := finish(env, opts.Out, runErr); err != nil {
		return env.Result, err
	}
	return env.Result, runErr
}

func finish(env *Env, out string, runErr error) error {
	r := env.Result
	r.Duration = Duration(time.Since(env.Start))
	if runErr != nil {
		r.Notes = append(r.Notes, "the run failed: "+runErr.Error())
		r.AddVerdict("run completed", "no error", runErr.Error(), false)
	}
	if !env.OwnLatencyTable {
		r.Latencies = append(env.Latency.Stats(env.SLOs), r.Latencies...)
	}
	r.Series = append(r.Series, env.Monitor.Series()...)
	r.Series = append(r.Series, env.Latency.PercentileSeries(latencyWindow(r.Duration.D()), "call latency")...)
	if n := env.Monitor.ScrapeErrors(); n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d /metrics scrapes failed (server down or overloaded)", n))
	}
	plots := append([]PlotSpec{
		{File: "cpu.svg", Title: "Server CPU", YLabel: "cores", Series: []string{"server cpu"}},
		{File: "memory.svg", Title: "Server RSS", YLabel: "MiB", Series: []string{"server rss"}},
		{File: "requests.svg", Title: "Server request rate", YLabel: "requests/s", Series: []string{"server writes", "server reads"}},
		{File: "latency.svg", Title: "Bench call latency over time", YLabel: "ms", Series: []string{"call latency p50", "call latency p99"}},
	}, env.Plots...)
	return WriteReport(out, r, plots)
}

// addServerTotals adds the run's server-wide figures: CPU used, peak
// RSS, and every apiserver_request_total series' increase.
func addServerTotals(env *Env, t Totals) {
	r := env.Result
	secs := time.Since(env.Start).Seconds()
	r.AddFigure("server_cpu_seconds", "server CPU time over the whole run", t.CPUSeconds, "s")
	r.AddFigure("server_cpu_cores_mean", "server CPU over the whole run (mean)", t.CPUSeconds/secs, "cores")
	var peak float64
	for _, s := range env.Monitor.Series() {
		if s.Name == "server rss" {
			for _, p := range s.Points {
				peak = max(peak, p.V)
			}
		}
	}
	if peak > 0 {
		r.AddFigure("server_rss_max", "server RSS (max over the run)", peak, "MiB")
	}
	for k, v := range t.Requests {
		if v > 0 {
			r.ServerRequests = append(r.ServerRequests, RequestCount{Verb: k.Verb, Resource: k.Resource, Subresource: k.Subresource,
				Scope: k.Scope, Code: k.Code, Count: v})
		}
	}
	slices.SortFunc(r.ServerRequests, func(a, b RequestCount) int {
		if a.Count != b.Count {
			return cmp.Compare(b.Count, a.Count)
		}
		return cmp.Compare(a.Verb+a.Resource+a.Subresource+a.Scope+a.Code, b.Verb+b.Resource+b.Subresource+b.Scope+b.Code)
	})
}

// latencyWindow picks windows giving about 60 points over the run, at
// least a second each.
func latencyWindow(d time.Duration) time.Duration {
	return max(time.Second, (d / 60).Round(time.Second))
}

func startServer(ctx context.Context, opts Options) (*ServerProcess, func(), error) {
	if opts.Binary == "" {
		return nil, nil, errors.New("no --kubeconfig and no myriad binary to start a server with")
	}
	dir := opts.DataDir
	remove := false
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "myriad-bench-"); err != nil {
			return nil, nil, fmt.Errorf("data dir: %w", err)
		}
		remove = true
	}
	abs, err := filepath.Abs(opts.Out)
	if err != nil {
		return nil, nil, err
	}
	srv := &ServerProcess{Binary: opts.Binary, DataDir: dir, Args: opts.ServerArgs, LogPath: filepath.Join(abs, "server.log")}
	cleanup := func() {
		if err := srv.Stop(); err != nil {
			opts.Logger.Warn("stopping the server", "err", err)
		}
		if remove {
			_ = os.RemoveAll(dir)
		}
	}
	if err := srv.Start(ctx); err != nil {
		cleanup()
		return nil, nil, err
	}
	return srv, cleanup, nil
}

// CommandLine quotes args for the report.
func CommandLine(args []string) string {
	var parts []string
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// StartCPUProfile profiles this process into path until the returned stop
// is called; an empty path profiles nothing.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
		}
	}, nil
}
