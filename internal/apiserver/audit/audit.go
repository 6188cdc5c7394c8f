package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	kaudit "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/plugin/pkg/audit/buffered"
	auditlog "k8s.io/apiserver/plugin/pkg/audit/log"
	auditwebhook "k8s.io/apiserver/plugin/pkg/audit/webhook"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Modes of a backend, as upstream's --audit-log-mode.
const (
	// ModeBatch queues events and writes them from a goroutine; a full
	// queue drops events.
	ModeBatch = "batch"
	// ModeBlocking writes each event on the request's goroutine; write
	// errors are ignored.
	ModeBlocking = "blocking"
	// ModeBlockingStrict is ModeBlocking, but a request whose
	// RequestReceived event cannot be written fails.
	ModeBlockingStrict = "blocking-strict"
)

// Config configures auditing. Auditing is on when PolicyFile and at least
// one of LogPath and WebhookConfigFile are set, as upstream.
type Config struct {
	// PolicyFile is an audit.k8s.io/v1 Policy (--audit-policy-file).
	PolicyFile string

	// LogPath is the log file (--audit-log-path); "-" is standard output.
	LogPath string
	// LogMaxAge is the days to keep rotated files (--audit-log-maxage);
	// 0 keeps them regardless of age.
	LogMaxAge int
	// LogMaxBackups is the number of rotated files kept
	// (--audit-log-maxbackup); 0 keeps all.
	LogMaxBackups int
	// LogMaxSize is the size in megabytes at which the file rotates
	// (--audit-log-maxsize); 0 never rotates.
	LogMaxSize int
	// LogMode is ModeBatch (default), ModeBlocking or ModeBlockingStrict.
	LogMode string
	// LogBatchMaxWait bounds how long a queued event waits for a batch
	// to fill. Default 100ms.
	LogBatchMaxWait time.Duration

	// WebhookConfigFile is a kubeconfig naming the webhook that receives
	// EventLists (--audit-webhook-config-file). It is always batched,
	// with upstream's defaults (400 events, 30s, 10 batches/s).
	WebhookConfigFile string
}

// Auditor holds the policy and the running backends.
type Auditor struct {
	policy  kaudit.PolicyRuleEvaluator
	backend kaudit.Backend
	strict  bool
	// protobuf decodes protobuf bodies of built-in types, to log them as
	// JSON.
	protobuf runtime.Decoder

	stop      chan struct{}
	closeOnce sync.Once
	closers   []io.Closer
}

// New loads the policy, opens the backends and starts them; Close stops
// them after writing what is queued. It returns nil (auditing off) when
// cfg asks for no auditing.
func New(cfg Config) (*Auditor, error) {
	if cfg.PolicyFile == "" || (cfg.LogPath == "" && cfg.WebhookConfigFile == "") {
		if cfg.PolicyFile == "" && (cfg.LogPath != "" || cfg.WebhookConfigFile != "") {
			return nil, errors.New("audit: a backend is configured without --audit-policy-file")
		}
		return nil, nil
	}
	p, err := policy.LoadPolicyFromFile(cfg.PolicyFile)
	if err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	a := &Auditor{policy: policy.NewPolicyRuleEvaluator(p), stop: make(chan struct{}),
		protobuf: clientgoscheme.Codecs.UniversalDeserializer()}

	var backends []kaudit.Backend
	if cfg.LogPath != "" {
		b, err := a.logBackend(cfg)
		if err != nil {
			a.closeFiles()
			return nil, err
		}
		backends = append(backends, b)
	}
	if cfg.WebhookConfigFile != "" {
		b, err := auditwebhook.NewBackend(cfg.WebhookConfigFile, auditv1.SchemeGroupVersion, wait.Backoff{
			Duration: auditwebhook.DefaultInitialBackoffDelay, Factor: 1.5, Jitter: 0.2, Steps: 5,
		}, nil)
		if err != nil {
			a.closeFiles()
			return nil, fmt.Errorf("audit webhook: %w", err)
		}
		backends = append(backends, buffered.NewBackend(b, buffered.BatchConfig{
			BufferSize: 10000, MaxBatchSize: 400, MaxBatchWait: 30 * time.Second,
			ThrottleEnable: true, ThrottleQPS: 10, ThrottleBurst: 15,
		}))
	}
	a.backend = kaudit.Union(backends...)
	if err := a.backend.Run(a.stop); err != nil {
		a.closeFiles()
		return nil, fmt.Errorf("audit: starting backends: %w", err)
	}
	return a, nil
}

func (a *Auditor) logBackend(cfg Config) (kaudit.Backend, error) {
	var out io.Writer = os.Stdout
	if cfg.LogPath != "-" {
		if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o700); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		f, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if cfg.LogMaxSize == 0 {
			out = f
			a.closers = append(a.closers, f)
		} else {
			f.Close()
			lj := &lumberjack.Logger{Filename: cfg.LogPath, MaxAge: cfg.LogMaxAge, MaxBackups: cfg.LogMaxBackups, MaxSize: cfg.LogMaxSize}
			out = lj
			a.closers = append(a.closers, lj)
		}
	}
	// Upstream's log backend writes each event with its own write call;
	// a buffer flushed once per batch turns a batch into one write.
	fb := &flushingBackend{w: bufio.NewWriterSize(out, 64<<10)}
	fb.Backend = auditlog.NewBackend(fb.w, auditlog.FormatJson, auditv1.SchemeGroupVersion)
	var b kaudit.Backend = fb
	switch cfg.LogMode {
	case "", ModeBatch:
		wait := cfg.LogBatchMaxWait
		if wait <= 0 {
			wait = 100 * time.Millisecond
		}
		return buffered.NewBackend(b, buffered.BatchConfig{BufferSize: 10000, MaxBatchSize: 1000, MaxBatchWait: wait}), nil
	case ModeBlocking:
		return ignoreErrors{b}, nil
	case ModeBlockingStrict:
		a.strict = true
		return b, nil
	}
	return nil, fmt.Errorf("audit log: unknown mode %q (want %s, %s or %s)", cfg.LogMode, ModeBatch, ModeBlocking, ModeBlockingStrict)
}

// Close flushes queued events and stops the backends. It is idempotent.
func (a *Auditor) Close() error {
	if a == nil {
		return nil
	}
	var err error
	a.closeOnce.Do(func() {
		close(a.stop)
		a.backend.Shutdown()
		err = a.closeFiles()
	})
	return err
}

func (a *Auditor) closeFiles() error {
	var errs []error
	for _, c := range a.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// flushingBackend writes events through a buffer flushed after every
// call. The lock serialises callers: batch mode has one, blocking modes
// one per request.
type flushingBackend struct {
	kaudit.Backend
	mu sync.Mutex
	w  *bufio.Writer
}

func (f *flushingBackend) ProcessEvents(events ...*auditinternal.Event) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := f.Backend.ProcessEvents(events...)
	if err := f.w.Flush(); err != nil {
		kaudit.HandlePluginError(auditlog.PluginName, err, events...)
		return false
	}
	return ok
}

// ignoreErrors is upstream's blocking mode: a failed write does not fail
// the request.
type ignoreErrors struct{ kaudit.Backend }

func (i ignoreErrors) ProcessEvents(events ...*auditinternal.Event) bool {
	i.Backend.ProcessEvents(events...)
	return true
}
